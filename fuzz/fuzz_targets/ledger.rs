//! The digest ledger's reader on arbitrary bytes: never a panic; the
//! streaming splitter gives the lines a plain reading as upstream's
//! load_recent gives (ASCII with other bytes deleted, universal newlines,
//! strip, 64 lowercase hex digits), whatever the blocks it is fed in; the
//! scan counts and holds what that reading does.
#![no_main]

use leasejournal::fuzzing::check_ledger;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| check_ledger(data));
