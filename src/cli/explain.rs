//! `leasejournal explain`: the finding catalog.

use std::io::Write;

use clap::Args;

use super::exit::Exit;
use super::output::{Format, OutputArgs};
use crate::render;
use crate::verify::{self, CATALOG};

/// Explain a finding code, or list the catalog.
///
/// For a code: what it means, why it matters, what upstream does with it
/// and which command fixes it.
#[derive(Clone, Debug, Args)]
pub struct ExplainArgs {
    /// The code, as verify prints it (for example torn-tail).
    #[arg(value_name = "CODE", required_unless_present = "list")]
    pub code: Option<String>,

    /// Print the whole catalog.
    #[arg(long = "list", conflicts_with = "code")]
    pub list: bool,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `explain`.
pub fn run(args: &ExplainArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let styles = args.output.styles();
    if args.list {
        match args.output.format {
            Format::Json => render::json(out, &CATALOG)?,
            Format::Table => render::catalog(out, CATALOG, &styles)?,
        }
        return Ok(Exit::Success);
    }
    let code = args.code.as_deref().unwrap_or_default();
    let Some(info) = verify::lookup(code) else {
        anyhow::bail!("unknown finding code {code:?}; leasejournal explain --list shows them all");
    };
    match args.output.format {
        Format::Json => render::json(out, info)?,
        Format::Table => render::explain(out, info, &styles)?,
    }
    Ok(Exit::Success)
}
