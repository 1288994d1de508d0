#!/usr/bin/env bash
# Verifies one plan under /usr/bin/time -v and prints one Markdown table row:
# | name | ranks | stages | memoized | folded | parse | canon | partition | fold | shape | verify | total | peak RSS MB | result |
# Usage: bench/verify_one.sh NAME PLAN.mlir [TIMEOUT_S]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
name="$1"; plan="$2"; limit="${3:-600}"
tmp=$(mktemp -d)
ranks=$(grep -m1 -o 'sizes \[[0-9, ]*\]' "$plan" | tr -dc '0-9 ,' | tr ',' '*' | sed 's/ //g')
ranks=$(( ${ranks:-1} ))
timeout "$limit" /usr/bin/time -v -o "$tmp/time" "$root/build/bin/tv-opt" "$plan" \
  --tv-verify-pipeline="stats-file=$tmp/stats.json" -o /dev/null > "$tmp/log" 2>&1
rc=$?
rss=$(awk -F': ' '/Maximum resident/{printf "%.0f", $2/1024}' "$tmp/time" 2>/dev/null)
if [ -s "$tmp/stats.json" ]; then
  python3 - "$tmp/stats.json" "$name" "$ranks" "${rss:-?}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
f = lambda k: "%.2f" % s.get(k, 0)
print("| %s | %s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
    sys.argv[2], sys.argv[3], s["stages"], s.get("stages_memoized", 0),
    s.get("stages_folded", 0), f("t_parse_s"), f("t_canonicalize_s"),
    f("t_partition_s"), f("t_fold_s"), f("t_shape_reduce_s"),
    f("t_verify_s"), f("t_total_s"), sys.argv[4], s["result"]))
PY
else
  what=$([ $rc -eq 124 ] && echo "timeout ${limit} s" || echo "error (rc $rc)")
  echo "| $name | $ranks | - | - | - | - | - | - | - | - | - | - | ${rss:-?} | $what |"
fi
rm -rf "$tmp"
