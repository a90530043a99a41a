//! `leasejournal completions SHELL`: shell completion scripts generated
//! from the same clap definitions as the parser.

use std::io::Write;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::Cli;
use crate::operations::exit::Exit;

/// Print a shell completion script.
///
/// For example, for bash: leasejournal completions bash >
/// ~/.local/share/bash-completion/completions/leasejournal
#[derive(Clone, Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_name = "SHELL", value_enum)]
    pub shell: Shell,
}

/// Runs `completions`.
pub fn run(args: &CompletionsArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let mut cmd = Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "leasejournal", out);
    Ok(Exit::Success)
}
