//! Every saved reproducer (fixtures/fuzz/: inputs that once crashed, hung
//! or disagreed with upstream) and every fixture, through the properties
//! the fuzz targets check.

use std::path::PathBuf;
use std::time::Instant;

use crate::support::fixture;

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

#[test]
fn saved_reproducers_pass_every_property() {
    let files = files_under(fixture("fuzz"));
    assert!(!files.is_empty());
    for file in files {
        let started = Instant::now();
        leasejournal::fuzzing::check_all(&std::fs::read(&file).unwrap());
        assert!(
            started.elapsed().as_secs() < 20,
            "{} is slow again",
            file.display()
        );
    }
}

#[test]
fn fixtures_pass_every_property() {
    for dir in ["fidelity", "samples", "verify", "diff"] {
        for file in files_under(fixture(dir)) {
            leasejournal::fuzzing::check_all(&std::fs::read(&file).unwrap());
        }
    }
}

#[test]
fn the_float_tie_lease_is_accepted() {
    let v = crate::support::json_ok(
        crate::support::lj()
            .args(["inspect", "--format=json"])
            .arg(fixture("fuzz/float-repr-tie.jsonl")),
    );
    assert_eq!(v["completed"].as_array().unwrap().len(), 1, "{v}");
}
