#!/usr/bin/env bash
# Verifies one plan with the three-pass command under /usr/bin/time -v and
# prints one Markdown table row:
# | name | ranks | stages | memoized | folded | generate | parse | canon | partition | fold | shape | verify | verification | whole run | peak RSS MB | result |
# GEN_S and GEN_RSS_MB are the generation's wall time and peak RSS ("-" when
# the plan was not generated); the whole run is their sum with verification,
# the peak RSS the larger of the two processes'.
# Usage: bench/verify_one.sh NAME PLAN.mlir [TIMEOUT_S] [GEN_S] [GEN_RSS_MB]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
name="$1"; plan="$2"; limit="${3:-600}"; gen_s="${4:--}"; gen_rss="${5:-0}"
tmp=$(mktemp -d)
ranks=$(grep -m1 -o 'sizes \[[0-9, ]*\]' "$plan" | tr -dc '0-9 ,' | tr ',' '*' | sed 's/ //g')
ranks=$(( ${ranks:-1} ))
# The command users run: tv-opt --tv-stage-partition --tv-shape-reduce
# --tv-verify (which folds symmetric stages without being asked).
timeout "$limit" /usr/bin/time -v -o "$tmp/time" "$root/build/bin/tv-opt" "$plan" \
  --tv-stage-partition --tv-shape-reduce \
  --tv-verify="stats-file=$tmp/stats.json drop-stages=true" -o /dev/null > "$tmp/log" 2>&1
rc=$?
rss=$(awk -F': ' '/Maximum resident/{printf "%.0f", $2/1024}' "$tmp/time" 2>/dev/null)
wall=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.2f", s}' "$tmp/time" 2>/dev/null)
if [ -s "$tmp/stats.json" ]; then
  python3 - "$tmp/stats.json" "$name" "$ranks" "${rss:-0}" "$gen_s" "$gen_rss" "${wall:-0}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
f = lambda k: "%.2f" % s.get(k, 0)
gen, wall = sys.argv[5], float(sys.argv[7])
whole = wall + (float(gen) if gen != "-" else 0.0)
rss = max(int(sys.argv[4]), int(float(sys.argv[6])))
print("| %s | %s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %.2f | %.2f | %d | %s |" % (
    sys.argv[2], sys.argv[3], s["stages"], s.get("stages_memoized", 0),
    s.get("stages_folded", 0), gen, f("t_parse_s"), f("t_canonicalize_s"),
    f("t_partition_s"), f("t_fold_s"), f("t_shape_reduce_s"),
    f("t_verify_s"), wall, whole, rss, s["result"]))
PY
else
  what=$([ $rc -eq 124 ] && echo "timeout ${limit} s" || echo "error (rc $rc)")
  echo "| $name | $ranks | - | - | - | $gen_s | - | - | - | - | - | - | - | - | ${rss:-?} | $what |"
fi
rm -rf "$tmp"
