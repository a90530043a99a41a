//! Human output of `verify` and `explain`.

use std::io::{self, Write};

use super::{Column, Styles, count, plural, table};
use crate::operations::explain::Explanation;
use crate::operations::findings::catalog::{Code, CodeInfo, Finding, Severity};
use crate::operations::verify::{TargetReport, Verdict, VerifyReport};

fn severity(s: &Styles, sev: Severity) -> String {
    let name = format!("{:<7}", sev.as_str());
    match sev {
        Severity::Error => s.error(&name),
        Severity::Warning => s.warn(&name),
        Severity::Info => s.dim(&name),
    }
}

fn place(f: &Finding) -> String {
    let mut parts = Vec::new();
    if let Some(line) = f.line {
        parts.push(format!("line {line}"));
    }
    if let Some(offset) = f.offset {
        parts.push(format!("offset {offset}"));
    }
    if let Some(id) = &f.id {
        parts.push(format!("id {}", &id[..id.len().min(12)]));
    }
    parts.join(", ")
}

/// Writes the verify report: findings grouped by file and code, counts,
/// the first examples, and one verdict line.
pub fn verify(out: &mut dyn Write, r: &VerifyReport, s: &Styles) -> io::Result<()> {
    let mut files: Vec<&str> = Vec::new();
    for f in &r.findings {
        if !files.contains(&f.file.as_str()) {
            files.push(&f.file);
        }
    }
    for t in &r.targets {
        if t.counts.is_empty() {
            writeln!(
                out,
                "{} {}  {}",
                s.bold("verify"),
                t.path,
                s.ok("no findings")
            )?;
        }
    }
    for file in files {
        writeln!(out, "{}", s.bold(&super::printable(file)))?;
        let mut codes: Vec<Code> = Vec::new();
        for f in r.findings.iter().filter(|f| f.file == file) {
            if !codes.contains(&f.code) {
                codes.push(f.code);
            }
        }
        codes.sort_by_key(|c| std::cmp::Reverse(c.severity()));
        for code in codes {
            let examples: Vec<&Finding> = r
                .findings
                .iter()
                .filter(|f| f.file == file && f.code == code)
                .collect();
            let sev = examples
                .iter()
                .map(|f| f.severity)
                .max()
                .unwrap_or(Severity::Info);
            let total = r
                .files
                .iter()
                .find(|c| c.file == file)
                .and_then(|c| c.counts.get(&code))
                .copied()
                .unwrap_or(0);
            writeln!(
                out,
                "  {} {}  ×{}",
                severity(s, sev),
                s.bold(code.as_str()),
                count(total)
            )?;
            for f in &examples {
                let at = place(f);
                if at.is_empty() {
                    writeln!(out, "      {}", f.message)?;
                } else {
                    writeln!(out, "      {}: {}", s.dim(&at), f.message)?;
                }
            }
            let shown = examples.len() as u64;
            if total > shown {
                writeln!(
                    out,
                    "      {}",
                    s.dim(&format!("… and {} more", count(total - shown)))
                )?;
            }
            if let Some(fix) = examples.iter().find_map(|f| f.fix.as_deref()) {
                writeln!(out, "      fix: {fix}")?;
            } else if let Some(must) = examples.iter().find_map(|f| f.must_do.as_deref()) {
                writeln!(out, "      must do: {must}")?;
            }
        }
    }
    for ledger in r.targets.iter().filter_map(|t| t.ledger.as_ref()) {
        super::ledger::view(out, ledger, s)?;
    }
    for table in r.targets.iter().flat_map(|t| &t.tables) {
        super::lease_table::view(out, table, s)?;
    }
    for e in &r.errors {
        writeln!(
            out,
            "{} {}: {}",
            s.error("could not check"),
            e.path,
            e.message
        )?;
    }
    if !r.not_listed.is_empty() {
        let hidden: Vec<String> = r
            .not_listed
            .iter()
            .rev()
            .map(|(sev, n)| match sev {
                Severity::Info => format!("{} info", count(*n)),
                Severity::Warning => plural(*n, "warning", "warnings"),
                Severity::Error => plural(*n, "error", "errors"),
            })
            .collect();
        writeln!(
            out,
            "not listed (below --min-severity {}): {}",
            r.settings.min_severity.as_str(),
            hidden.join(", ")
        )?;
    }
    if !r.checked.is_empty() {
        writeln!(
            out,
            "checked {}; {} cannot be checked from files",
            r.checked.join(" "),
            r.not_checkable.join(" and ")
        )?;
    }
    let totals_of = |n: &dyn Fn(Severity) -> u64| {
        format!(
            "{}, {}, {} info",
            plural(n(Severity::Error), "error", "errors"),
            plural(n(Severity::Warning), "warning", "warnings"),
            count(n(Severity::Info))
        )
    };
    // With several paths, the ones that are not a go, one line each, so
    // that the bad one is not lost among the others' findings.
    let checked = r.targets.len() + r.errors.len();
    if checked > 1 {
        let not_go: Vec<&TargetReport> = r
            .targets
            .iter()
            .filter(|t| t.verdict != Verdict::Go)
            .collect();
        for t in &not_go {
            let n = |sev: Severity| {
                t.counts
                    .iter()
                    .filter(|(code, _)| code.severity() == sev)
                    .map(|(_, n)| n)
                    .sum()
            };
            writeln!(
                out,
                "  {}  {}  ({})",
                super::printable(&t.path),
                verdict_word(s, t.verdict),
                totals_of(&n)
            )?;
        }
        for e in &r.errors {
            writeln!(
                out,
                "  {}  {}  (could not be checked)",
                super::printable(&e.path),
                verdict_word(s, Verdict::Incomplete)
            )?;
        }
        writeln!(
            out,
            "{} of {} paths not a go",
            count((not_go.len() + r.errors.len()) as u64),
            count(checked as u64)
        )?;
    }
    let n = |sev: Severity| r.severities.get(&sev).copied().unwrap_or(0);
    let totals = totals_of(&n);
    let mut busy: Vec<String> = Vec::new();
    for t in &r.targets {
        if let Some(lock) = &t.master_lock {
            let pids: Vec<String> = t.master_pids.iter().map(|p| p.to_string()).collect();
            let held = if pids.is_empty() {
                format!("a master that /proc/locks does not show holds {lock}")
            } else {
                format!("pid {} holds {lock}", pids.join(", "))
            };
            if !busy.contains(&held) {
                busy.push(held);
            }
        }
    }
    let line = match r.verdict {
        Verdict::Go => s.ok(&format!("verdict: go, safe to resume ({totals})")),
        Verdict::NoGo if r.severities.contains_key(&Severity::Error) => s.error(&format!(
            "verdict: no-go, resuming now loses work or state ({totals})"
        )),
        Verdict::NoGo => s.error(&format!(
            "verdict: no-go, warnings refused by --strict ({totals})"
        )),
        Verdict::Incomplete if r.errors.is_empty() => s.error(&format!(
            "verdict: incomplete, a master on another host cannot be ruled out ({totals})"
        )),
        Verdict::Incomplete => s.error(&format!(
            "verdict: incomplete, a path could not be checked ({totals})"
        )),
        Verdict::Busy if ours_only(r) => s.error(&format!(
            "verdict: busy, another run of leasejournal is changing these files ({}); check again once it ends ({totals})",
            busy.join("; ")
        )),
        Verdict::Busy => s.error(&format!(
            "verdict: busy, a master is running ({}); do not resume another, and change nothing until it stops ({totals})",
            busy.join("; ")
        )),
    };
    writeln!(out, "{line}")?;
    if !r.next.is_empty() {
        writeln!(out, "next:")?;
        for command in &r.next {
            writeln!(out, "  {command}")?;
        }
        if r.must_do.is_empty() {
            writeln!(out, "then run verify again")?;
        } else {
            writeln!(
                out,
                "then run verify again; these commands do not fix what follows"
            )?;
        }
    }
    if !r.must_do.is_empty() {
        writeln!(
            out,
            "must do first; no command fixes these, and the verdict stays as it is until they are done:"
        )?;
        for m in &r.must_do {
            writeln!(
                out,
                "  {} ×{} ({} until then): {}",
                m.code.as_str(),
                count(m.count),
                m.verdict_until_done.as_str(),
                m.must_do
            )?;
        }
    }
    Ok(())
}

/// Whether every lock found held is held by runs of this tool only.
fn ours_only(r: &VerifyReport) -> bool {
    let held: Vec<&TargetReport> = r
        .targets
        .iter()
        .filter(|t| t.master_lock.is_some())
        .collect();
    !held.is_empty()
        && held.iter().all(|t| {
            !t.master_holders.is_empty() && t.master_holders.iter().all(|h| h.leasejournal)
        })
}

/// A verdict's word, coloured as its line is.
fn verdict_word(s: &Styles, verdict: Verdict) -> String {
    match verdict {
        Verdict::Go => s.ok("go"),
        Verdict::NoGo => s.error("no-go"),
        Verdict::Incomplete => s.error("incomplete"),
        Verdict::Busy => s.error("busy"),
    }
}

/// Writes what `explain` shows: one code's entry, or the catalog as a
/// table.
pub fn explain(out: &mut dyn Write, e: &Explanation, s: &Styles) -> io::Result<()> {
    match e {
        Explanation::Code(entry) => code(out, entry.info, s),
        Explanation::Catalog(all) => catalog(out, &all.codes, s),
    }
}

/// Writes catalog entries as a table.
pub fn catalog(out: &mut dyn Write, codes: &[&CodeInfo], s: &Styles) -> io::Result<()> {
    let mut t = table(
        &[
            Column::whole("code"),
            Column::whole("severity"),
            Column::spare("scope", 1),
            Column::shorten("meaning"),
        ],
        s,
    );
    for c in codes {
        t.add_row(vec![
            c.code.as_str(),
            c.severity.as_str(),
            c.scope.as_str(),
            c.meaning,
        ]);
    }
    writeln!(out, "{t}")
}

/// Writes one catalog entry.
fn code(out: &mut dyn Write, c: &CodeInfo, s: &Styles) -> io::Result<()> {
    writeln!(
        out,
        "{} ({}, {})",
        s.bold(c.code.as_str()),
        c.severity.as_str(),
        c.scope.as_str()
    )?;
    writeln!(out, "  meaning   {}", c.meaning)?;
    writeln!(out, "  matters   {}", c.why)?;
    writeln!(out, "  upstream  {}", c.upstream)?;
    writeln!(out, "  fix       {}", c.fix)
}
