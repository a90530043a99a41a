#!/usr/bin/env bash
# Builds the release binary as users get it (default features) and fails if
# it holds any test hook: the failpoint variable or a failpoint's name.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin leasejournal
BIN=target/release/leasejournal
found=0
for needle in LEASEJOURNAL_FAILPOINTS backup-written before-rename after-rename \
  temp-written tail-cut before-append check-thread backup-link; do
  if grep -q -a -F -- "$needle" "$BIN"; then
    echo "release binary holds the test hook string '$needle'" >&2
    found=1
  fi
done
[ "$found" = 0 ] && echo "release binary: no test hooks"
exit "$found"
