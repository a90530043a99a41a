//! `explain` as data: the finding catalog as a report, one code's entry or
//! every code's. The catalog itself is [`catalog`](crate::operations::findings::catalog).

use serde::Serialize;

use crate::operations::findings::catalog::{Code, CodeInfo};
use crate::operations::schema;

/// `explain --format json` for one code.
#[derive(Debug, Serialize)]
pub struct Entry {
    /// Contract version ([`schema::EXPLAIN`]).
    pub schema_version: u32,
    /// The code's catalog entry, its members beside the version.
    #[serde(flatten)]
    pub info: &'static CodeInfo,
}

/// `explain --format json` for the catalog.
#[derive(Debug, Serialize)]
pub struct Catalog {
    /// Contract version ([`schema::EXPLAIN`]).
    pub schema_version: u32,
    /// Every code's entry, in the order the documentation lists them.
    pub codes: Vec<&'static CodeInfo>,
}

/// What `explain` shows: one code, or the whole catalog.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Explanation {
    /// One code.
    Code(Entry),
    /// Every code.
    Catalog(Catalog),
}

/// Explains `code`, or (with none) lists the catalog.
pub fn explain(code: Option<Code>) -> Explanation {
    match code {
        Some(code) => Explanation::Code(Entry {
            schema_version: schema::EXPLAIN,
            info: code.info(),
        }),
        None => Explanation::Catalog(Catalog {
            schema_version: schema::EXPLAIN,
            codes: Code::ALL.iter().map(|c| c.info()).collect(),
        }),
    }
}
