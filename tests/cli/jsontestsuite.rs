//! JSONTestSuite against CPython's verdicts, in both of upstream's parser
//! configurations (journal lines and snapshots).

use leasejournal::engine::json::{Mode, parse, strip_invalid_utf8};

use crate::support::fixture;

#[test]
fn parser_agrees_with_cpython_on_every_jsontestsuite_file() {
    let tsv = std::fs::read_to_string(fixture("jsontestsuite/python-verdicts.tsv")).unwrap();
    let mut checked = 0;
    let mut disagreements = Vec::new();
    for line in tsv.lines() {
        if line.starts_with('#') || line.starts_with("file\t") || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        let (name, journal, snapshot) = (cols[0], cols[1], cols[2]);
        let bytes = std::fs::read(fixture("jsontestsuite/test_parsing").join(name)).unwrap();
        let (text, _) = strip_invalid_utf8(&bytes);
        let text = std::str::from_utf8(&text).unwrap();
        for (mode, want) in [(Mode::Journal, journal), (Mode::Snapshot, snapshot)] {
            let got = if parse(text, mode).is_ok() {
                "accept"
            } else {
                "reject"
            };
            if got != want {
                disagreements.push(format!("{name} {mode:?}: CPython {want}s, we {got}"));
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 318);
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}
