//! Options every reporting subcommand shares: `--format` and `--color`.

use std::io::IsTerminal;

use clap::{Args, ValueEnum};

use crate::render::{ColorChoice, Styles};

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Human-readable text and tables.
    Table,
    /// One JSON document on stdout (schema_version 1).
    Json,
}

/// When to colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    /// Colour when stdout is a terminal and NO_COLOR is not set.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// `--format` and `--color`.
#[derive(Clone, Debug, Args)]
pub struct OutputArgs {
    /// Output format: human tables, or JSON for machines.
    #[arg(long = "format", value_enum, default_value_t = Format::Table)]
    pub format: Format,

    /// When to use colour in table output; NO_COLOR turns "auto" off.
    #[arg(long = "color", value_enum, default_value_t = ColorArg::Auto, value_name = "WHEN")]
    pub color: ColorArg,
}

impl OutputArgs {
    /// The styles for this run, decided once.
    pub fn styles(&self) -> Styles {
        let choice = match self.color {
            ColorArg::Auto => ColorChoice::Auto,
            ColorArg::Always => ColorChoice::Always,
            ColorArg::Never => ColorChoice::Never,
        };
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Styles::new(choice, std::io::stdout().is_terminal(), no_color)
    }
}

/// Parses `--now`: finite Unix seconds.
pub fn parse_now(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of Unix seconds"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!(
            "{text:?} is not a finite, non-negative number of Unix seconds"
        ));
    }
    Ok(value)
}

/// Parses an id prefix: 1 to 64 hex digits.
pub fn parse_id_prefix(text: &str) -> Result<String, String> {
    if text.is_empty() || text.len() > 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{text:?} is not 1 to 64 hexadecimal digits"));
    }
    Ok(text.to_ascii_lowercase())
}

/// The system clock as Unix seconds.
pub fn system_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
