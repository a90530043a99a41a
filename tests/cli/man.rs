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
    assert!(pages.len() >= 3);
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
    }
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let out = lj().args(["completions", shell]).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert!(out.stderr.is_empty());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains("leasejournal") && text.contains("inspect"),
            "{shell}"
        );
    }
    lj().args(["completions", "tcsh"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("invalid value 'tcsh'"));
}

#[test]
fn help_and_version() {
    lj().arg("--help")
        .assert()
        .success()
        .stdout(predicates::str::contains("inspect"))
        .stderr("");
    lj().arg("--version")
        .assert()
        .success()
        .stdout(predicates::str::contains(env!("CARGO_PKG_VERSION")));
    lj().assert()
        .code(2)
        .stderr(predicates::str::contains("Usage"));
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
