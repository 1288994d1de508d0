#!/usr/bin/env bash
# Relation inference (issue 34): each plan verified with its own lineages
# and with its intermediate lineages removed and inferred instead
# (--tv-infer-lineage=drop-intermediate), side by side in one run, through
# the README's three-pass command. Whole-process wall time and peak RSS
# (best of 3). Appends nothing: copy the table into bench/RESULTS.md with
# the date, the commit and the machine. The 8-rank plans of more/ (llama
# and MoE) are the ones the issue names.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build/bin"
shared="${SHARED:-$root/../shared}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # file, extra pass -> "seconds rssMB verdict"
  local best=999999 rss=0 verdict=""
  for _ in 1 2 3; do
    /usr/bin/time -f "%e %M" -o "$tmp/t" "$bin/tv-opt" "$1" $2 \
      --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null \
      2>"$tmp/err" >/dev/null
    verdict=$(sed -n 's/^tv-verdict: //p' "$tmp/err" | tail -1)
    read -r s m < "$tmp/t"
    if awk "BEGIN{exit !($s < $best)}"; then best=$s; rss=$((m / 1024)); fi
  done
  echo "$best $rss $verdict"
}
plans=()
for f in "$root"/examples/*.mlir; do plans+=("$f"); done
if [ -d "$shared/plans/nnscaler" ]; then
  "$bin/tv-translate" --import-nnscaler-json \
    "$shared/plans/nnscaler/demo_llama3_dp2pp2tp2nm2_ly2_sq256.json" -o "$tmp/demo.mlir"
  plans+=("$tmp/demo.mlir")
  for g in "$shared"/plans/nnscaler/more/{llama3,moe}_dp2pp2tp2*.json.gz; do
    n=$(basename "$g" .json.gz)
    gunzip -c "$g" > "$tmp/c.json"
    "$bin/tv-translate" --import-nnscaler-json "$tmp/c.json" -o "$tmp/$n.mlir" && plans+=("$tmp/$n.mlir")
  done
fi
echo "| plan | given: s, MB, verdict | inferred: s, MB, verdict | time ratio |"
echo "|---|---|---|---|"
for p in "${plans[@]}"; do
  read -r s1 m1 v1 <<< "$(run "$p" "")"
  read -r s2 m2 v2 <<< "$(run "$p" "--tv-infer-lineage=drop-intermediate")"
  ratio=$(awk "BEGIN{printf \"%.2f\", ($s2 > 0 ? $s2 : 0.01) / ($s1 > 0 ? $s1 : 0.01)}")
  echo "| $(basename "$p" .mlir) | $s1, $m1, $v1 | $s2, $m2, $v2 | $ratio |"
done
