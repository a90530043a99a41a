//! Property tests over generated journals (and arbitrary bytes): what the
//! write commands promise, checked on the plans and their output.

use std::collections::BTreeSet;

use leasejournal::compact;
use leasejournal::journal::encode::{lease_line, marker_line};
use leasejournal::journal::{self, Clock, Replay, WorkId};
use leasejournal::json::PyInt;
use leasejournal::plan::StateView;
use leasejournal::recover::{self, Selection};
use proptest::prelude::*;

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

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

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
    fn recover_then_replay_is_replay_minus_the_reclaimed(data in journal_strategy(), ttl in prop_oneof![Just(0.0), 0.0f64..6000.0], limit in 0usize..4) {
        let before = replay(&data);
        let (scan, salvager) = recover::scan(&data[..], false).unwrap();
        let plan = recover::plan(scan, salvager, Selection::Expired { ttl }, 1_754_555_000.0, limit);
        let mut out = Vec::new();
        recover::write_result(&data[..], &plan, &mut out).unwrap();
        let after = replay(&out);
        let reclaimed: BTreeSet<WorkId> = plan.reclaims.iter().map(|r| r.id).collect();
        let expected: BTreeSet<WorkId> = before.active.keys().copied().filter(|i| !reclaimed.contains(i)).collect();
        prop_assert_eq!(after.active.keys().copied().collect::<BTreeSet<_>>(), expected);
        prop_assert_eq!(after.completed_sorted(), before.completed_sorted());
        prop_assert_eq!(StateView::of(&after), plan.after);
        if limit > 0 { prop_assert!(plan.reclaims.len() <= limit); }
    }

    #[test]
    fn migrating_twice_equals_migrating_once(data in journal_strategy()) {
        let migrate = |input: &[u8]| {
            let (scan, _) = recover::scan(input, false).unwrap();
            let plan = recover::plan(scan, None, Selection::Legacy, 1_754_555_000.0, 0);
            let mut out = Vec::new();
            recover::write_result(input, &plan, &mut out).unwrap();
            (plan.reclaims.len(), out)
        };
        let (_, once) = migrate(&data);
        let (second, twice) = migrate(&once);
        prop_assert_eq!(second, 0);
        prop_assert_eq!(twice, once.clone());
        prop_assert!(replay(&once).active.values().all(|a| a.clock == Clock::Unix));
    }

    #[test]
    fn sealing_a_torn_tail_never_changes_the_replay_state(specs in proptest::collection::vec(spec(), 0..40), k in 1u8..200) {
        let data = build(&specs, Some(k));
        let (scan, _) = recover::scan(&data[..], false).unwrap();
        // Nothing expires at this time and TTL: only the tail is sealed.
        let plan = recover::plan(scan, None, Selection::Expired { ttl: 1e12 }, 1_754_555_000.0, 0);
        prop_assert!(plan.reclaims.iter().all(|r| r.clock != Clock::Unix));
        let mut out = Vec::new();
        recover::write_result(&data[..], &plan, &mut out).unwrap();
        let after = journal::scan(&out[..], &mut ()).unwrap();
        prop_assert_eq!(after.summary.tail.state == journal::TailState::Torn, false);
        prop_assert_eq!(StateView::of(&after.replay), plan.after);
    }

    #[test]
    fn splitting_glued_records_only_adds_the_glued_records(data in journal_strategy()) {
        let (scan, salvager) = recover::scan(&data[..], true).unwrap();
        let plan = recover::plan(scan, salvager, Selection::Expired { ttl: 1e12 }, 1_754_555_000.0, 0);
        let mut out = Vec::new();
        recover::write_result(&data[..], &plan, &mut out).unwrap();
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
        for s in &plan.salvaged {
            let mut lines = journal::LineReader::new(&data[..]);
            while let Some(line) = lines.next_line().unwrap() {
                if line.offset == s.offset
                    && let journal::LineKind::Record(r) = journal::classify(&line.content[s.fragment_bytes..]).kind
                {
                    expected.push(format!("{} {:?}", r.id, r.op));
                }
            }
        }
        // Legacy leases expire whatever the TTL: their reclaims are added too.
        expected.extend(plan.reclaims.iter().map(|r| format!("{} Reclaim", r.id)));
        expected.sort();
        prop_assert_eq!(records(&out), expected);
        prop_assert_eq!(StateView::of(&replay(&out)), plan.after);
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
