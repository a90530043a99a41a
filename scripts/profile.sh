#!/usr/bin/env bash
# Where a command's CPU goes, by phase and by function: samples the
# command with `perf record -e cpu-clock` (a software clock: it works on a
# virtual machine without a PMU, where `perf stat -e instructions` says
# "not supported") and sums the samples' self time into the phases of a
# scan. Prints two tables: the phases, then the functions above 0.5 %.
# docs/verify-profile.md holds a run of it and how to read it.
#
# Usage: scripts/profile.sh [-o PERF_DATA] -- COMMAND ARGS...
#   e.g. scripts/profile.sh -- target/release/leasejournal verify --quiet J
#   PERF_DATA defaults to a temporary file, removed afterwards. The release
#   profile keeps line tables, so the functions have names; inlined
#   functions are counted in the function they were inlined into (the
#   replay's per-line steps show as `scan::take_block`).
#
# valgrind --tool=callgrind counts instructions instead (repeatable, but
# valgrind has no SHA-NI, so sha2 falls back to its portable code and the
# hashing looks three times its real share):
#   RAYON_NUM_THREADS=1 valgrind --tool=callgrind COMMAND ARGS...
set -euo pipefail
DATA=""
if [ "${1:-}" = "-o" ]; then DATA=$2; shift 2; fi
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "usage: scripts/profile.sh [-o PERF_DATA] -- COMMAND ARGS..." >&2; exit 2; }
command -v perf >/dev/null || { echo "needs perf (apt-get install linux-perf)" >&2; exit 2; }
KEEP=${DATA:+1}
DATA=${DATA:-$(mktemp)}
perf record -q -e cpu-clock -F 4000 -o "$DATA" -- "$@" >/dev/null 2>&1 || true
perf report -i "$DATA" --no-children --sort symbol --stdio 2>/dev/null |
  awk '
    /^ +[0-9.]+%/ {
      pct = $1; sub(/%/, "", pct)
      # the symbol: everything after "[.] " or "[k] "
      sym = $0; sub(/^.*\[[.k]\] /, "", sym); sub(/ +-? +-? *$/, "", sym)
      kernel = ($0 ~ /\[k\]/)
      phase = "other"
      if (sym ~ /sha2::|of_canonical/) phase = "hashing (SHA-256 of payloads)"
      else if (kernel && sym ~ /copy_to_iter|copy_page_to_iter|filemap|pread|vfs_read|_copy_to_user|rep_movs/) phase = "reading (kernel copy from the page cache)"
      else if (kernel && sym ~ /fault|clear_page|page|folio|pte|mm_|lru|memcg|zap|unmap|alloc_pages|__rmqueue/) phase = "memory (page faults, kernel)"
      else if (kernel) phase = "kernel, other (scheduling, futex, syscalls)"
      else if (sym ~ /take_block|idset::|replay::|hashbrown::|foldhash|settle|apply_at|Replay/) phase = "replay (in order, one core)"
      else if (sym ~ /classify|Cursor::|json::|float|dec2flt|ryu::|from_utf8|FromStr|memchr|lines::split|is_float_repr|lemire/) phase = "parsing and canonical-form checks"
      else if (sym ~ /findings::|JournalChecks|Observer|verify::|forecast|resume::/) phase = "checks and forecast"
      else if (sym ~ /memmove|memcpy|memset|memcmp|malloc|free|_int_|realloc|drop_in_place|consolidate|unlink_chunk/) phase = "allocation, copies, compares (libc)"
      else if (sym ~ /rayon|crossbeam|sched_yield|futex|pthread/) phase = "threads (rayon)"
      sum[phase] += pct
      if (pct >= 0.5) fn[++n] = sprintf("| %s | %s | %.2f |", sym, phase, pct)
    }
    END {
      print "| phase | share of samples (%) |"
      print "|---|---|"
      for (p in sum) printf "| %s | %.1f |\n", p, sum[p] | "sort -t\"|\" -k3 -g -r"
      close("sort -t\"|\" -k3 -g -r")
      print ""
      print "| function (self time) | phase | share of samples (%) |"
      print "|---|---|---|"
      for (i = 1; i <= n; i++) print fn[i]
    }'
[ -n "$KEEP" ] || rm -f "$DATA"
