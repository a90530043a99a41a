//! The snapshot reader and upstream's restore on arbitrary bytes: never a
//! panic, and restoring what restore wrote changes nothing.
#![no_main]

use leasejournal::fuzzing::check_snapshot;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| check_snapshot(data));
