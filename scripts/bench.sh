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
# 3. With BASELINE_BIN set to another build of leasejournal: the same
#    commands of that build and of this one alternate PAIRS times, and the
#    median of the per-pair ratios is printed. A change that must not
#    change speed shows ratios within the noise of 1. BASELINE_ONLY=1
#    prints this table alone.
#
# Usage: scripts/bench.sh [DIR] [SIZES_MIB...]
#   DIR defaults to a new temporary directory (needs about 4 GiB free, plus
#   room for two copies of the largest journal); generated journals and the
#   fleet are kept there and reused. RUNS=3 and PAIRS=5 by default. The
#   ratios are what to compare between machines: on a shared virtual
#   machine the absolute times drift by ±20 % from minute to minute.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
cargo build --release --quiet --bin leasejournal --example genjournal --example genledger --example floor
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
BIN=$TARGET/release/leasejournal
GEN=$TARGET/release/examples/genjournal
GENLEDGER=$TARGET/release/examples/genledger
FLOOR=$TARGET/release/examples/floor
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

if [ -z "${BASELINE_ONLY:-}" ]; then printf '| size | command | seconds | × wc -l | peak RSS (MiB) |\n|---|---|---|---|---|\n'; fi
for mib in "${SIZES[@]}"; do
  file="$DIR/journal-${mib}MiB.jsonl"
  [ -f "$file" ] || "$GEN" $((mib * 1024 * 1024)) "$file"
  cat "$file" >/dev/null; cat "$file" >/dev/null
  if [ -n "${BASELINE_ONLY:-}" ]; then continue; fi
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

# seconds of one run of "$@" (output discarded)
seconds() {
  local start end
  start=$(date +%s%N)
  "$@" >/dev/null 2>&1 || true
  end=$(date +%s%N)
  awk -v a="$start" -v b="$end" 'BEGIN{printf "%.4f", (b - a) / 1e9}'
}

median() { sort -g | awk '{v[NR] = $1} END{print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

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
if [ ! -f "$FLEET/.complete" ]; then
  rm -rf "$FLEET"
  for i in $(seq -w 1 500); do
    mkdir -p "$FLEET/run-$i"
    "$GEN" $((500000 + (10#$i * 7919) % 200000)) "$FLEET/run-$i/.work_leases.jsonl"
    cp "$SAMPLES/.dispatch_protocol_deferred.jsonl" "$SAMPLES/.state_tasks.json" "$FLEET/run-$i/"
  done
  touch "$FLEET/.complete"
fi
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
fresh_copies() {
  rm -f "$DIR/copy.jsonl" "$DIR/compacted.jsonl" "$DIR"/apply/.work_leases.jsonl.bak.*
  mkdir -p "$DIR/apply"
  cp "$LARGEST" "$DIR/apply/.work_leases.jsonl"
  sync
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
