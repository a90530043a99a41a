//! The findings of a verification: each one located and kept as an
//! example while there are fewer than `--max-examples` of its code, and
//! every one counted exactly, per code, severity and file.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::Settings;
use super::catalog::{Code, Remedy, Severity};
use crate::engine::journal::WorkId;

/// One problem, located.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// The stable code.
    pub code: Code,
    /// Its severity.
    pub severity: Severity,
    /// The file (or directory) it is in.
    pub file: String,
    /// 1-based line, where there is one.
    pub line: Option<u64>,
    /// Byte offset, where there is one.
    pub offset: Option<u64>,
    /// Work or task id, where there is one.
    pub id: Option<String>,
    /// One line saying what is wrong.
    pub message: String,
    /// The command line that fixes it (see [`Remedy`]), or `None`.
    pub fix: Option<String>,
    /// What fixes it (the catalog's remedy, unless this finding is one the
    /// remedy cannot fix).
    #[serde(skip)]
    pub remedy: Option<Remedy>,
}

/// Findings of one run: exact counts, bounded examples.
#[derive(Clone, Debug, Default)]
pub struct Findings {
    /// Kept findings, in discovery order.
    pub examples: Vec<Finding>,
    /// Findings per code (exact).
    pub counts: BTreeMap<Code, u64>,
    /// Findings per severity (exact).
    pub by_severity: BTreeMap<Severity, u64>,
    /// Findings per file and code (exact), files in discovery order.
    pub by_file: Vec<(String, BTreeMap<Code, u64>)>,
    /// The remedies the findings call for.
    pub remedies: BTreeSet<Remedy>,
    /// The codes found since [`Findings::take_codes`] last ran, when they
    /// are being noted ([`Findings::noting_codes`]).
    noted: Option<Vec<Code>>,
}

/// The id a finding is about, formatted only if the finding is kept.
#[derive(Clone, Copy, Debug)]
pub enum Id<'a> {
    /// A work id.
    Work(WorkId),
    /// A task id (already text).
    Text(&'a str),
}

/// A place in a file.
#[derive(Clone, Copy, Debug, Default)]
pub struct At<'a> {
    /// 1-based line.
    pub line: Option<u64>,
    /// Byte offset.
    pub offset: Option<u64>,
    /// Id.
    pub id: Option<Id<'a>>,
}

impl Findings {
    /// Records a finding with its severity and remedy; the message is
    /// built only if it is kept.
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        settings: &Settings,
        code: Code,
        severity: Severity,
        remedy: Option<Remedy>,
        file: &str,
        at: At<'_>,
        message: impl FnOnce() -> String,
    ) {
        if settings.ignore.contains(&code) {
            return;
        }
        if let Some(noted) = &mut self.noted {
            noted.push(code);
        }
        let count = self.counts.entry(code).or_default();
        *count += 1;
        *self.by_severity.entry(severity).or_default() += 1;
        if let Some(r) = remedy {
            self.remedies.insert(r);
        }
        match self.by_file.last_mut() {
            Some((f, counts)) if f == file => *counts.entry(code).or_default() += 1,
            _ => match self.by_file.iter_mut().find(|(f, _)| f == file) {
                Some((_, counts)) => *counts.entry(code).or_default() += 1,
                None => self
                    .by_file
                    .push((file.to_string(), BTreeMap::from([(code, 1)]))),
            },
        }
        if settings.max_examples == 0 || *count <= settings.max_examples as u64 {
            self.examples.push(Finding {
                code,
                severity,
                file: file.to_string(),
                line: at.line,
                offset: at.offset,
                id: at.id.map(|id| match id {
                    Id::Work(w) => w.to_hex(),
                    Id::Text(t) => t.to_string(),
                }),
                message: message(),
                fix: None,
                remedy,
            });
        }
    }

    /// Records a finding at the catalog's severity.
    pub fn add(
        &mut self,
        settings: &Settings,
        code: Code,
        file: &str,
        at: At<'_>,
        message: impl FnOnce() -> String,
    ) {
        self.push(
            settings,
            code,
            code.severity(),
            code.remedy(),
            file,
            at,
            message,
        );
    }

    /// Findings that also note each code found, for
    /// [`Findings::take_codes`].
    pub fn noting_codes() -> Self {
        Findings {
            noted: Some(Vec::new()),
            ..Findings::default()
        }
    }

    /// The codes found since the last call (none unless made with
    /// [`Findings::noting_codes`]), in the order found.
    pub fn take_codes(&mut self) -> Vec<Code> {
        self.noted.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The worst severity found.
    pub fn worst(&self) -> Option<Severity> {
        self.by_severity.keys().next_back().copied()
    }

    /// Adds another set of findings.
    pub fn extend(&mut self, other: Findings) {
        self.examples.extend(other.examples);
        for (code, n) in other.counts {
            *self.counts.entry(code).or_default() += n;
        }
        for (sev, n) in other.by_severity {
            *self.by_severity.entry(sev).or_default() += n;
        }
        for (file, counts) in other.by_file {
            match self.by_file.iter_mut().find(|(f, _)| *f == file) {
                Some((_, mine)) => {
                    for (code, n) in counts {
                        *mine.entry(code).or_default() += n;
                    }
                }
                None => self.by_file.push((file, counts)),
            }
        }
        self.remedies.extend(other.remedies);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_are_bounded_but_counts_exact() {
        let settings = Settings {
            now: 0.0,
            ttl: 0.0,
            skew: 300.0,
            max_examples: 2,
            ignore: vec![Code::BlankLine],
            strict: false,
        };
        let mut f = Findings::default();
        for _ in 0..5 {
            f.add(&settings, Code::CorruptLine, "x", At::default(), || {
                "m".into()
            });
            f.add(&settings, Code::BlankLine, "x", At::default(), || {
                "m".into()
            });
        }
        assert_eq!(f.examples.len(), 2);
        assert_eq!(f.counts.get(&Code::CorruptLine), Some(&5));
        assert_eq!(f.counts.get(&Code::BlankLine), None);
        assert_eq!(f.worst(), Some(Severity::Warning));
    }
}
