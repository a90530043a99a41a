//! The canonical encoder: for any value the journal parser accepts, the
//! encoding is canonical, stable under re-encoding, and parses back to the
//! same value.
#![no_main]

use leasejournal::fuzzing::check_canonical;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| check_canonical(data));
