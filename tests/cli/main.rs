//! The integration tests: one binary, one module per area.

mod adversarial;
mod conventions;
mod diff;
mod faults;
mod fidelity;
mod forensics;
mod golden;
mod inspect;
mod jsontestsuite;
mod layout;
mod ledger;
mod ledger_verify;
mod ledger_write;
mod links;
mod man;
mod powerloss;
mod properties;
mod races;
mod regressions;
mod remote;
mod restore;
mod scan;
mod schema;
mod support;
mod verify;
mod write;
