//! Property tests over generated journals (and arbitrary bytes): what the
//! write commands promise, checked on the plans and their output.

use std::collections::BTreeSet;

use leasejournal::engine::journal::StateView;
use leasejournal::engine::journal::TailFix;
use leasejournal::engine::journal::compaction as compact;
use leasejournal::engine::journal::encode::{lease_line, marker_line};
use leasejournal::engine::journal::{self, Clock, Replay, SalvageAction, WorkId};
use leasejournal::engine::json::PyInt;
use leasejournal::operations::recover::{self, Selection};
use leasejournal::operations::repair;
use proptest::prelude::*;

/// The bytes a sealed append produces: the tail cut or terminated, then
/// `append`.
fn sealed_then_appended(data: &[u8], tail: &TailFix, append: &[u8]) -> Vec<u8> {
    let mut out = match *tail {
        TailFix::Cut { offset, .. } => data[..offset as usize].to_vec(),
        TailFix::Terminate { .. } => [data, b"\n"].concat(),
        TailFix::None => data.to_vec(),
    };
    out.extend_from_slice(append);
    out
}

/// The repaired bytes of `data`.
fn repaired(data: &[u8], plan: &repair::Plan) -> Vec<u8> {
    let mut out = Vec::new();
    repair::write_result(data, plan, &mut out).unwrap();
    out
}

#[derive(Clone, Debug)]
enum Spec {
    Lease {
        n: u8,
        worker: u8,
        time: u32,
        clock: u8,
    },
    Done(u8),
    Reclaim(u8),
    Garbage(Vec<u8>),
    Blank,
    /// A torn fragment of a lease with a complete record glued after it.
    Glued {
        torn: u8,
        n: u8,
    },
}

fn payload(n: u8) -> String {
    format!("{{\"path\":\"/afl/queue/id:{n:06}\",\"target_branch\":{n}}}")
}

fn id(n: u8) -> WorkId {
    WorkId::of_canonical(payload(n).as_bytes())
}

fn lease(n: u8, worker: u8, time: u32, clock: u8) -> Vec<u8> {
    let t = 1_754_550_000.0 + f64::from(time);
    let mut line = lease_line(
        &id(n),
        &PyInt::Small(i64::from(worker)),
        t,
        &PyInt::Small(1),
        Clock::Unix,
        payload(n).as_bytes(),
    );
    if clock == 1 {
        line = lease_line(
            &id(n),
            &PyInt::Small(i64::from(worker)),
            f64::from(time),
            &PyInt::Small(1),
            Clock::Legacy,
            payload(n).as_bytes(),
        );
    } else if clock == 2 {
        // A pre-F314 record: no clock member.
        let text = String::from_utf8(line)
            .unwrap()
            .replace("\"clock\":\"unix\",", "");
        line = text.into_bytes();
    }
    line
}

fn spec() -> impl Strategy<Value = Spec> {
    prop_oneof![
        6 => (0u8..12, 0u8..4, 0u32..5000, 0u8..3).prop_map(|(n, worker, time, clock)| Spec::Lease { n, worker, time, clock }),
        4 => (0u8..12).prop_map(Spec::Done),
        2 => (0u8..12).prop_map(Spec::Reclaim),
        1 => proptest::collection::vec(any::<u8>(), 0..40).prop_map(Spec::Garbage),
        1 => Just(Spec::Blank),
        1 => (1u8..60, 0u8..12).prop_map(|(torn, n)| Spec::Glued { torn, n }),
    ]
}

fn build(specs: &[Spec], torn_tail: Option<u8>) -> Vec<u8> {
    let mut out = Vec::new();
    for s in specs {
        match s {
            Spec::Lease {
                n,
                worker,
                time,
                clock,
            } => out.extend(lease(*n, *worker, *time, *clock)),
            Spec::Done(n) => out.extend(marker_line("done", &id(*n), Clock::Unix, 1_754_560_000.0)),
            Spec::Reclaim(n) => out.extend(marker_line(
                "reclaim",
                &id(*n),
                Clock::Unix,
                1_754_560_000.0,
            )),
            Spec::Garbage(bytes) => {
                out.extend(bytes.iter().filter(|&&b| b != b'\n' && b != b'\r'));
                out.push(b'\n');
            }
            Spec::Blank => out.push(b'\n'),
            Spec::Glued { torn, n } => {
                let fragment = lease(*n, 0, 0, 0);
                out.extend_from_slice(&fragment[..usize::from(*torn).min(fragment.len() - 2)]);
                out.extend(lease(*n, 1, 1, 0));
            }
        }
    }
    if let Some(k) = torn_tail {
        let fragment = lease(k % 12, 0, 0, 0);
        out.extend_from_slice(&fragment[..usize::from(k).clamp(1, fragment.len() - 2)]);
    }
    out
}

fn replay(data: &[u8]) -> Replay {
    journal::scan(data, &mut ()).unwrap().replay
}

fn journal_strategy() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(spec(), 0..60),
        proptest::option::of(1u8..200),
    )
        .prop_map(|(s, t)| build(&s, t))
}

/// One piece of a generated ledger file: what upstream writes, what
/// crashes, hand edits and other systems leave.
fn ledger_piece() -> impl Strategy<Value = Vec<u8>> {
    let digest = proptest::collection::vec(any::<u8>(), 32)
        .prop_map(|bytes| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>());
    let space = prop_oneof![
        Just(" "),
        Just("\t"),
        Just("\x0b"),
        Just("\x0c"),
        Just("\x1c"),
        Just("\x1f")
    ];
    let end = prop_oneof![4 => Just("\n"), 1 => Just("\r\n"), 1 => Just("\r"), 1 => Just("")];
    prop_oneof![
        8 => (digest.clone(), end.clone()).prop_map(|(d, e)| format!("{d}{e}").into_bytes()),
        1 => (digest.clone(), end.clone()).prop_map(|(d, e)| format!("{}{e}", d.to_uppercase()).into_bytes()),
        1 => (digest.clone(), 1usize..64).prop_map(|(d, n)| d.as_bytes()[..n].to_vec()),
        1 => (space.clone(), digest.clone(), space, end.clone()).prop_map(|(s, d, t, e)| format!("{s}{d}{t}{e}").into_bytes()),
        1 => (1usize..80).prop_map(|n| vec![0u8; n]),
        1 => (digest.clone(), 0usize..65).prop_map(|(d, at)| {
            // A byte above 0x7f (deleted by upstream's decoding) inside or
            // after a line, a CR before it.
            let mut line = d.into_bytes();
            line.insert(at.min(line.len()), 0xe9);
            line.extend_from_slice(b"\r\xc3\xa9\n");
            line
        }),
        1 => proptest::collection::vec(any::<u8>(), 0..70),
    ]
}

/// A fenced lease record as upstream writes it, with each member drawn
/// from what upstream writes and from the values its reader rejects,
/// raises on or accepts oddly; sometimes cut short or with bytes flipped.
fn table_record() -> impl Strategy<Value = Vec<u8>> {
    let id = "ab".repeat(32);
    let pick = |items: &'static [&'static str]| proptest::sample::select(items);
    (
        pick(&["1", "true", "1.0", "0", "\"1\"", "null"]),
        pick(&["\"leased\"", "\"committing\"", "\"done\"", "\"gone\"", "[]", "{}", "1"]),
        pick(&["1754550000.25", "\"1754550000.5\"", "true", "NaN", "-1", "1e400", "\" 17_5 \"", "null"]),
        pick(&["\"h:1:2:3\"", "\"\"", "7"]),
        pick(&["{\"path\":\"/q/a\"}", "[]", "{\"path\":\"\\ud800\",\"n\":1e5}"]),
        pick(&["", ",\"commit\":{}", ",\"commit\":[]", ",\"status\":\"done\""]),
        proptest::option::of(0usize..400),
    )
        .prop_map(move |(schema, status, updated, token, payload, extra, cut)| {
            let mut bytes = format!(
                "{{\"id\":\"{id}\",\"owner\":\"hostA:1\",\"payload\":{payload},\"schema\":{schema},\"status\":{status},\"token\":{token},\"updated\":{updated}{extra}}}\n"
            )
            .into_bytes();
            if let Some(at) = cut {
                bytes.truncate(at.min(bytes.len()));
            }
            bytes
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    #[test]
    fn fenced_lease_records_read_the_same_once_rewritten(data in table_record()) {
        leasejournal::fuzzing::check_table_record(&data);
    }

    #[test]
    fn the_ledger_reader_reads_as_upstream_in_any_blocks(
        pieces in proptest::collection::vec(ledger_piece(), 0..40),
        sizes in proptest::collection::vec(1usize..300, 1..20),
    ) {
        let data = pieces.concat();
        leasejournal::fuzzing::check_ledger_in_blocks(&data, &sizes);
    }

    #[test]
    fn compaction_preserves_the_replay_state(data in journal_strategy()) {
        let before = replay(&data);
        for drop_completed in [false, true] {
            let scan = compact::scan(&data[..]).unwrap();
            let plan = compact::plan(scan.replay, scan.summary.lines, scan.summary.bytes, drop_completed).unwrap();
            let mut out = Vec::new();
            compact::write_result(&data[..], &plan, &mut out).unwrap();
            let after = replay(&out);
            prop_assert_eq!(after.active_sorted().iter().map(|(i, a)| (**i, a.worker.clone(), a.time.to_bits(), a.clock)).collect::<Vec<_>>(),
                before.active_sorted().iter().map(|(i, a)| (**i, a.worker.clone(), a.time.to_bits(), a.clock)).collect::<Vec<_>>());
            if drop_completed {
                prop_assert!(after.completed.is_empty());
            } else {
                prop_assert_eq!(after.completed_sorted(), before.completed_sorted());
            }
        }
    }

    #[test]
    fn discard_then_replay_is_replay_minus_the_reclaimed(data in journal_strategy(), ttl in prop_oneof![Just(0.0), 0.0f64..6000.0], limit in 0usize..4) {
        let before = replay(&data);
        let mut scan = journal::scan(&data[..], &mut ()).unwrap();
        let selection = Selection { ttl: Some(ttl), ..Selection::default() };
        let plan = recover::discard(&mut scan.replay, &scan.summary.tail, &selection, 1_754_555_000.0, limit);
        let out = sealed_then_appended(&data, &plan.tail, &plan.append);
        let after = replay(&out);
        let reclaimed: BTreeSet<WorkId> = plan.reclaims.iter().map(|r| r.id).collect();
        let expected: BTreeSet<WorkId> = before.active.keys().copied().filter(|i| !reclaimed.contains(i)).collect();
        prop_assert_eq!(after.active.keys().copied().collect::<BTreeSet<_>>(), expected);
        prop_assert_eq!(after.completed_sorted(), before.completed_sorted());
        prop_assert_eq!(StateView::of(&after), plan.after);
        if limit > 0 { prop_assert!(plan.reclaims.len() <= limit); }
        // The export replays to exactly the discarded leases.
        let exported = replay(&plan.export_lines);
        prop_assert_eq!(exported.active.keys().copied().collect::<BTreeSet<_>>(), reclaimed);
    }

    #[test]
    fn repair_never_takes_an_active_lease_away(data in journal_strategy()) {
        let before = replay(&data);
        let (scan, salvager) = repair::scan(&data[..]).unwrap();
        let plan = repair::plan(&scan, salvager).unwrap();
        let out = repaired(&data, &plan);
        let after = journal::scan(&out[..], &mut ()).unwrap();
        prop_assert_eq!(StateView::of(&after.replay), plan.after.clone());
        // Active after = active before + brought back - completed by a
        // salvaged done; nothing else.
        let mut expected: BTreeSet<WorkId> = before.active.keys().copied().collect();
        expected.extend(plan.brought_back.iter().copied());
        for id in &plan.completed_by_salvage {
            expected.remove(id);
            prop_assert!(after.replay.completed.contains(id));
        }
        prop_assert_eq!(after.replay.active.keys().copied().collect::<BTreeSet<_>>(), expected);
        prop_assert!(matches!(after.summary.tail.state, journal::TailState::Clean | journal::TailState::Empty));
        // A second repair has nothing to do.
        let (scan, salvager) = repair::scan(&out[..]).unwrap();
        prop_assert!(repair::plan(&scan, salvager).unwrap().is_noop());
    }

    #[test]
    fn sealing_a_torn_tail_never_changes_the_replay_state(specs in proptest::collection::vec(spec(), 0..40), k in 1u8..200) {
        let data = build(&specs, Some(k));
        let (scan, salvager) = repair::scan(&data[..]).unwrap();
        let plan = repair::plan(&scan, salvager).unwrap();
        let out = repaired(&data, &plan);
        let after = journal::scan(&out[..], &mut ()).unwrap();
        prop_assert_eq!(after.summary.tail.state == journal::TailState::Torn, false);
        prop_assert_eq!(StateView::of(&after.replay), plan.after.clone());
        if plan.salvaged.is_empty() {
            prop_assert_eq!(plan.after, plan.before);
        }
    }

    #[test]
    fn splitting_glued_records_only_adds_the_restored_records(data in journal_strategy()) {
        let (scan, salvager) = repair::scan(&data[..]).unwrap();
        let plan = repair::plan(&scan, salvager).unwrap();
        let out = repaired(&data, &plan);
        let records = |bytes: &[u8]| -> Vec<String> {
            let mut v = Vec::new();
            let mut lines = journal::LineReader::new(bytes);
            while let Some(line) = lines.next_line().unwrap() {
                if let journal::LineKind::Record(r) = journal::classify(line.content).kind {
                    v.push(format!("{} {:?}", r.id, r.op));
                }
            }
            v.sort();
            v
        };
        let mut expected = records(&data);
        for s in plan.salvaged.iter().filter(|s| s.action == SalvageAction::Restored) {
            let mut lines = journal::LineReader::new(&data[..]);
            while let Some(line) = lines.next_line().unwrap() {
                if line.offset == s.offset
                    && let journal::LineKind::Record(r) = journal::classify(&line.content[s.fragment_bytes..line.content.len() - s.trailing_bytes]).kind
                {
                    expected.push(format!("{} {:?}", r.id, r.op));
                }
            }
        }
        expected.sort();
        prop_assert_eq!(records(&out), expected);
        prop_assert_eq!(StateView::of(&replay(&out)), plan.after);
    }

    #[test]
    fn the_forecast_reclaims_every_active_lease_in_upstreams_order(data in journal_strategy()) {
        let scan = journal::scan(&data[..], &mut ()).unwrap();
        let f = journal::forecast(&scan.replay, &scan.summary.tail, 1_754_555_000.0, |_| false);
        let ids: BTreeSet<WorkId> = f.reclaims.iter().map(|r| r.lease.id).collect();
        prop_assert_eq!(ids, scan.replay.active.keys().copied().collect::<BTreeSet<_>>());
        let keys: Vec<(PyInt, f64, WorkId)> = f.reclaims.iter().map(|r| (r.lease.attempts.clone(), r.lease.time, r.lease.id)).collect();
        let in_order = keys.windows(2).all(|w| {
            w[0].0.cmp(&w[1].0)
                .then(w[0].1.partial_cmp(&w[1].1).unwrap())
                .then(w[0].2.cmp(&w[1].2))
                != std::cmp::Ordering::Greater
        });
        prop_assert!(in_order);
        prop_assert_eq!(f.first_append.glues, matches!(scan.summary.tail.state, journal::TailState::Torn | journal::TailState::Unterminated));
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_scan_the_same_every_way(data in proptest::collection::vec(any::<u8>(), 0..2000)) {
        leasejournal::fuzzing::check_all(&data);
    }

    #[test]
    fn generated_journals_pass_every_fuzz_property(data in journal_strategy()) {
        leasejournal::fuzzing::check_all(&data);
    }
}
