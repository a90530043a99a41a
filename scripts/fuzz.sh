#!/usr/bin/env bash
# Runs one fuzz target for a while: scripts/fuzz.sh TARGET SECONDS
# Targets: json_parse, journal, snapshot, canonical, ledger, table_record (see fuzz/fuzz_targets).
# Needs cargo-fuzz (cargo install cargo-fuzz) and a nightly toolchain.
# The corpus (fuzz/corpus/TARGET, not committed) is seeded from fixtures/
# and JSONTestSuite; crashes land in fuzz/artifacts/TARGET. Copy a
# reproducer into fixtures/fuzz/ so `cargo test` keeps checking it.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/fuzz.sh TARGET SECONDS}
seconds=${2:?usage: scripts/fuzz.sh TARGET SECONDS}
corpus=fuzz/corpus/$target
if [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus" 2>/dev/null)" ]; then
  mkdir -p "$corpus"
  n=0
  while IFS= read -r -d '' f; do
    n=$((n + 1))
    # libFuzzer's default -max_len is 4096: keep seeds that fit, or their start.
    head -c 4096 "$f" > "$corpus/seed-$n"
  done < <(find fixtures/fidelity fixtures/samples fixtures/verify fixtures/diff fixtures/multimaster fixtures/jsontestsuite/test_parsing -type f -print0)
fi
cd fuzz
exec cargo +nightly fuzz run "$target" "corpus/$target" -- \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1
