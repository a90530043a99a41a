//! `leasejournal explain`: the finding catalog, and the parser of a
//! finding code on the command line (`explain CODE`, `verify --ignore`).

use std::io::Write;

use clap::Args;

use super::output::OutputArgs;
use crate::operations::exit::Exit;
use crate::operations::explain;
use crate::operations::findings::catalog::Code;
use crate::render;

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
        let hint = did_you_mean(&Code::suggest(&text));
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

/// "; did you mean a, b or c?" for the codes a text could mean (at most
/// six named, then how many more), or nothing.
fn did_you_mean(codes: &[Code]) -> String {
    const NAMED: usize = 6;
    let names: Vec<&str> = codes.iter().take(NAMED).map(|c| c.as_str()).collect();
    let list = match (names.split_last(), codes.len() > NAMED) {
        (None, _) => return String::new(),
        (Some((last, [])), _) => (*last).to_string(),
        (Some(_), true) => format!(
            "{} or one of {} more",
            names.join(", "),
            codes.len() - NAMED
        ),
        (Some((last, rest)), false) => format!("{} or {last}", rest.join(", ")),
    };
    format!("; did you mean {list}?")
}

/// Runs `explain`.
pub fn run(args: &ExplainArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let report = explain::explain(args.code);
    args.output.emit(out, &report, |out, styles| {
        render::explain(out, &report, styles)
    })?;
    Ok(Exit::Success)
}
