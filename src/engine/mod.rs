//! The engine: upstream's file formats, byte for byte. Bytes or values in,
//! data out; no files opened, no output policy, no command line. The only
//! `unsafe` of the crate lives here (SIMD id decoding, the prefetch and
//! the huge-page mapping of the ledger's digest table).

pub mod journal;
pub mod json;
pub mod ledger;
pub mod snapshot;
pub mod table;
