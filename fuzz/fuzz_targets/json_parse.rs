//! The JSON parser on arbitrary bytes, in both of upstream's modes: never a
//! panic, and whatever it accepts encodes and parses back to itself.
#![no_main]

use leasejournal::fuzzing::check_json;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| check_json(data));
