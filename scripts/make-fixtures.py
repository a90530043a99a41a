#!/usr/bin/env python3
"""Writes the hand-made fixtures:

- fixtures/verify/<code>/: one small input per finding code that triggers
  that code alone (under the settings tests/cli/verify.rs passes: --now
  1754550100 --ttl 1000000000 unless the case says otherwise);
- fixtures/diff/: pairs of snapshots and journals with known differences of
  every kind (tests/cli/diff.rs).

Records are encoded as upstream encodes them (json.dumps with sort_keys and
compact separators), so nothing but the intended difference shows. Rerun
after changing a case: python3 scripts/make-fixtures.py
"""
import hashlib
import json
import os
import shutil

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
ROOT = os.path.join(FIXTURES, "verify")
T0 = 1754550000.0


def dumps(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def work_id(payload):
    return hashlib.sha256(dumps(payload).encode()).hexdigest()


def payload(n):
    return {"path": f"/afl/queue/id:{n:06d}", "target_branch": n}


def lease(n, worker=1, time=T0, clock="unix", extra=None, id_of=None):
    p = payload(n)
    record = {"attempts": 1, "id": work_id(payload(id_of if id_of is not None else n)),
              "op": "lease", "payload": p, "time": time, "worker": worker}
    if clock is not None:
        record["clock"] = clock
    record.update(extra or {})
    return dumps(record)


def marker(op, n, time=T0 + 5):
    return dumps({"clock": "unix", "id": work_id(payload(n)), "op": op, "time": time})


def write(code, name, content):
    directory = os.path.join(ROOT, code)
    os.makedirs(directory, exist_ok=True)
    data = content.encode() if isinstance(content, str) else content
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


def lines(*items):
    return "".join(item + "\n" for item in items)


def snapshot(stats=(), leases=(), clock="unix"):
    mapping = {"leases": list(leases), "shard_count": 8, "stats": list(stats),
               "steal_window": 64, "worker_count": 3}
    if clock is not None:
        mapping["clock"] = clock
    return json.dumps(mapping, sort_keys=True, separators=(",", ":"))


def stats(task, **values):
    entry = {"completions": 1, "elapsed": 1.25, "failures": 0, "last_complete": T0 + 5,
             "last_lease": T0, "leases": 1, "owner": 1, "reward": 0.125, "shard": 6,
             "task_id": task, "total_generated": 4}
    entry.update(values)
    return entry


TASK_A = hashlib.sha256(b"task-a").hexdigest()
TASK_B = hashlib.sha256(b"task-b").hexdigest()

shutil.rmtree(ROOT, ignore_errors=True)
J = "journal.jsonl"
write("torn-tail", J, lines(lease(1)) + '{"attempts":1,"clo')
# Another file under the journal's name: text, not one record.
write("not-a-journal", J, "make: *** No rule to make target 'all'.  Stop.\nexit status 2\n")
write("zero-filled-tail", J, lines(lease(1)).encode() + b"\0" * 16)
write("unterminated-tail", J, lines(lease(1)) + lease(2))
write("glued-record", J, lines(lease(1), '{"attempts":1,"clock":"unix","id":"' + lease(2)))
write("corrupt-line", J, lines(lease(1), "{not json", lease(2)))
invalid = lease(1).replace('"clock"', '\xff"clock"', 1).encode("latin-1")
write("invalid-utf8", J, invalid.replace(b"\xc3\xbf", b"\xff") + b"\n")
write("bom", J, "\ufeff" + lines(lease(1), lease(2)))
dup = marker("done", 1)[:-1] + ',"op":"done"}'
write("duplicate-member", J, lines(lease(1), dup))
write("non-finite-number", J, lines(lease(1), lease(2).replace(f'"time":{T0}', '"time":NaN')))
write("not-an-object", J, lines(lease(1), "[1,2]"))
write("blank-line", J, lines(lease(1), "", lease(2)))
write("bad-id", J, lines(lease(1), dumps({"clock": "unix", "id": "ABC", "op": "done", "time": T0})))
write("payload-id-mismatch", J, lines(lease(1, id_of=2)))
write("rejected-field", J, lines(lease(1), lease(2, worker=-1)))
write("lenient-field", J, lines(lease(1, worker="3")))
write("unknown-op", J, lines(lease(1), marker("renew", 1)))
write("unknown-field", J, lines(lease(1, extra={"note": "by hand"})))
write("non-canonical-encoding", J, lines(json.dumps(json.loads(lease(1)))))
write("double-lease", J, lines(lease(1, worker=1), lease(1, worker=2, time=T0 + 1)))
write("lease-after-done", J, lines(lease(1), marker("done", 1), lease(1, time=T0 + 9)))
write("orphan-done", J, lines(marker("done", 1)))
write("orphan-reclaim", J, lines(marker("reclaim", 1)))
write("legacy-clock-lease", J, lines(lease(1, clock=None, time=123456.789)))
write("seed-missing", J, lines(lease(1)))
twin = {"continuation": {"schema": "symcc-live-continuation-v1"}, "path": "/afl/queue/id:000009",
        "target_branch": 9}
twin_b = dict(twin, sha256="ab" * 32)
write("requeued-twice", J, lines(*(dumps({"attempts": 1, "clock": "unix", "id": work_id(p), "op": "lease",
                                           "payload": p, "time": T0, "worker": 1}) for p in (twin, twin_b))))
write("future-lease", J, lines(lease(1, time=T0 + 3700)))
# The clock steps back between two appends: the done of a lease is dated
# before the lease. (Two leases sorted by id at the start of a file are
# what a compaction writes, and are not judged by the clock.)
write("clock-regression", J, lines(lease(1, time=T0 + 50), marker("done", 1, time=T0 - 1000)))
write("expired-lease", J, lines(lease(1)))
write("deferred-done", ".dispatch_protocol_deferred.jsonl", lines(lease(1), marker("done", 1)))
write("snapshot-corrupt", "state.json", snapshot([stats(TASK_A)])[:40])
write("snapshot-legacy-clock", "state.json", snapshot([stats(TASK_A)], clock=None))
write("snapshot-inherited-lease", "state.json",
      snapshot([stats(TASK_A)], [{"task_id": TASK_A, "updated": T0, "worker": 2}]))
write("snapshot-dropped-entry", "state.json", snapshot([stats(TASK_A), stats("ABC")]))
write("snapshot-non-finite", "state.json",
      snapshot([stats(TASK_A)]).replace('"reward":0.125', '"reward":Infinity'))
write("snapshot-duplicate-member", "state.json",
      snapshot([stats(TASK_A)]).replace('"shard":6', '"shard":6,"shard":7'))
write("snapshot-lease-without-stats", "state.json",
      snapshot([stats(TASK_A)], [{"task_id": TASK_B, "updated": T0, "worker": 2}]))
write("stale-temp-file", ".work_leases.jsonl", lines(lease(1)))
write("stale-temp-file", ".work_leases.jsonl.4242.99.tmp", lease(1)[:30])
write("live-master", ".work_leases.jsonl", lines(lease(1)))
write("live-master", ".master-queue.lock", "")
write("missing-journal", ".state_tasks.json", snapshot([stats(TASK_A)]))
write("leasejournal-backups", ".work_leases.jsonl", lines(lease(1)))
write("leasejournal-backups", ".work_leases.jsonl.bak.20261201T000000Z", lines(lease(1)) + '{"torn')
write("leasejournal-backups", ".work_leases.jsonl.discarded.20261201T000100Z.jsonl", lines(lease(2)))


# ---- diff pairs ----------------------------------------------------------
DIFF = os.path.join(FIXTURES, "diff")
shutil.rmtree(DIFF, ignore_errors=True)
os.makedirs(DIFF)


def write_diff(name, content):
    with open(os.path.join(DIFF, name), "wb") as f:
        f.write(content.encode() if isinstance(content, str) else content)


TASKS = [hashlib.sha256(f"task-{i}".encode()).hexdigest() for i in range(6)]
# A: tasks 0 (removed in B), 1 (changed), 2 (unchanged), 3 (lease moves)
# B: tasks 1, 2, 3, 4 (added); leases: 0 removed, 3 moved, 4 added
a_stats = [stats(TASKS[0]), stats(TASKS[1], completions=2, failures=0, reward=0.125, owner=2, shard=5,
                                  total_generated=10, elapsed=3.5, last_lease=T0 + 10, last_complete=T0 + 20),
           stats(TASKS[2]), stats(TASKS[3])]
b_stats = [stats(TASKS[1], completions=5, failures=1, reward=0.3, owner=3, shard=6,
                 total_generated=17, elapsed=9.0, last_lease=T0 + 70, last_complete=T0 + 95),
           stats(TASKS[2]), stats(TASKS[3]), stats(TASKS[4])]
a_leases = [{"task_id": TASKS[0], "updated": T0 + 1, "worker": 2},
            {"task_id": TASKS[3], "updated": T0 + 2, "worker": 1}]
b_leases = [{"task_id": TASKS[3], "updated": T0 + 2, "worker": 2},
            {"task_id": TASKS[4], "updated": T0 + 80, "worker": 3}]
write_diff("a.state.json", snapshot(a_stats, a_leases))
b_snapshot = json.loads(snapshot(b_stats, b_leases))
b_snapshot.update({"shard_count": 16, "worker_count": 4, "steal_window": 32})
write_diff("b.state.json", json.dumps(b_snapshot, sort_keys=True, separators=(",", ":")))

# Journals: B = A + appended records; C diverges from A and has a torn tail.
a_lines = lines(lease(1), lease(2, worker=2, time=T0 + 1), marker("done", 1), lease(3, time=T0 + 2),
                lease(4, time=T0 + 3))
write_diff("a.jsonl", a_lines)
write_diff("b.jsonl", a_lines + lines(marker("done", 3, time=T0 + 9), marker("reclaim", 4, time=T0 + 9),
                                      lease(5, worker=4, time=T0 + 10), lease(2, worker=5, time=T0 + 11)))
c_lines = lines(lease(1), lease(2, worker=2, time=T0 + 1), lease(6, time=T0 + 4)) + '{"attempts":1,"cl'
write_diff("c.jsonl", c_lines)


# ---- the README's runbook: a state directory after a crash ---------------
# Run from fixtures/runbook, so the relative seed paths resolve as they do
# from the master's working directory.
RUNBOOK = os.path.join(FIXTURES, "runbook")
shutil.rmtree(RUNBOOK, ignore_errors=True)
os.makedirs(os.path.join(RUNBOOK, "run1"))
os.makedirs(os.path.join(RUNBOOK, "afl", "queue"))
for name in ["id:000001,orig:seed", "id:000002,+cov"]:
    with open(os.path.join(RUNBOOK, "afl", "queue", name), "wb") as f:
        f.write(b"seed bytes\n")


def dispatch(path, focus="", target=0, actions=(), prefix=(), overrides=None, continuation=None):
    return {"continuation": continuation, "focus_bytes": focus,
            "parameter_overrides": overrides or {}, "parameter_token": "",
            "path": path, "s2f_actions": [list(a) for a in actions],
            "schedule_prefix": list(prefix), "sha256": hashlib.sha256(path.encode()).hexdigest(),
            "strategy": 0, "target_branch": target}


def lease_of(p, worker, time):
    return dumps({"attempts": 1, "clock": "unix", "id": work_id(p), "op": "lease",
                  "payload": p, "time": time, "worker": worker})


def done_of(p, time):
    return dumps({"clock": "unix", "id": work_id(p), "op": "done", "time": time})


seed = dispatch("afl/queue/id:000001,orig:seed")
cov = dispatch("afl/queue/id:000002,+cov", focus="0-15", target=4242,
               actions=[(4242, "solve"), (77, "sample")], prefix=[0, 1, 1],
               overrides={"SYMCC_SOLVER": "exact"})
# Its seed is gone, but it carries a live-state continuation.
gone = dispatch("afl/queue/id:000003,+cov", target=9,
                continuation={"schema": "symcc-live-continuation-v1",
                              "parent": hashlib.sha256(b"state").hexdigest()})
finished = dispatch("afl/queue/id:000004,+cov", target=12)
# The crash cut the done of `seed` in the middle of its append.
work = lines(lease_of(seed, 1, T0), lease_of(cov, 2, T0 + 1.5), lease_of(gone, 3, T0 + 3),
             lease_of(finished, 1, T0 + 4), done_of(finished, T0 + 9)) + done_of(seed, T0 + 12)[:60]
with open(os.path.join(RUNBOOK, "run1", ".work_leases.jsonl"), "w") as f:
    f.write(work)
with open(os.path.join(RUNBOOK, "run1", ".dispatch_protocol_deferred.jsonl"), "w") as f:
    f.write("")
with open(os.path.join(RUNBOOK, "run1", ".state_tasks.json"), "w") as f:
    f.write(snapshot([stats(TASK_A)]))
