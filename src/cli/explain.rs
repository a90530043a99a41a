//! `leasejournal explain`: the finding catalog.

use std::io::Write;

use clap::Args;

use super::exit::Exit;
use super::output::{Format, OutputArgs};
use crate::render;
use serde::Serialize;

use crate::verify::{self, CATALOG, CodeInfo};

/// Explain a finding code, or list the catalog.
///
/// For a code: what it means, why it has its severity, what upstream does
/// with it and what fixes it. Without a code (or with --list): every code.
#[derive(Clone, Debug, Args)]
pub struct ExplainArgs {
    /// The code, as verify prints it (for example torn-tail).
    #[arg(value_name = "CODE")]
    pub code: Option<String>,

    /// Print the whole catalog (the same as giving no code).
    #[arg(long = "list", conflicts_with = "code")]
    pub list: bool,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// The version of `explain --format json`.
const EXPLAIN_SCHEMA_VERSION: u32 = 1;

/// `explain --format json` for one code.
#[derive(Serialize)]
struct Entry<'a> {
    schema_version: u32,
    #[serde(flatten)]
    info: &'a CodeInfo,
}

/// `explain --format json` for the catalog.
#[derive(Serialize)]
struct Catalog<'a> {
    schema_version: u32,
    codes: &'a [CodeInfo],
}

/// The code most like `code`, if one is close enough to be a misspelling.
pub fn did_you_mean(code: &str) -> Option<&'static str> {
    CATALOG
        .iter()
        .map(|c| (strsim::damerau_levenshtein(code, c.code), c.code))
        .filter(|(distance, known)| *distance <= 2.max(known.len() / 4))
        .min()
        .map(|(_, known)| known)
}

/// Runs `explain`.
pub fn run(args: &ExplainArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let styles = args.output.styles();
    let Some(code) = args.code.as_deref() else {
        match args.output.format {
            Format::Json => render::json(
                out,
                &Catalog {
                    schema_version: EXPLAIN_SCHEMA_VERSION,
                    codes: CATALOG,
                },
            )?,
            Format::Table => render::catalog(out, CATALOG, &styles)?,
        }
        return Ok(Exit::Success);
    };
    let Some(info) = verify::lookup(code) else {
        match did_you_mean(code) {
            Some(known) => anyhow::bail!(
                "unknown finding code {code:?}; did you mean {known}? (leasejournal explain lists them all)"
            ),
            None => {
                anyhow::bail!("unknown finding code {code:?}; leasejournal explain lists them all")
            }
        }
    };
    match args.output.format {
        Format::Json => render::json(
            out,
            &Entry {
                schema_version: EXPLAIN_SCHEMA_VERSION,
                info,
            },
        )?,
        Format::Table => render::explain(out, info, &styles)?,
    }
    Ok(Exit::Success)
}
