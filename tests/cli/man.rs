//! Man pages and the clap definitions they come from.

use std::path::Path;

use clap::CommandFactory;
use leasejournal::cli::{Cli, man};

use crate::support::lj;

#[test]
fn clap_definitions_are_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn man_pages_match_the_code() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let bless = std::env::var_os("LEASEJOURNAL_BLESS").is_some();
    let pages = man::pages();
    let names: Vec<String> = pages.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(
        names,
        [
            "leasejournal.1",
            "leasejournal-inspect.1",
            "leasejournal-verify.1",
            "leasejournal-explain.1",
            "leasejournal-repair.1",
            "leasejournal-recover.1",
            "leasejournal-migrate.1",
            "leasejournal-compact.1",
            "leasejournal-restore.1",
            "leasejournal-rollback.1",
            "leasejournal-diff.1",
            "leasejournal-completions.1",
        ]
    );
    for (name, content) in pages {
        let path = dir.join(&name);
        if bless {
            std::fs::write(&path, &content).unwrap();
            continue;
        }
        let checked_in = std::fs::read(&path).unwrap_or_default();
        assert!(
            checked_in == content,
            "man/{name} differs from the code; run LEASEJOURNAL_BLESS=1 cargo test --test cli man_pages"
        );
        let text = String::from_utf8(content).unwrap();
        assert!(text.contains(".SH \"EXIT STATUS\""), "{name}");
        assert!(text.contains(".SH EXAMPLES"), "{name}");
        // Every other page is named, and no page that does not exist.
        let see_also = &text[text.find(".SH \"SEE ALSO\"").expect("SEE ALSO")..];
        for other in names.iter().filter(|n| **n != name) {
            let stem = other.trim_end_matches(".1").replace('-', "\\-");
            assert!(
                see_also.contains(&format!("\\fB{stem}\\fR(1)")),
                "{name} names {other}"
            );
        }
        assert!(!text.contains("help(1)"), "{name}: there is no help page");
        // The commands that take many paths say so.
        let synopsis = text
            .split(".SH SYNOPSIS\n")
            .nth(1)
            .unwrap()
            .lines()
            .next()
            .unwrap();
        let many = ["inspect", "verify", "repair", "recover"]
            .iter()
            .any(|c| name == format!("leasejournal-{c}.1"));
        assert_eq!(
            synopsis.contains("<\\fIPATH\\fR>..."),
            many,
            "{name}: {synopsis}"
        );
    }
}

/// Every page renders with no warning from `groff -ww -z -man` (all
/// warnings on, output discarded): no character groff cannot read, no line
/// it cannot break or adjust. `.ci/run` installs groff where it is missing.
#[test]
fn man_pages_render_without_warnings() {
    let probe = std::process::Command::new("groff")
        .arg("--version")
        .output();
    if probe.is_err() {
        eprintln!("groff is not installed: man_pages_render_without_warnings skipped");
        return;
    }
    let pages = man::pages();
    assert_eq!(pages.len(), 12);
    for (name, content) in pages {
        assert!(content.is_ascii(), "{name} is ASCII, escapes for the rest");
        let mut child = std::process::Command::new("groff")
            .args(["-ww", "-z", "-man"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(&content).unwrap();
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "groff failed on {name}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "",
            "groff's warnings on {name}"
        );
    }
}

/// The README's glossary has a row for each F314 invariant; the ones
/// verify checks name real finding codes, the others say files cannot
/// show them.
#[test]
fn readme_glossary_names_every_invariant_and_real_codes() {
    use leasejournal::operations::findings::catalog::{CHECKED, Code, NOT_CHECKABLE};
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    for n in 1..=7 {
        let invariant = format!("L{n}");
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| {invariant} | ")))
            .unwrap_or_else(|| panic!("README has no glossary row for {invariant}"));
        let checked_by = row.trim_end_matches(" |").rsplit(" | ").next().unwrap();
        let codes: Vec<&str> = checked_by
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|w| *w != "migrate")
            .collect();
        if CHECKED.contains(&invariant.as_str()) {
            assert!(!codes.is_empty(), "{row}");
            for code in codes {
                assert!(
                    Code::parse(code).is_some(),
                    "{invariant}: {code} is not a finding code"
                );
            }
        } else {
            assert!(NOT_CHECKABLE.contains(&invariant.as_str()));
            assert_eq!(checked_by, "cannot be seen in files", "{row}");
        }
    }
}

/// Each script is the one clap_complete makes of the clap definitions
/// (bash_completion_offers_codes_kinds_and_formats runs one).
#[test]
fn completions_for_each_shell() {
    for shell in [
        clap_complete::Shell::Bash,
        clap_complete::Shell::Zsh,
        clap_complete::Shell::Fish,
    ] {
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), "leasejournal", &mut script);
        lj().args(["completions", &shell.to_string()])
            .assert()
            .code(0)
            .stderr("")
            .stdout(String::from_utf8(script).unwrap());
    }
    lj().args(["completions", "tcsh"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(
            "error: invalid value 'tcsh' for '<SHELL>'\n  [possible values: bash, elvish, fish, powershell, zsh]\n\n  \
             tip: a similar value exists: 'zsh'\n\nFor more information, try '--help'.\n",
        );
}

#[test]
fn help_and_version() {
    let help = lj().arg("-h").output().unwrap();
    assert_eq!(help.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&help.stderr), "");
    let help = String::from_utf8(help.stdout).unwrap();
    crate::golden::assert_golden("test.man.help", &help);
    let long = lj().arg("--help").output().unwrap();
    assert_eq!(long.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&long.stderr), "");
    crate::golden::assert_golden("test.man.long-help", &String::from_utf8_lossy(&long.stdout));
    lj().arg("--version")
        .assert()
        .success()
        .stdout(concat!("leasejournal ", env!("CARGO_PKG_VERSION"), "\n"))
        .stderr("");
    // No subcommand: the same help, on stderr, and exit 2.
    lj().assert().code(2).stdout("").stderr(help);
}

#[test]
fn readme_example_is_real_output() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let out = lj()
        .args(["inspect", "--now", "1754550100", "--color", "never"])
        .arg("fixtures/samples")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        readme.contains(&format!("```text\n{text}```")),
        "README's example differs from `leasejournal inspect fixtures/samples --now 1754550100`:\n{text}"
    );
}

/// The README's diff of two ledgers is real output: the re-shard of
/// fixtures/diff/ledger, compared at 8 shards.
#[test]
fn readme_ledger_diff_is_real_output() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let args = [
        "diff",
        "--state-shards",
        "8",
        "--max-examples",
        "2",
        "fixtures/diff/ledger/a/.state_shards",
        "fixtures/diff/ledger/b/.state_shards",
    ];
    let out = lj()
        .args(args)
        .args(["--color", "never"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let block = format!("```text\n$ leasejournal {}\n{text}```", args.join(" "));
    assert!(
        readme.contains(&block),
        "README's ledger diff differs from the real output:\n{block}"
    );
}

/// The README's runbook ("After a reboot or crash") shows real output:
/// each block is what the command prints on a copy of
/// fixtures/runbook, run from there, at --now 1754550100.
#[test]
fn readme_runbook_is_real_output() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/runbook");
    let dir = tempfile::tempdir().unwrap();
    let copy = |from: &Path, to: &Path| {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    };
    copy(&src.join("run1"), &dir.path().join("run1"));
    copy(&src.join("afl/queue"), &dir.path().join("afl/queue"));
    let bless = std::env::var_os("LEASEJOURNAL_BLESS").is_some();
    let blocks = std::cell::RefCell::new(Vec::new());
    let run = |command: &str, code: i32| -> String {
        let mut cmd = lj();
        cmd.arg(command);
        if command != "repair" {
            cmd.args(["--now", "1754550100"]);
        }
        let out = cmd
            .args(["--color", "never", "run1"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{command}");
        let block = format!(
            "```text\n$ leasejournal {command} run1\n{}```",
            String::from_utf8(out.stdout).unwrap()
        );
        blocks.borrow_mut().push(block.clone());
        assert!(
            bless || readme.contains(&block),
            "README's runbook differs from the real output (LEASEJOURNAL_BLESS=1 cargo test --test cli readme_runbook rewrites it):\n{block}"
        );
        block
    };
    run("verify", 1);
    run("recover", 0);
    run("repair", 0);
    let applied = lj()
        .args(["repair", "--apply", "run1"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(applied.status.code(), Some(0));
    // The backup's name carries the time of the run; the README shows it
    // with the one below.
    let run1 = dir.path().join("run1");
    for entry in std::fs::read_dir(&run1).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(stem) = name
            .split(".bak.")
            .next()
            .filter(|_| name.contains(".bak."))
        {
            std::fs::rename(
                run1.join(&name),
                run1.join(format!("{stem}.bak.20250807T070140Z")),
            )
            .unwrap();
        }
    }
    run("verify", 0);
    if bless {
        // Each block replaces the runbook's next one, in order.
        let mut text = readme.clone();
        let mut from = text.find("## After a reboot or crash").unwrap();
        for block in blocks.borrow().iter() {
            let header = &block[..block.find(" run1\n").unwrap() + 6];
            let start = from + text[from..].find(header).unwrap();
            let end = start + header.len() + text[start + header.len()..].find("```").unwrap() + 3;
            text.replace_range(start..end, block);
            from = start + block.len();
        }
        std::fs::write(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"),
            text,
        )
        .unwrap();
    }
}

/// Each subcommand's --help ends with the examples its man page lists
/// under EXAMPLES: one list serves both (and man_pages_match_the_code
/// keeps the pages in step with it).
#[test]
fn help_ends_with_the_man_pages_examples() {
    let cmd = Cli::command();
    let mut names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    names.push("leasejournal".to_string());
    for name in names {
        let mut run = lj();
        if name != "leasejournal" {
            run.arg(&name);
        }
        let out = run.arg("--help").output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}");
        let help = String::from_utf8(out.stdout).unwrap();
        let examples = &help[help.rfind("Examples:\n").expect("an Examples block")..];
        let commands: Vec<&str> = examples
            .lines()
            .filter(|l| l.starts_with("  leasejournal"))
            .map(str::trim)
            .collect();
        let listed: Vec<&str> = man::examples(&name).iter().map(|(c, _)| *c).collect();
        assert_eq!(commands, listed, "{name}");
        assert!((2..=3).contains(&commands.len()), "{name}: {commands:?}");
        let page_name = if name == "leasejournal" {
            "leasejournal.1".to_string()
        } else {
            format!("leasejournal-{name}.1")
        };
        let page = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("man")
                .join(page_name),
        )
        .unwrap();
        assert!(page.contains(".SH EXAMPLES"), "{name}");
    }
}

/// The bash completion offers the finding codes and the values of --kind
/// and --format: sourced in bash, its function answers as it would at a
/// prompt.
#[test]
fn bash_completion_offers_codes_kinds_and_formats() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("leasejournal.bash");
    let out = lj().args(["completions", "bash"]).output().unwrap();
    std::fs::write(&script, out.stdout).unwrap();
    let complete = |words: &[&str]| -> Vec<String> {
        let line = words.join(" ");
        let program = format!(
            "source {}; COMP_WORDS=({line}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; _leasejournal leasejournal '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            words.len() - 1,
            words[words.len() - 1],
            words[words.len() - 2],
        );
        let out = std::process::Command::new("bash")
            .args(["--norc", "-c", &program])
            .output()
            .unwrap();
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .filter(|l| !l.is_empty())
            .collect()
    };
    assert_eq!(
        complete(&["leasejournal", "explain", "torn"]),
        ["torn-tail"]
    );
    assert_eq!(
        complete(&["leasejournal", "verify", "--ignore", "seed"]),
        ["seed-missing"]
    );
    assert_eq!(
        complete(&["leasejournal", "inspect", "--kind", ""]),
        ["journal", "snapshot"]
    );
    assert_eq!(
        complete(&["leasejournal", "verify", "--format", ""]),
        ["table", "json"]
    );
}
