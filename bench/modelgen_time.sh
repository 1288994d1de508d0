#!/usr/bin/env bash
# Issue 35: the generator's time and peak memory, and byte-identity, on
# bench/run.sh's generated plans, for two tv-translate binaries side by
# side (e.g. the text-building one and the builder one). Usage:
#   bench/modelgen_time.sh OLD/tv-translate [NEW/tv-translate]
# Prints a Markdown table (seconds, MB) and exits 1 if any output differs.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
old=${1:?usage: $0 OLD_TV_TRANSLATE [NEW_TV_TRANSLATE]}
new=${2:-$root/build/bin/tv-translate}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
differ=0
measure() { # binary out args...: "seconds MB"
  local bin=$1 out=$2; shift 2
  /usr/bin/time -v -o "$tmp/t" "$bin" --import-model-config "$@" -o "$out" 2>/dev/null
  awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; w=s}
              /Maximum resident/{m=$2/1024} END{printf "%.2f %.0f", w, m}' "$tmp/t"
}
echo "| plan | old s | new s | new/old time | old MB | new MB | new/old memory | identical |"
echo "|---|---|---|---|---|---|---|---|"
row() { # label model parallel [extra...]
  local label=$1 model=$2 par=$3; shift 3
  read -r os om < <(measure "$old" "$tmp/a.mlir" "$root/examples/models/$model.json" --parallel "$par" "$@")
  read -r ns nm < <(measure "$new" "$tmp/b.mlir" "$root/examples/models/$model.json" --parallel "$par" "$@")
  local same=yes
  cmp -s "$tmp/a.mlir" "$tmp/b.mlir" || { same=no; differ=$((differ + 1)); }
  echo "| $label | $os | $ns | $(awk -v a="$os" -v b="$ns" 'BEGIN{printf "%.2f", (a > 0 ? b / a : 0)}') | $om | $nm | $(awk -v a="$om" -v b="$nm" 'BEGIN{printf "%.2f", b / a}') | $same |"
}
row "tiny-llama dp2 tp2 pp2 mb2" tiny-llama "dp=2 tp=2 pp=2 mb=2"
row "llama3-8b dp2 tp2 pp2 mb2" llama3-8b "dp=2 tp=2 pp=2 mb=2"
row "tiny-deepseek dp4 tp2 pp2 mb2 ep2 sp zero2" tiny-deepseek "dp=4 tp=2 pp=2 mb=2 ep=2" --sp --zero 2
row "tiny-llama dp2 cp2 ring" tiny-llama "dp=2 cp=2" --cp-comm p2p
row "tiny-llama dp2 tp2 pp2 mb2 distributed optimizer adam" tiny-llama "dp=2 tp=2 pp=2 mb=2" --distributed-optimizer --optimizer adam
row "llama3.2-1b dp2 tp2, 1 layer, distributed optimizer" llama3.2-1b "dp=2 tp=2" --layers 1 --distributed-optimizer
row "llama3-8b dp512" llama3-8b "dp=512"
row "llama3-8b dp64 tp8, 8 layers" llama3-8b "dp=64 tp=8" --layers 8
row "llama3-70b dp16 tp8 pp4 mb32" llama3-70b "dp=16 tp=8 pp=4 mb=32"
row "llama3-70b dp8 cp4 tp8 pp4 mb8 ring" llama3-70b "dp=8 cp=4 tp=8 pp=4 mb=8" --cp-comm p2p
row "deepseek-v3-671b dp32 tp8 pp8 mb16 ep8, 8 layers" deepseek-v3-671b "dp=32 tp=8 pp=8 mb=16 ep=8" --layers 8
row "llama3-405b dp64 tp8 pp16 mb16" llama3-405b "dp=64 tp=8 pp=16 mb=16"
echo
echo "differ: $differ"
[ "$differ" = 0 ]
