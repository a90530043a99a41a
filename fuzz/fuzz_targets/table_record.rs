//! A fenced lease record's reader (upstream's `_read_record` +
//! `_valid_record`) on arbitrary bytes: never a panic, and what it accepts
//! reads the same once re-encoded as upstream's writer writes it.
#![no_main]

use leasejournal::fuzzing::check_table_record;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| check_table_record(data));
