//! The journal reader and replay on arbitrary bytes: never a panic, the
//! fast path agrees with the general one on every line, and the parallel
//! scan agrees with the sequential one at any block size.
#![no_main]

use leasejournal::fuzzing::check_journal;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| check_journal(data));
