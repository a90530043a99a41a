#!/usr/bin/env bash
# Benchmarks leasejournal on generated journals of 64 MiB, 256 MiB and
# 1 GiB with a warm page cache, in two tables.
#
# 1. Against `wc -l`: wall time (best of RUNS), the ratio to `wc -l`, and
#    peak RSS (from /usr/bin/time). `verify` also runs on one thread
#    (RAYON_NUM_THREADS=1) to show what the extra cores give. The floor
#    (examples/floor.rs) does only what no verifier can skip: read the file
#    on every core, split lines, SHA-256 each payload; it bounds what
#    `verify` can reach on the machine.
# 2. Paired runs, for the goals stated against another program: the
#    command and its baseline alternate PAIRS times (5 by default), and the
#    median of the per-pair ratios is printed, since a shared machine
#    drifts between runs. The rows: the floor, `verify` and `inspect` of a
#    fleet of 500 state directories (300 MB in all) against `cat` of their
#    files, and `verify`, `compact --output` and `--apply` of the largest
#    journal against a durable copy of it (`cp`, then `sync FILE`), and
#    `inspect --format json` of a digest ledger of 5,000,000 digests in 64
#    files (311 MB, upstream's MAX_DEDUP_ENTRIES) against `cat` of its
#    files.
# 3. A fenced work lease table of a long campaign (examples/gentable.rs:
#    records are never deleted, so nearly all are `done`), of 100,000 and
#    1,000,000 records in 256 shards, each beside its lock file:
#    `inspect --format json` (and `verify --quiet`, once it reads tables)
#    against `cat` of every record file on two processes, paired PAIRS
#    times with a warm page cache; the medians of the per-pair ratios of
#    wall time and of CPU time (user + system), and the peak RSS, which
#    must barely grow from 100,000 records to 1,000,000. TABLE_ONLY=1
#    runs this table alone; TABLE_RECORDS="100000 1000000" by default.
# 3b. Against `openssl dgst -sha256` (the cost of the hashing no verifier
#    can skip): verify and inspect of the largest journal, inspect against
#    verify, a fleet of 500 state directories of 1 to 5 MB with the seed
#    findings on and muted, and 20 runs of verify of a 5 MB journal; wall
#    and CPU, medians of PAIRS pairs. OPENSSL_ONLY=1 runs this table and
#    the row of `compact --apply` against a durable copy alone (on the
#    largest size given).
# 4. With BASELINE_BIN set to another build of leasejournal: the same
#    commands of that build and of this one alternate PAIRS times, and the
#    median of the per-pair ratios is printed. A change that must not
#    change speed shows ratios within the noise of 1. BASELINE_ONLY=1
#    prints this table alone.
#
# Usage: scripts/bench.sh [DIR] [SIZES_MIB...]
#   DIR defaults to a new temporary directory (needs about 4 GiB free, plus
#   room for two copies of the largest journal, and about 4.5 GiB for the
#   tables: a 4 KiB block per record); generated journals, the fleet and
#   the tables are kept there and reused. RUNS=3 and PAIRS=5 by default. The
#   ratios are what to compare between machines: on a shared virtual
#   machine the absolute times drift by ±20 % from minute to minute.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
cargo build --release --quiet --bin leasejournal --example genjournal --example genledger --example floor --example gentable
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
BIN=$TARGET/release/leasejournal
GEN=$TARGET/release/examples/genjournal
GENLEDGER=$TARGET/release/examples/genledger
FLOOR=$TARGET/release/examples/floor
GENTABLE=$TARGET/release/examples/gentable
SAMPLES=$PWD/fixtures/samples
DIR=${1:-$(mktemp -d)}
shift || true
mkdir -p "$DIR"
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(64 256 1024)
RUNS=${RUNS:-3}
PAIRS=${PAIRS:-5}

# best wall seconds and the peak RSS (KiB) of that run
measure() {
  local best="" rss="" t m
  for _ in $(seq "$RUNS"); do
    rm -f "$DIR/compacted.jsonl"
    local start end
    start=$(date +%s%N)
    /usr/bin/time -o "$DIR/.time" -f "%M" "$@" >/dev/null 2>&1 || true
    end=$(date +%s%N)
    t=$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.4f", (b - a) / 1e9}')
    m=$(tail -n 1 "$DIR/.time")  # after "Command exited with non-zero status N"
    if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; rss=$m; fi
  done
  rm -f "$DIR/compacted.jsonl"
  echo "$best $rss"
}

# seconds of one run of "$@" (output discarded)
seconds() {
  local start end
  start=$(date +%s%N)
  "$@" >/dev/null 2>&1 || true
  end=$(date +%s%N)
  awk -v a="$start" -v b="$end" 'BEGIN{printf "%.4f", (b - a) / 1e9}'
}

median() { sort -g | awk '{v[NR] = $1} END{print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# --- a fenced lease table -----------------------------------------------------

# The yardstick: GNU cat of every record file (`*.json`, not the locks),
# on two processes as leasejournal reads on two threads, listed by find as
# leasejournal lists the shard directories. cat is the program the goal
# names; per file it makes nine system calls (open, fstat, fadvise, mmap,
# read, write, read, munmap, close) where leasejournal makes three
# (openat relative to the shard directory, one read, close), so its
# system time is the larger part of both.
cat_table() {
  /usr/bin/time -o "$DIR/.time_base" -f "%U %S %M" \
    sh -c 'find "$1" -name "*.json" -print0 | xargs -0 -P2 -n 2000 cat' sh "$TABLE"
}
inspect_table() {
  /usr/bin/time -o "$DIR/.time" -f "%U %S %M" "$BIN" inspect --format json --now 1754600000 "$TABLE"
}
verify_table() {
  /usr/bin/time -o "$DIR/.time" -f "%U %S %M" "$BIN" verify --quiet --now 1754600000 "$TABLE"
}
# (the last line: /usr/bin/time first says when a command exited non-zero)
cpu_of() { tail -n 1 "$1" | awk '{print $1 + $2}'; }

# paired_cpu NAME BASELINE BASE_FN CMD_FN: like `paired`, with CPU time
# (user + system, from /usr/bin/time, the yardstick's children included)
# beside the wall time, and the median of both ratios.
paired_cpu() {
  local name=$1 baseline=$2 base=$3 cmd=$4 b c bc cc rss=0 m
  local bases="" cmds="" ratios="" bcpus="" ccpus="" cratios=""
  "$base" >/dev/null 2>&1 || true
  "$cmd" >/dev/null 2>&1 || true
  for _ in $(seq "$PAIRS"); do
    b=$(seconds "$base")
    bc=$(cpu_of "$DIR/.time_base")
    c=$(seconds "$cmd")
    cc=$(cpu_of "$DIR/.time")
    m=$(tail -n 1 "$DIR/.time" | awk '{print $3}')
    [ "$m" -gt "$rss" ] && rss=$m
    bases+="$b"$'\n'; cmds+="$c"$'\n'; bcpus+="$bc"$'\n'; ccpus+="$cc"$'\n'
    ratios+=$(awk -v c="$c" -v b="$b" 'BEGIN{print c / (b > 0 ? b : 0.001)}')$'\n'
    cratios+=$(awk -v c="$cc" -v b="$bc" 'BEGIN{print c / (b > 0 ? b : 0.001)}')$'\n'
  done
  printf '| %s | %s | %.3f | %.3f | %.2f | %.2f | %.2f | %.2f | %.1f |\n' "$name" "$baseline" \
    "$(printf '%s' "$bases" | median)" "$(printf '%s' "$cmds" | median)" \
    "$(printf '%s' "$ratios" | median)" \
    "$(printf '%s' "$bcpus" | median)" "$(printf '%s' "$ccpus" | median)" \
    "$(printf '%s' "$cratios" | median)" "$(awk -v m="$rss" 'BEGIN{print m / 1024}')"
}

table_bench() {
  echo
  printf '| command | baseline | baseline s | command s | × baseline wall (median of %d pairs) | baseline CPU s | command CPU s | × baseline CPU (median) | peak RSS (MiB) |\n|---|---|---|---|---|---|---|---|---|\n' "$PAIRS"
  local n
  for n in ${TABLE_RECORDS:-100000 1000000}; do
    TABLE=$DIR/table-$n/.work_lease_table
    if [ ! -f "$DIR/table-$n/.complete" ]; then
      rm -rf "$DIR/table-$n"
      "$GENTABLE" "$n" 256 "$TABLE"
      touch "$DIR/table-$n/.complete"
    fi
    paired_cpu "inspect --format json of a table of $n records in 256 shards" "cat of its record files, 2 processes" cat_table inspect_table
    # verify reads a table root once it is wired to (exit 2: not yet).
    local rc=0
    "$BIN" verify --quiet --now 1754600000 "$TABLE" >/dev/null 2>&1 || rc=$?
    if [ "$rc" -ne 2 ]; then
      paired_cpu "verify --quiet of a table of $n records in 256 shards" "cat of its record files, 2 processes" cat_table verify_table
    fi
  done
}

# --- against openssl dgst -sha256 ---------------------------------------------

# The yardstick of verify's speed: every lease line's id is checked against
# the SHA-256 of its payload, so no faithful verifier beats the cost of
# hashing; `openssl dgst -sha256` hashes every byte of the same files on
# one core (SHA-NI where the CPU has it). Rows, each the median of PAIRS
# paired runs, wall and CPU: verify and inspect of the largest journal,
# inspect against verify, a fleet of 500 state directories of 1 to 5 MB
# (a few hundred active leases each, whose seeds are not on this host)
# with the seed findings on and muted, and a typical 5 MB journal (each
# sample the mean of 20 runs, for the clock's resolution).
openssl_of() { /usr/bin/time -o "$DIR/.time_base" -f "%U %S %M" openssl dgst -sha256 "$@"; }
lj_time() { /usr/bin/time -o "$DIR/.time" -f "%U %S %M" "$BIN" "$@"; }
lj_base() { /usr/bin/time -o "$DIR/.time_base" -f "%U %S %M" "$BIN" "$@"; }
# make_fleet DIR MIN SPREAD STEP: 500 state directories under DIR (kept
# once complete), each a work journal of MIN + (i * STEP) % SPREAD bytes
# and the samples' deferred journal and snapshot.
make_fleet() {
  local fleet=$1 min=$2 spread=$3 step=$4 i
  [ -f "$fleet/.complete" ] && return
  rm -rf "$fleet"
  for i in $(seq -w 1 500); do
    mkdir -p "$fleet/run-$i"
    "$GEN" $((min + (10#$i * step) % spread)) "$fleet/run-$i/.work_leases.jsonl"
    cp "$SAMPLES/.dispatch_protocol_deferred.jsonl" "$SAMPLES/.state_tasks.json" "$fleet/run-$i/"
  done
  touch "$fleet/.complete"
}
openssl_bench() {
  local big=$1
  FLEET5=$DIR/fleet-5mb
  make_fleet "$FLEET5" 1000000 4000000 102947
  TYPICAL=$DIR/journal-5MB.jsonl
  [ -f "$TYPICAL" ] || "$GEN" 5000000 "$TYPICAL"
  cat "$big" "$FLEET5"/run-*/.[a-z]* "$TYPICAL" >/dev/null
  o_big() { openssl_of "$big"; }
  v_big() { lj_time verify --quiet "$big"; }
  vb_big() { lj_base verify --quiet "$big"; }
  i_big() { lj_time inspect "$big"; }
  o_fleet() { openssl_of "$FLEET5"/run-*/.[a-z]*; }
  v_fleet() { lj_time verify --quiet "$FLEET5"/run-*/; }
  vb_fleet() { lj_base verify --quiet "$FLEET5"/run-*/; }
  m_fleet() { lj_time verify --quiet --ignore seed-missing "$FLEET5"/run-*/; }
  i_fleet() { lj_time inspect "$FLEET5"/run-*/; }
  o_typ() { /usr/bin/time -o "$DIR/.time_base" -f "%U %S %M" bash -c 'for _ in $(seq 20); do openssl dgst -sha256 "$1"; done' sh "$TYPICAL"; }
  v_typ() { /usr/bin/time -o "$DIR/.time" -f "%U %S %M" bash -c 'for _ in $(seq 20); do "$1" verify --quiet "$2"; done' sh "$BIN" "$TYPICAL"; }
  echo
  printf '| command | baseline | baseline s | command s | × baseline wall (median of %d pairs) | baseline CPU s | command CPU s | × baseline CPU (median) | peak RSS (MiB) |\n|---|---|---|---|---|---|---|---|---|\n' "$PAIRS"
  paired_cpu "verify --quiet of $(basename "$big")" "openssl dgst -sha256 of it" o_big v_big
  paired_cpu "inspect of $(basename "$big")" "openssl dgst -sha256 of it" o_big i_big
  paired_cpu "inspect of $(basename "$big")" "verify --quiet of it" vb_big i_big
  paired_cpu "verify --quiet of 500 state directories of 1-5 MB" "openssl dgst -sha256 of their files" o_fleet v_fleet
  paired_cpu "verify --quiet --ignore seed-missing of them" "openssl dgst -sha256 of their files" o_fleet m_fleet
  paired_cpu "inspect of them" "openssl dgst -sha256 of their files" o_fleet i_fleet
  paired_cpu "inspect of them" "verify --quiet of them" vb_fleet i_fleet
  paired_cpu "20 × verify --quiet of a 5 MB journal" "20 × openssl dgst -sha256 of it" o_typ v_typ
}

if [ -n "${TABLE_ONLY:-}" ]; then
  table_bench
  exit 0
fi

if [ -n "${OPENSSL_ONLY:-}" ]; then SIZES=("${SIZES[-1]}"); fi
if [ -z "${BASELINE_ONLY:-}${OPENSSL_ONLY:-}" ]; then printf '| size | command | seconds | × wc -l | peak RSS (MiB) |\n|---|---|---|---|---|\n'; fi
for mib in "${SIZES[@]}"; do
  file="$DIR/journal-${mib}MiB.jsonl"
  [ -f "$file" ] || "$GEN" $((mib * 1024 * 1024)) "$file"
  cat "$file" >/dev/null; cat "$file" >/dev/null
  if [ -n "${BASELINE_ONLY:-}${OPENSSL_ONLY:-}" ]; then continue; fi
  read -r wc_t wc_m <<<"$(measure wc -l "$file")"
  row() {
    local name=$1; shift
    read -r t m <<<"$(measure "$@")"
    printf '| %s MiB | %s | %.3f | %.1f | %d |\n' "$mib" "$name" "$t" "$(awk -v t="$t" -v w="$wc_t" 'BEGIN{print t / (w > 0 ? w : 0.01)}')" $((m / 1024))
  }
  printf '| %s MiB | wc -l | %.3f | 1.0 | %d |\n' "$mib" "$wc_t" $((wc_m / 1024))
  row "floor: read, split, SHA-256 only" "$FLOOR" "$file"
  row "leasejournal verify" "$BIN" verify --quiet "$file"
  row "leasejournal verify (one thread)" env RAYON_NUM_THREADS=1 "$BIN" verify --quiet "$file"
  row "leasejournal inspect" "$BIN" inspect "$file"
  row "leasejournal inspect --format json" "$BIN" inspect --format json "$file"
  row "leasejournal inspect --workers" "$BIN" inspect --workers "$file"
  row "leasejournal inspect --timeline" "$BIN" inspect --timeline "$file"
  row "leasejournal inspect --records --format ndjson" "$BIN" inspect --records --format ndjson "$file"
  row "leasejournal compact --output" "$BIN" compact --output "$DIR/compacted.jsonl" "$file"
done

# --- paired runs -----------------------------------------------------------

# "$@", its peak RSS (KiB) left in $DIR/.time
timed() { /usr/bin/time -o "$DIR/.time" -f "%M" "$@"; }

# paired NAME BASELINE SETUP BASE_FN CMD_FN: PAIRS alternating runs of the
# functions BASE_FN and CMD_FN (which runs its command through `timed`),
# SETUP_FN (untimed) before each; one row.
paired() {
  local name=$1 baseline=$2 setup=$3 base=$4 cmd=$5 b c ratios="" bases="" cmds="" rss=0 m
  for _ in $(seq "$PAIRS"); do
    "$setup"
    b=$(seconds "$base")
    "$setup"
    c=$(seconds "$cmd")
    m=$(tail -n 1 "$DIR/.time")
    [ "$m" -gt "$rss" ] && rss=$m
    bases+="$b"$'\n'; cmds+="$c"$'\n'
    ratios+=$(awk -v c="$c" -v b="$b" 'BEGIN{print c / (b > 0 ? b : 0.001)}')$'\n'
  done
  printf '| %s | %s | %.3f | %.3f | %.2f | %d |\n' "$name" "$baseline" \
    "$(printf '%s' "$bases" | median)" "$(printf '%s' "$cmds" | median)" \
    "$(printf '%s' "$ratios" | median)" $((rss / 1024))
}

# A fleet of 500 state directories: a work journal of 500 to 700 kB each
# (300 MB in all), and the samples' deferred journal and snapshot.
FLEET=$DIR/fleet
make_fleet "$FLEET" 500000 200000 7919
LARGEST=$DIR/journal-${SIZES[-1]}MiB.jsonl
nothing() { :; }
cat_fleet() { cat "$FLEET"/run-*/.[a-z]*; }
floor_fleet() { timed "$FLOOR" "$FLEET"/run-*/.[a-z]*; }
verify_fleet() { timed "$BIN" verify --quiet "$FLEET"/run-*/; }
inspect_fleet() { timed "$BIN" inspect "$FLEET"/run-*/; }
# A digest ledger at upstream's limit: 5,000,000 digests in 64 shard files.
LEDGER=$DIR/ledger/.state_shards
if [ ! -f "$DIR/ledger/.complete" ]; then
  rm -rf "$DIR/ledger"
  "$GENLEDGER" 5000000 64 "$LEDGER"
  touch "$DIR/ledger/.complete"
fi
cat_ledger() { cat "$LEDGER"/*; }
inspect_ledger() { timed "$BIN" inspect --format json "$LEDGER"; }
durable_copy() { cp "$LARGEST" "$DIR/copy.jsonl" && sync "$DIR/copy.jsonl"; }
no_copy() { rm -f "$DIR/copy.jsonl"; }
verify_largest() { timed "$BIN" verify --quiet "$LARGEST"; }
compact_output() { timed "$BIN" compact --output "$DIR/compacted.jsonl" "$LARGEST"; }
# A fresh journal to rewrite, and free memory that was just used: on the
# development VM the first write into memory the guest has not touched for
# a while costs about 8 s per GiB in the kernel's copy (the host backs the
# pages again), where a write into pages just freed costs 0.3 s. Writing
# and removing a copy first gives both commands of a pair the warm case.
fresh_copies() {
  rm -f "$DIR/copy.jsonl" "$DIR/compacted.jsonl" "$DIR"/apply/.work_leases.jsonl.bak.*
  mkdir -p "$DIR/apply"
  cp "$LARGEST" "$DIR/apply/.work_leases.jsonl"
  cp "$LARGEST" "$DIR/warm" && sync && rm -f "$DIR/warm"
}
compact_apply() { timed "$BIN" compact --apply "$DIR/apply/.work_leases.jsonl"; }

header() {
  echo
  printf '| command | baseline | baseline s | command s | × baseline (median of %d pairs) | peak RSS (MiB) |\n|---|---|---|---|---|---|\n' "$PAIRS"
}

if [ -n "${BASELINE_BIN:-}" ]; then
  OLD=$(realpath "$BASELINE_BIN")
  # versus NAME SETUP ARGS...: ARGS run by the baseline build and by this
  # one, alternating; one row.
  old_build() { "$OLD" "${ARGS[@]}"; }
  this_build() { timed "$BIN" "${ARGS[@]}"; }
  versus() {
    local name=$1 setup=$2
    shift 2
    ARGS=("$@")
    paired "$name" "baseline build" "$setup" old_build this_build
  }
  no_compacted() { rm -f "$DIR/compacted.jsonl"; }
  header
  cat_fleet >/dev/null
  versus "verify --quiet of ${SIZES[-1]} MiB" nothing verify --quiet "$LARGEST"
  versus "inspect of ${SIZES[-1]} MiB" nothing inspect "$LARGEST"
  versus "inspect --records --format ndjson of ${SIZES[-1]} MiB" nothing inspect --records --format ndjson "$LARGEST"
  versus "recover of ${SIZES[-1]} MiB" nothing recover "$LARGEST"
  versus "verify --quiet of 500 state directories" nothing verify --quiet "$FLEET"/run-*/
  versus "inspect of 500 state directories" nothing inspect "$FLEET"/run-*/
  versus "inspect --format json of a ledger of 5,000,000 digests" nothing inspect --format json "$LEDGER"
  versus "compact --output of ${SIZES[-1]} MiB" no_compacted compact --output "$DIR/compacted.jsonl" "$LARGEST"
  versus "compact --apply of ${SIZES[-1]} MiB" fresh_copies compact --apply "$DIR/apply/.work_leases.jsonl"
  versus "repair --apply of ${SIZES[-1]} MiB" fresh_copies repair --apply "$DIR/apply/.work_leases.jsonl"
  fresh_copies
  rm -rf "$DIR/apply" "$DIR/compacted.jsonl"
  if [ -n "${BASELINE_ONLY:-}" ]; then exit 0; fi
fi

if [ -n "${OPENSSL_ONLY:-}" ]; then
  openssl_bench "$LARGEST"
  header
  paired "compact --apply of ${SIZES[-1]} MiB" "cp + sync FILE" fresh_copies durable_copy compact_apply
  fresh_copies
  rm -rf "$DIR/apply" "$DIR/copy.jsonl"
  exit 0
fi

header
cat_fleet >/dev/null
paired "floor of 500 state directories' files" "cat of their files" nothing cat_fleet floor_fleet
paired "verify --quiet of 500 state directories" "cat of their files" nothing cat_fleet verify_fleet
paired "inspect of 500 state directories" "cat of their files" nothing cat_fleet inspect_fleet
cat_ledger >/dev/null
paired "inspect --format json of a ledger of 5,000,000 digests" "cat of its files" nothing cat_ledger inspect_ledger
paired "verify --quiet of ${SIZES[-1]} MiB" "cp + sync FILE" no_copy durable_copy verify_largest
paired "compact --output of ${SIZES[-1]} MiB" "cp + sync FILE" fresh_copies durable_copy compact_output
paired "compact --apply of ${SIZES[-1]} MiB" "cp + sync FILE" fresh_copies durable_copy compact_apply
fresh_copies
rm -rf "$DIR/apply" "$DIR/copy.jsonl"
openssl_bench "$LARGEST"
table_bench
