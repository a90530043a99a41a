//! leasejournal: inspect, verify, recover, migrate, compact and diff the
//! recovery state of a SymCC MPI fuzzing master.
pub mod json;
pub mod journal;
pub mod snapshot;
