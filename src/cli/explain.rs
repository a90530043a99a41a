//! `leasejournal explain`: the finding catalog.

use std::io::Write;

use clap::Args;

use super::output::{Format, OutputArgs};
use crate::operations::exit::Exit;
use crate::render;
use serde::Serialize;

use crate::operations::verify::{Code, CodeInfo};

/// Explain a finding code, or list the catalog.
///
/// For a code: what it means, why it has its severity, what upstream does
/// with it and what fixes it. Without a code (or with --list): every code.
#[derive(Clone, Debug, Args)]
pub struct ExplainArgs {
    /// The code, as verify prints it (for example torn-tail).
    #[arg(value_name = "CODE", value_parser = CodeParser, hide_possible_values = true)]
    pub code: Option<Code>,

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
struct Catalog {
    schema_version: u32,
    codes: Vec<&'static CodeInfo>,
}

/// Parses a finding code: known codes only, with a did-you-mean for a
/// misspelt one. It names every code to the shell completions (and
/// nowhere else: the arguments hide the list from --help).
#[derive(Clone, Copy, Debug)]
pub struct CodeParser;

impl clap::builder::TypedValueParser for CodeParser {
    type Value = Code;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Code, clap::Error> {
        let text = value.to_string_lossy();
        if let Some(code) = Code::parse(&text) {
            return Ok(code);
        }
        let hint = match Code::suggest(&text) {
            Some(known) => format!("; did you mean {known}?"),
            None => String::new(),
        };
        let arg = arg.map_or("CODE".to_string(), |a| a.to_string());
        let mut cmd = cmd.clone();
        Err(clap::Error::raw(
            clap::error::ErrorKind::ValueValidation,
            format!(
                "invalid value '{text}' for '{arg}': not a finding code{hint} (leasejournal explain lists them all)"
            ),
        )
        .format(&mut cmd))
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            Code::ALL
                .iter()
                .map(|c| clap::builder::PossibleValue::new(c.as_str())),
        ))
    }
}

/// Runs `explain`.
pub fn run(args: &ExplainArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let styles = args.output.styles();
    let Some(code) = args.code else {
        match args.output.format {
            Format::Json => render::json(
                out,
                &Catalog {
                    schema_version: EXPLAIN_SCHEMA_VERSION,
                    codes: Code::ALL.iter().map(|c| c.info()).collect(),
                },
            )?,
            Format::Table => render::catalog(out, Code::ALL, &styles)?,
        }
        return Ok(Exit::Success);
    };
    let info = code.info();
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
