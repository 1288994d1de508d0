#!/usr/bin/env bash
# Generates each plan, verifies it under /usr/bin/time -v and appends the rows
# to bench/RESULTS.md (plan, ranks, stages, memoized stages, phase times,
# total, peak RSS, result), with machine, date and commit.
# --quick: the demo, tiny generated plans and llama3-8b at 2 layers (< 5 min).
# Without it: the issue's large plans too, each with a 15-minute limit.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build/bin"
out="$root/bench/RESULTS.md"
tmp=$(mktemp -d)
quick=0; [ "${1:-}" = "--quick" ] && quick=1
machine="$(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -m)"
{
  echo
  echo "### bench/run.sh$([ $quick = 1 ] && echo ' --quick') ($(date -u +%Y-%m-%d), commit $(git -C "$root" rev-parse --short HEAD), $machine)"
  echo
  echo "Each row: \`tv-translate --import-model-config MODEL --parallel P [--layers L]\` (generation excluded), then"
  echo "\`/usr/bin/time -v tv-opt PLAN --tv-verify-pipeline=\"stats-file=...\"\`; times in seconds."
  echo
  echo "| plan | ranks | stages | memoized | parse | canon. | partition | shape | verify | total | peak RSS MB | result |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
} >> "$out"
row() { # name model parallel layers [timeout]
  local name="$1" model="$2" par="$3" layers="$4" limit="${5:-900}"
  local extra=(); [ -n "$layers" ] && extra=(--layers "$layers")
  if timeout "$limit" "$bin/tv-translate" --import-model-config "$root/examples/models/$model.json" \
       --parallel "$par" "${extra[@]}" -o "$tmp/p.mlir" 2> "$tmp/gen.log"; then
    "$root/bench/verify_one.sh" "$name" "$tmp/p.mlir" "$limit" >> "$out"
  else
    echo "| $name | - | - | - | - | - | - | - | - | - | - | generation failed or timed out |" >> "$out"
  fi
}
"$root/bench/verify_one.sh" "demo (examples/dp2_pp2_tp2.mlir)" "$root/examples/dp2_pp2_tp2.mlir" >> "$out"
row "tiny-llama dp2 tp2 pp2 mb2" tiny-llama "dp=2 tp=2 pp=2 mb=2" ""
row "llama3-8b dp2 tp2 pp2 mb2, 2 layers" llama3-8b "dp=2 tp=2 pp=2 mb=2" 2
row "llama3-8b dp2 tp2 pp2 mb2, 32 layers" llama3-8b "dp=2 tp=2 pp=2 mb=2" ""
if [ $quick = 0 ]; then
  row "llama3-8b dp512" llama3-8b "dp=512" ""
  row "llama3-70b dp16 tp8 pp4 mb32" llama3-70b "dp=16 tp=8 pp=4 mb=32" ""
  row "llama3-405b dp64 tp8 pp16 mb16" llama3-405b "dp=64 tp=8 pp=16 mb=16" ""
fi
rm -rf "$tmp"
