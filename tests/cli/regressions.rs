//! Every saved reproducer (fixtures/fuzz/: inputs that once crashed, hung
//! or disagreed with upstream) and every fixture, through the properties
//! the fuzz targets check.

use std::path::PathBuf;

use crate::schema::{self, Inspect};
use crate::support::{fixture, json_ok, lj};

fn files_under(dir: PathBuf) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// How fast the reader gets through glue-search-stress.jsonl (it once
/// took 30 s for 20 MB) is for a benchmark, not a test: this checks what
/// it makes of each reproducer.
#[test]
fn saved_reproducers_pass_every_property() {
    let files = files_under(fixture("fuzz"));
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "float-repr-tie.jsonl",
            "glue-search-stress.jsonl",
            "minus-zero-time.jsonl"
        ]
    );
    for file in files {
        leasejournal::fuzzing::check_all(&std::fs::read(&file).unwrap());
    }
}

/// The stress reproducer's long corrupt lines hide no record: the glued-
/// record search looks at a bounded number of candidates and finds none.
#[test]
fn the_glue_search_stress_lines_are_corrupt_and_hide_nothing() {
    let v: Inspect = json_ok(
        lj().args(["inspect", "--format=json"])
            .arg(fixture("fuzz/glue-search-stress.jsonl")),
    );
    let v = v.journal();
    assert_eq!((v.bytes, v.lines), (125_069, 4));
    assert_eq!(
        v.ignored,
        [("corrupt".to_string(), 3), ("torn-tail".to_string(), 1)].into()
    );
    assert_eq!(
        v.records,
        schema::OpCounts {
            lease: 0,
            done: 0,
            reclaim: 0,
            other: 0
        }
    );
}

#[test]
fn fixtures_pass_every_property() {
    for dir in ["fidelity", "samples", "verify", "diff", "multimaster"] {
        for file in files_under(fixture(dir)) {
            leasejournal::fuzzing::check_all(&std::fs::read(&file).unwrap());
        }
    }
}

#[test]
fn the_float_tie_lease_is_accepted() {
    let v: Inspect = json_ok(
        lj().args(["inspect", "--format=json"])
            .arg(fixture("fuzz/float-repr-tie.jsonl")),
    );
    let v = v.journal();
    assert_eq!((v.active_count, v.completed_count), (0, 1), "{v:?}");
    assert_eq!(v.ignored, Default::default());
}
