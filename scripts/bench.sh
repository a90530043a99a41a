#!/usr/bin/env bash
# Benchmarks leasejournal against `wc -l` on generated journals of 64 MiB,
# 256 MiB and 1 GiB with a warm page cache: wall time (best of RUNS), the
# ratio to `wc -l`, and peak RSS (from /usr/bin/time). `verify` also runs on
# one thread (RAYON_NUM_THREADS=1) to show what the extra cores give. The
# floor (examples/floor.rs) does only what no verifier can skip: read the
# file on every core, split lines, SHA-256 each payload; it bounds what
# `verify` can reach on the machine.
#
# Usage: scripts/bench.sh [DIR] [SIZES_MIB...]
#   DIR defaults to a new temporary directory (needs about 3 GiB free, plus
#   room for one compacted copy); generated journals are kept there and
#   reused. RUNS=3 by default. The ratios are what to compare between
#   machines: on a shared virtual machine the absolute times drift by ±20 %
#   from minute to minute.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
cargo build --release --quiet --bin leasejournal --example genjournal --example floor
BIN=$PWD/target/release/leasejournal
GEN=$PWD/target/release/examples/genjournal
FLOOR=$PWD/target/release/examples/floor
DIR=${1:-$(mktemp -d)}
shift || true
mkdir -p "$DIR"
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(64 256 1024)
RUNS=${RUNS:-3}

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

printf '| size | command | seconds | × wc -l | peak RSS (MiB) |\n|---|---|---|---|---|\n'
for mib in "${SIZES[@]}"; do
  file="$DIR/journal-${mib}MiB.jsonl"
  [ -f "$file" ] || "$GEN" $((mib * 1024 * 1024)) "$file"
  cat "$file" >/dev/null; cat "$file" >/dev/null
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
  row "leasejournal compact --output" "$BIN" compact --output "$DIR/compacted.jsonl" "$file"
done
