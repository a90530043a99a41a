//! `repair` and `compact` of the digest ledger, against every upstream
//! case of `fixtures/multimaster/` and on ledgers made here: what
//! upstream's reader (ours, which agrees with `load_recent` in
//! `tests/cli/ledger.rs`) loads before and after, what the next `add`
//! does, the write contract (dry run, `--check`, the lock, backups,
//! `--output`), a kill at each step of a re-shard, and the human output
//! compared whole.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use leasejournal::engine::ledger::line::Judged;
use leasejournal::engine::ledger::rewrite::each_line;
use leasejournal::engine::ledger::{self, Digest, TailKind};

use crate::golden::{assert_golden, run};
use crate::ledger::{cases, load};
use crate::schema::{self, FileAction};
use crate::support::{json_ok, json_written, lj, names};

/// Every count: every file is read.
const ALL: u32 = u32::MAX;

/// The regular shard files of a ledger directory, ascending by index.
fn shard_files(shards: &Path) -> Vec<(u32, PathBuf)> {
    let mut files: Vec<(u32, PathBuf)> = fs::read_dir(shards)
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            let index = ledger::index_of(&e.file_name().to_string_lossy())?;
            e.path().is_file().then(|| (index, e.path()))
        })
        .collect();
    files.sort();
    files
}

/// Every valid line of every shard file, as a multiset of digests.
fn valid_lines(shards: &Path) -> BTreeMap<String, u64> {
    let mut lines = BTreeMap::new();
    for (_, path) in shard_files(shards) {
        each_line(File::open(path).unwrap(), &mut |l| {
            if let Judged::Valid(d) = l.judged {
                *lines.entry(d.to_string()).or_default() += 1;
            }
        })
        .unwrap();
    }
    lines
}

/// How a file ends, its valid lines, their distinct digests and its
/// ignored lines, as upstream reads it.
fn file_shape(path: &Path) -> (TailKind, u64, u64, u64) {
    let (mut valid, mut ignored) = (0, 0);
    let mut distinct = BTreeSet::new();
    let tail = each_line(File::open(path).unwrap(), &mut |l| match l.judged {
        Judged::Valid(d) => {
            valid += 1;
            distinct.insert(d);
        }
        Judged::Ignored(_) => ignored += 1,
    })
    .unwrap();
    (tail, valid, distinct.len() as u64, ignored)
}

/// The bytes of every file under `dir`, by name.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path.clone());
                files.insert(path, Vec::new());
            } else {
                files.insert(path.clone(), fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// What upstream's `add` does: appends `digest + "\n"` to `path`, never
/// ending a torn last line first.
fn add(path: &Path, digest: &str) {
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap();
    f.write_all(format!("{digest}\n").as_bytes()).unwrap();
}

/// A digest made from `seed`.
fn digest_of(seed: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(seed.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The digests the seals of a report's files restore, with their files'
/// indices.
fn restored(l: &schema::LedgerChange) -> Vec<(u32, String)> {
    l.files
        .iter()
        .filter_map(|f| f.restored.clone().map(|d| (f.index, d)))
        .collect()
}

#[test]
fn sealing_every_upstream_case_loses_nothing_and_keeps_the_next_add() {
    let mut lost_unsealed = 0;
    let mut sealed_files = 0;
    for (name, copy, expected) in cases() {
        let shards = copy.path().join(ledger::DIR);
        let count = expected.shard_count;
        let (at_count, all) = (load(&shards, count, None), load(&shards, ALL, None));
        // Upstream's next add onto each file as it is: a torn end eats it.
        let unsealed = tempfile::tempdir().unwrap();
        crate::support::copy_dir_to(&shards, unsealed.path());
        for (index, path) in shard_files(unsealed.path()) {
            add(&path, &digest_of(&format!("{name} {index}")));
        }
        let loaded = load(unsealed.path(), ALL, None);
        lost_unsealed += shard_files(unsealed.path())
            .iter()
            .filter(|(i, _)| !loaded.contains(&digest_of(&format!("{name} {i}"))))
            .count();

        let report: schema::Repair = json_written(
            lj().args(["repair", "--apply", "--format=json"])
                .arg(&shards),
        );
        assert_eq!(report.schema_version, 2);
        let l = report.ledger();
        assert!(!l.reshard, "{name}");
        let restored = restored(l);
        sealed_files += l
            .files
            .iter()
            .filter(|f| f.tail != schema::TailSeal::None)
            .count();
        // The same digests, at the case's count and at any, plus those a
        // seal restored from before NULs.
        let plus = |set: &BTreeSet<String>, below: u32| -> BTreeSet<String> {
            let more = restored.iter().filter(|(i, _)| *i < below);
            set.iter()
                .cloned()
                .chain(more.map(|(_, d)| d.clone()))
                .collect()
        };
        assert_eq!(load(&shards, count, None), plus(&at_count, count), "{name}");
        assert_eq!(load(&shards, ALL, None), plus(&all, ALL), "{name}");
        assert_eq!(l.after.distinct, plus(&all, ALL).len() as u64, "{name}");
        // Every file ends clean, and the next add onto each is loaded.
        for (index, path) in shard_files(&shards) {
            assert_eq!(file_shape(&path).0, TailKind::Clean, "{name}: {index}");
            add(&path, &digest_of(&format!("{name} {index}")));
        }
        let loaded = load(&shards, ALL, None);
        for (index, _) in shard_files(&shards) {
            let d = digest_of(&format!("{name} {index}"));
            assert!(loaded.contains(&d), "{name}: the add onto {index} was lost");
        }
        // Nothing more to do.
        lj().args(["repair", "--check"])
            .arg(&shards)
            .assert()
            .code(0);
    }
    assert!(lost_unsealed > 0, "no case shows what the seal prevents");
    assert!(sealed_files >= 6, "only {sealed_files} files sealed");
}

#[test]
fn resharding_every_upstream_case_to_its_count_loads_every_digest() {
    let mut moved = 0;
    for (name, copy, expected) in cases() {
        let shards = copy.path().join(ledger::DIR);
        let n = expected.shard_count;
        let union = load(&shards, ALL, None);
        let lines = valid_lines(&shards);
        let before = snapshot(copy.path());
        let out = lj()
            .args(["repair", "--apply", "--format=json", "--state-shards"])
            .arg(n.to_string())
            .arg(&shards)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() == Some(2) {
            // A directory where digests must go: refused, nothing changed.
            assert!(stderr.contains("is not a regular file"), "{name}: {stderr}");
            assert!(out.stdout.is_empty());
            assert_eq!(snapshot(copy.path()), before, "{name}");
            continue;
        }
        assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
        let report: schema::Repair = schema::parse(&out.stdout);
        let l = report.ledger();
        assert!(l.reshard && l.shard_count == n, "{name}");
        moved += l.files.iter().map(|f| f.moved_out).sum::<u64>();
        // Upstream at n loads every digest any file held, and nothing else.
        let restored = restored(l);
        let mut want = union.clone();
        want.extend(restored.iter().map(|(_, d)| d.clone()));
        assert_eq!(load(&shards, n, None), want, "{name}");
        assert_eq!(l.after.digests, want.len() as u64, "{name}");
        // A valid line is moved, never dropped or added.
        let mut want_lines = lines.clone();
        for (_, d) in &restored {
            *want_lines.entry(d.clone()).or_default() += 1;
        }
        assert_eq!(valid_lines(&shards), want_lines, "{name}");
        // No file past the count stays, and every digest is in its own
        // shard's file.
        assert!(
            shard_files(&shards).iter().all(|(i, _)| *i < n),
            "{name}: {:?}",
            names(&shards)
        );
        let inspected: schema::LedgerInspection = json_ok(
            lj().args(["inspect", "--format=json", "--state-shards"])
                .arg(n.to_string())
                .arg(&shards),
        );
        assert_eq!(
            (inspected.ledger.unread, inspected.ledger.misplaced),
            (0, 0),
            "{name}"
        );
        lj().args(["repair", "--check", "--state-shards"])
            .arg(n.to_string())
            .arg(&shards)
            .assert()
            .code(0);
    }
    assert!(moved > 100, "only {moved} digests moved");
}

#[test]
fn compacting_every_upstream_case_keeps_each_valid_digest_once() {
    let mut dropped = 0;
    for (name, copy, expected) in cases() {
        let shards = copy.path().join(ledger::DIR);
        let count = expected.shard_count;
        let per_file: Vec<(String, BTreeSet<String>)> = shard_files(&shards)
            .iter()
            .map(|(_, p)| {
                let file = p.file_name().unwrap().to_string_lossy().into_owned();
                (file.clone(), load(&shards, ALL, Some(&file)))
            })
            .collect();
        let at_count = load(&shards, count, None);
        let report: schema::Compact = json_written(
            lj().args(["compact", "--apply", "--format=json"])
                .arg(&shards),
        );
        assert_eq!(report.schema_version, 2);
        let l = report.ledger();
        dropped += l
            .files
            .iter()
            .map(|f| f.duplicates_dropped + f.ignored_dropped)
            .sum::<u64>();
        let restored = restored(l);
        for (file, before) in &per_file {
            let index = ledger::index_of(file).unwrap();
            let mut want = before.clone();
            want.extend(
                restored
                    .iter()
                    .filter(|(i, _)| *i == index)
                    .map(|(_, d)| d.clone()),
            );
            assert_eq!(&load(&shards, ALL, Some(file)), &want, "{name}: {file}");
            let (tail, valid, distinct, ignored) = file_shape(&shards.join(file));
            assert_eq!(
                (tail, valid, ignored),
                (TailKind::Clean, distinct, 0),
                "{name}: {file}"
            );
        }
        let mut want = at_count.clone();
        want.extend(
            restored
                .iter()
                .filter(|(i, _)| *i < count)
                .map(|(_, d)| d.clone()),
        );
        assert_eq!(load(&shards, count, None), want, "{name}");
        lj().args(["compact", "--check"])
            .arg(&shards)
            .assert()
            .code(0);
    }
    assert!(dropped > 20, "only {dropped} lines dropped");
}

/// A state directory with a journal and a ledger written at 4 shards:
/// file 0 torn, file 1 a digest without its newline, file 2 a digest a
/// power loss left before NULs, file 3 clean with a duplicate and a blank
/// line.
fn damaged() -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run1");
    let shards = run.join(ledger::DIR);
    fs::create_dir_all(&shards).unwrap();
    fs::write(run.join(".work_leases.jsonl"), b"").unwrap();
    let digests: Vec<String> = (0..16)
        .map(|i| format!("{i:08x}{}", &digest_of(&i.to_string())[8..]))
        .collect();
    let file = |i: u32| -> Vec<&String> {
        digests
            .iter()
            .filter(|d| Digest::parse(d).unwrap().shard(4) == i)
            .collect()
    };
    let lines = |i: u32| -> String { file(i).iter().map(|d| format!("{d}\n")).collect() };
    let f = |i: u32| shards.join(ledger::file_name(i));
    fs::write(f(0), format!("{}{}", lines(0), &digests[4][..20])).unwrap();
    fs::write(f(1), lines(1).trim_end()).unwrap();
    fs::write(f(2), format!("{}\0\0\0\0\0", lines(2).trim_end())).unwrap();
    fs::write(f(3), format!("{}\n{}", lines(3), file(3)[0])).unwrap();
    (dir, digests)
}

#[test]
fn a_dry_run_and_check_change_nothing_and_apply_does_it_once() {
    let (dir, _) = damaged();
    let run1 = dir.path().join("run1");
    let before = snapshot(dir.path());
    for args in [&["repair", "--state-shards=2"][..], &["compact"]] {
        lj().args(args).arg(&run1).assert().code(0).stderr("");
        lj().args(args)
            .arg("--check")
            .arg(&run1)
            .assert()
            .code(1)
            .stderr("");
    }
    assert_eq!(
        snapshot(dir.path()),
        before,
        "nothing written, created or locked"
    );
    // Another master holds the lock: refused, nothing changed.
    let lock = run1.join(".master-queue.lock");
    if let Some(mut master) = crate::support::hold_master_lock(&lock, "a held master lock") {
        let held = snapshot(dir.path());
        for args in [&["repair", "--state-shards=2"][..], &["compact"]] {
            lj().args(args)
                .arg("--apply")
                .arg(run1.join(ledger::DIR))
                .assert()
                .code(3)
                .stdout("");
        }
        assert_eq!(snapshot(dir.path()), held);
        master.kill().unwrap();
        master.wait().unwrap();
        fs::remove_file(&lock).unwrap();
    }
    let report: schema::Repair = json_written(
        lj().args(["repair", "--apply", "--format=json", "--state-shards=2"])
            .arg(&run1),
    );
    let l = report.ledger();
    assert!(l.written);
    let actions: Vec<(u32, FileAction, bool)> = l
        .files
        .iter()
        .map(|f| (f.index, f.action, f.backup.is_some()))
        .collect();
    assert_eq!(
        actions,
        [
            (0, FileAction::Rewrite, true),
            (1, FileAction::Rewrite, true),
            (2, FileAction::Remove, true),
            (3, FileAction::Remove, true)
        ]
    );
    // Each backup holds its file as it was.
    for f in &l.files {
        let backup = fs::read(f.backup.as_ref().unwrap()).unwrap();
        assert_eq!(
            &backup,
            &before[&run1.join(ledger::DIR).join(&f.name)],
            "{}",
            f.name
        );
    }
    lj().args(["repair", "--check", "--state-shards=2"])
        .arg(&run1)
        .assert()
        .code(0);
    // A single file takes no count; a path without a ledger neither.
    lj().args(["repair", "--state-shards=2"])
        .arg(run1.join(ledger::DIR).join(ledger::file_name(0)))
        .assert()
        .code(2)
        .stdout("");
    lj().args(["repair", "--state-shards=2"])
        .arg(run1.join(".work_leases.jsonl"))
        .assert()
        .code(2)
        .stdout("");
    // A directory where digests must go: refused before anything is
    // written.
    let (dir, _) = damaged();
    let run1 = dir.path().join("run1");
    let one = run1.join(ledger::DIR).join(ledger::file_name(1));
    fs::remove_file(&one).unwrap();
    fs::create_dir(&one).unwrap();
    let before = snapshot(dir.path());
    let out = lj()
        .args(["repair", "--apply", "--state-shards=2"])
        .arg(&run1)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "leasejournal: {}: is not a regular file, and 5 digests belong in it at 2 shards; move it away first. Nothing was changed\n",
            one.display()
        )
    );
    assert_eq!(snapshot(dir.path()), before);
    // --output takes a single file, and leaves it as it is.
    let (dir, _) = damaged();
    let shards = dir.path().join("run1").join(ledger::DIR);
    let source = shards.join(ledger::file_name(0));
    let original = fs::read(&source).unwrap();
    let out = dir.path().join("sealed.log");
    lj().args(["repair", "--output"])
        .arg(&out)
        .arg(&source)
        .assert()
        .code(0);
    assert_eq!(fs::read(&source).unwrap(), original);
    assert_eq!(file_shape(&out).0, TailKind::Clean);
    lj().args(["compact", "--output"])
        .arg(dir.path().join("other.log"))
        .arg(&shards)
        .assert()
        .code(2);
}

/// A kill at each step of a re-shard (a file rewritten, removed) leaves
/// every digest in some file, and the same command finishes the job.
#[test]
fn a_kill_at_any_step_of_a_reshard_loses_no_digest() {
    for point in [
        "planned",
        "before-rename",
        "renaming",
        "after-rename",
        "before-remove",
        "after-remove",
    ] {
        let (dir, digests) = damaged();
        let run1 = dir.path().join("run1");
        let shards = run1.join(ledger::DIR);
        let union = load(&shards, ALL, None);
        let out = lj()
            .env("LEASEJOURNAL_FAILPOINTS", format!("{point}=kill"))
            .args(["repair", "--apply", "--state-shards=2"])
            .arg(&run1)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), None, "{point}: killed");
        let left = load(&shards, ALL, None);
        assert!(left.is_superset(&union), "{point}: a digest is in no file");
        lj().args(["repair", "--apply", "--state-shards=2"])
            .arg(&run1)
            .assert()
            .code(0);
        let mut want = union.clone();
        want.insert(
            digests
                .iter()
                .find(|d| d.starts_with("0000000e"))
                .unwrap()
                .clone(),
        );
        assert_eq!(load(&shards, 2, None), want, "{point}");
        assert!(shard_files(&shards).iter().all(|(i, _)| *i < 2), "{point}");
    }
}

/// A process that keeps a ledger file open for writing without the
/// master's lock: the file is not replaced under it (nothing changed, exit
/// 2), nor removed (the files written before stay, exit 4, every digest in
/// some file); once it is gone the same command finishes.
#[test]
fn a_writer_without_the_lock_is_refused_and_nothing_is_lost() {
    let (dir, _) = damaged();
    let run1 = dir.path().join("run1");
    let shards = run1.join(ledger::DIR);
    let before = snapshot(dir.path());
    let union = load(&shards, ALL, None);
    // The re-shard while shard `index` is held open for writing: its exit
    // status and stderr.
    let while_open = |index: u32| {
        let _writer = OpenOptions::new()
            .append(true)
            .open(shards.join(ledger::file_name(index)))
            .unwrap();
        let out = lj()
            .args(["repair", "--apply", "--state-shards=2"])
            .arg(&run1)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), stderr)
    };
    let (code, stderr) = while_open(0);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("another process has it open for writing"),
        "{stderr}"
    );
    assert_eq!(snapshot(dir.path()), before, "nothing changed");
    // The file the count leaves out, held open: the files that receive
    // its digests are written, then the removal is refused.
    let (code, stderr) = while_open(3);
    assert_eq!(code, Some(4), "{stderr}");
    assert!(stderr.contains("was rewritten"), "{stderr}");
    assert!(load(&shards, ALL, None).is_superset(&union));
    lj().args(["repair", "--apply", "--state-shards=2"])
        .arg(&run1)
        .assert()
        .code(0);
    assert!(load(&shards, 2, None).is_superset(&union));
    assert!(shard_files(&shards).iter().all(|(i, _)| *i < 2));
}

/// The human output of each command on the damaged ledger, compared whole.
#[test]
fn what_repair_and_compact_say_of_a_ledger() {
    for (golden, args) in [
        ("test.ledger-write.repair", &["repair"][..]),
        ("test.ledger-write.reshard", &["repair", "--state-shards=2"]),
        (
            "test.ledger-write.reshard-apply",
            &["repair", "--state-shards=2", "--apply"],
        ),
        ("test.ledger-write.compact", &["compact"]),
        (
            "test.ledger-write.compact-apply",
            &["compact", "--apply", "--no-backup"],
        ),
    ] {
        let (dir, _) = damaged();
        let mut cmd = lj();
        cmd.env("COLUMNS", "140")
            .current_dir(dir.path())
            .args(args)
            .arg("run1");
        let ran = run(&mut cmd, Some(dir.path()));
        assert_golden(
            golden,
            &ran.render(&format!("$ leasejournal {} run1", args.join(" "))),
        );
    }
}

mod properties {
    //! What the ledger's rewrites promise, on generated and arbitrary
    //! bytes: never a panic, never a valid digest lost, an end the next
    //! `add` is safe after.

    use std::collections::BTreeSet;

    use leasejournal::engine::ledger::line::{Judged, Splitter};
    use leasejournal::engine::ledger::rewrite::{self, Keep, KeptPlan, Planner};
    use leasejournal::engine::ledger::seal::{self, LastLine, Sealed};
    use leasejournal::engine::ledger::{Digest, TailKind};
    use proptest::prelude::*;

    /// The valid lines of `bytes`, in order.
    fn valid(bytes: &[u8]) -> Vec<Digest> {
        let mut out = Vec::new();
        rewrite::each_line(bytes, &mut |l| {
            if let Judged::Valid(d) = l.judged {
                out.push(d);
            }
        })
        .unwrap();
        out
    }

    /// `bytes` planned with `keep`, fed in blocks of `block`.
    fn plan(bytes: &[u8], keep: Keep, block: usize) -> (KeptPlan, Sealed) {
        let mut planner = Planner::new(keep);
        let mut last = LastLine::new();
        let mut splitter = Splitter::new();
        for chunk in bytes.chunks(block.max(1)) {
            splitter.feed(chunk, &mut |l| planner.line(&l));
            last.feed(chunk);
        }
        let (tail, _) = splitter.finish(&mut |l| planner.line(&l));
        let sealed = seal::plan(&tail, &last);
        (planner.finish(bytes.len() as u64, &sealed), sealed)
    }

    fn digest(n: u8) -> String {
        format!("{:08x}{}", u32::from(n) * 0x0101_0101, "ab".repeat(28))
    }

    /// A ledger's bytes from pieces: digests (a few, so that they repeat)
    /// with every line end, and what damage leaves.
    fn piece() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            (0u8..6, 0usize..5).prop_map(|(n, end)| {
                let ends = ["\n", "\r\n", "\r", "  \n", "\x0c\n"];
                format!("{}{}", digest(n), ends[end]).into_bytes()
            }),
            (0u8..6).prop_map(|n| format!("{}\n", digest(n).to_uppercase()).into_bytes()),
            (0u8..6, 1usize..64).prop_map(|(n, k)| digest(n).as_bytes()[..k].to_vec()),
            (1usize..9).prop_map(|k| vec![0u8; k]),
            prop::collection::vec(any::<u8>(), 0..12),
            Just(b"\n".to_vec()),
        ]
    }

    fn ledger() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            prop::collection::vec(piece(), 0..12).prop_map(|p| p.concat()),
            prop::collection::vec(any::<u8>(), 0..300),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn a_seal_keeps_every_valid_line_and_the_next_add(data in ledger(), block in 1usize..70) {
            let (plan, sealed) = plan(&data, Keep::All, block);
            let mut out = Vec::new();
            rewrite::write_kept(&data[..], &plan, &[], &mut out).unwrap();
            let mut want = valid(&data);
            want.extend(sealed.restored);
            prop_assert_eq!(valid(&out), want);
            prop_assert_eq!(rewrite::observe(&out[..]).unwrap().tail, TailKind::Clean);
            if sealed.restored.is_none() && plan.keeps_everything(data.len() as u64) {
                prop_assert_eq!(&out, &data);
            }
            // Upstream's next add is a line of its own.
            out.extend_from_slice(format!("{}\n", digest(9)).as_bytes());
            prop_assert_eq!(valid(&out).last().copied(), Digest::parse(&digest(9)));
        }

        #[test]
        fn a_shard_keeps_its_own_digests_and_moves_the_others(data in ledger(), block in 1usize..70) {
            let keep = Keep::Shard { count: 3, index: 1 };
            let (plan, sealed) = plan(&data, keep, block);
            let extra = [Digest::parse(&digest(1)).unwrap()];
            let mut out = Vec::new();
            rewrite::write_kept(&data[..], &plan, &extra, &mut out).unwrap();
            let mut all = valid(&data);
            all.extend(sealed.restored);
            let (own, moved): (Vec<Digest>, Vec<Digest>) =
                all.iter().partition(|d| d.shard(3) == 1);
            prop_assert_eq!(&plan.moved, &moved);
            let mut want = own.clone();
            want.extend(extra);
            prop_assert_eq!(valid(&out), want);
            prop_assert_eq!(plan.kept.count(), own.len() as u64);
            prop_assert_eq!(rewrite::observe(&out[..]).unwrap().tail, TailKind::Clean);
        }

        #[test]
        fn a_compaction_keeps_each_valid_digest_once(data in ledger(), block in 1usize..70) {
            let (_, sealed) = plan(&data, Keep::All, block);
            let mut out = Vec::new();
            let compacted = rewrite::write_compact(&data[..], &sealed, &mut out).unwrap();
            let mut want: Vec<Digest> = Vec::new();
            for d in valid(&data).into_iter().chain(sealed.restored) {
                if !want.contains(&d) {
                    want.push(d);
                }
            }
            let observed = rewrite::observe(&out[..]).unwrap();
            prop_assert_eq!(valid(&out), want.clone());
            prop_assert_eq!((observed.ignored, observed.tail), (0, TailKind::Clean));
            prop_assert_eq!(observed.digests, compacted.kept.value());
            let set: BTreeSet<Digest> = want.into_iter().collect();
            prop_assert_eq!(set.len() as u64, compacted.kept.count());
        }
    }
}
