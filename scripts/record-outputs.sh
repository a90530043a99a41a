#!/usr/bin/env bash
# Records what every command prints (stdout, stderr, exit status; table and
# JSON; `--now` fixed) on every shipped fixture and on a generated 64 MiB
# journal, and what the writing commands leave behind (run on copies), one
# file per run under OUT. Run it before and after a change that must not
# change behaviour, then `diff -r BEFORE AFTER`.
#
# Usage: scripts/record-outputs.sh OUT [BIN]
#   BIN defaults to target/release/leasejournal, built first. The 64 MiB
#   journal is generated once into $LJ_RECORD_CACHE (default
#   /tmp/leasejournal-record) and reused; copies for writing runs go to
#   $LJ_RECORD_CACHE/work, a fixed path so that paths in the output match.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: scripts/record-outputs.sh OUT [BIN]}
if [ -n "${2:-}" ]; then
  BIN=$(realpath "$2")
else
  cargo build --release --quiet --bin leasejournal
  BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/leasejournal
fi
CACHE=${LJ_RECORD_CACHE:-/tmp/leasejournal-record}
NOW=1754600000
mkdir -p "$OUT" "$CACHE"
BIG=$CACHE/journal-64MiB.jsonl
[ -f "$BIG" ] || cargo run --release --quiet --example genjournal -- $((64 << 20)) "$BIG"
export COLUMNS=100 NO_COLOR=1

# run NAME ARGS...: one record of one command
run() {
  local name=$1
  shift
  local file="$OUT/$name"
  {
    set +e
    "$BIN" "$@" >"$file.stdout" 2>"$file.stderr" </dev/null
    echo "$?" >"$file.status"
    set -e
  }
}

# apply NAME SOURCE ARGS...: a writing command on a fresh copy of SOURCE;
# records the output and the bytes of every file the copy holds afterwards
apply() {
  local name=$1 src=$2
  shift 2
  local work=$CACHE/work
  rm -rf "$work"
  mkdir -p "$work"
  cp -a "$src" "$work/"
  local target
  target="$work/$(basename "$src")"
  run "$name" "$@" "$target"
  (cd "$work" && find . -type f | sort | xargs -r sha256sum) >"$OUT/$name.files"
}

readers() {
  local tag=$1 path=$2
  for format in table json; do
    run "$tag.inspect.$format" inspect --now "$NOW" --format "$format" "$path"
    run "$tag.verify.$format" verify --now "$NOW" --format "$format" "$path"
    run "$tag.recover.$format" recover --now "$NOW" --format "$format" "$path"
    run "$tag.discard.$format" recover --discard --now "$NOW" --format "$format" "$path"
    run "$tag.migrate.$format" migrate --now "$NOW" --format "$format" "$path"
    run "$tag.rewrite.$format" migrate --rewrite --now "$NOW" --format "$format" "$path"
    run "$tag.compact.$format" compact --format "$format" "$path"
    run "$tag.compact-drop.$format" compact --drop-completed --format "$format" "$path"
    run "$tag.repair.$format" repair --format "$format" "$path"
  done
  run "$tag.inspect-all.table" inspect --now "$NOW" --all "$path"
  run "$tag.verify-strict.table" verify --now "$NOW" --strict "$path"
  for format in table json; do
    run "$tag.workers.$format" inspect --workers --now "$NOW" --format "$format" "$path"
    run "$tag.timeline.$format" inspect --timeline --format "$format" "$path"
  done
  run "$tag.records.ndjson" inspect --records --format ndjson --now "$NOW" "$path"
  run "$tag.records-end.ndjson" inspect --records --end-state --format ndjson --now "$NOW" "$path"
}

writers() {
  local tag=$1 path=$2
  apply "$tag.apply-repair" "$path" repair --apply --no-backup --format json
  apply "$tag.apply-compact" "$path" compact --apply --no-backup
  apply "$tag.apply-compact-drop" "$path" compact --apply --drop-completed --drop-hidden --no-backup --format json
  apply "$tag.apply-migrate" "$path" migrate --apply --no-backup --now "$NOW"
  apply "$tag.apply-rewrite" "$path" migrate --rewrite --apply --no-backup --now "$NOW" --format json
  apply "$tag.apply-discard" "$path" recover --discard --all --apply --no-backup --now "$NOW" --export /dev/null
}

for command in "" inspect verify explain repair recover migrate compact diff completions; do
  run "help.${command:-top}" $command --help
done
for format in table json; do
  run "explain.list.$format" explain --list --format "$format"
done
for code in $("$BIN" explain --list --format json | grep -o '"code": *"[a-z-]*"' | sed 's/.*"\([a-z-]*\)"$/\1/'); do
  run "explain.$code" explain "$code"
  run "explain.$code.json" explain --format json "$code"
done

for dir in fixtures/verify/* fixtures/runbook/run1; do
  tag=$(echo "$dir" | tr / _)
  readers "$tag" "$dir"
  writers "$tag" "$dir"
done
for file in fixtures/samples/*.jsonl fixtures/samples/*.json fixtures/disagreements/*/* fixtures/diff/*; do
  tag=$(echo "$file" | tr / _)
  readers "$tag" "$file"
  writers "$tag" "$file"
done
for case in fixtures/fidelity/[jw]*; do
  tag=$(echo "$case" | tr / _)
  readers "$tag" "$case/journal.jsonl"
  writers "$tag" "$case/journal.jsonl"
  [ -f "$case/compacted.jsonl" ] && for format in table json; do
    run "$tag.diff-compacted.$format" diff --format "$format" "$case/journal.jsonl" "$case/compacted.jsonl"
  done
done
for case in fixtures/fidelity/s*; do
  tag=$(echo "$case" | tr / _)
  for format in table json; do
    run "$tag.inspect.$format" inspect --now "$NOW" --format "$format" "$case/state.json"
    run "$tag.verify.$format" verify --now "$NOW" --format "$format" "$case/state.json"
    run "$tag.migrate.$format" migrate --now "$NOW" --format "$format" "$case/state.json"
  done
  apply "$tag.apply-migrate" "$case/state.json" migrate --apply --no-backup --now "$NOW"
done
for format in table json; do
  run "diff.ab.$format" diff --format "$format" fixtures/diff/a.jsonl fixtures/diff/b.jsonl
  run "diff.ac.$format" diff --format "$format" fixtures/diff/a.jsonl fixtures/diff/c.jsonl
  run "diff.state.$format" diff --format "$format" fixtures/diff/a.state.json fixtures/diff/b.state.json
  run "diff.dirs.$format" diff --format "$format" fixtures/verify/double-lease fixtures/verify/orphan-done
done
verdicts=0
for file in fixtures/jsontestsuite/test_parsing/*.json; do
  run "jsontestsuite.$(basename "$file")" verify --kind snapshot --format json --now "$NOW" "$file"
  verdicts=$((verdicts + 1))
done
readers big "$BIG"
apply big.apply-compact "$BIG" compact --apply --no-backup --format json
echo "recorded $(find "$OUT" -name '*.status' | wc -l) runs ($verdicts JSONTestSuite files) in $OUT"
