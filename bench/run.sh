#!/usr/bin/env bash
# Generates each plan, verifies it under /usr/bin/time -v and appends the rows
# to bench/RESULTS.md (plan, ranks, stages, memoized and folded stages, phase times,
# total, peak RSS, result), with machine, date and commit.
# --quick: the demo, tiny generated plans, llama3-8b (2 and 32 layers, and a
# bug-injected copy) and DeepSeek-V3 at 4 layers (< 5 min).
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
  echo "Each row, the whole run: \`/usr/bin/time -v tv-translate --import-model-config MODEL --parallel P [--layers L]\` (generate),"
  echo "then \`/usr/bin/time -v tv-opt PLAN --tv-stage-partition --tv-shape-reduce --tv-verify=\"stats-file=... drop-stages=true\"\`"
  echo "(its phases, and its wall as verification); whole run = generate + verification; peak RSS of the larger process. Seconds."
  echo
  echo "| plan | ranks | stages | memoized | folded | generate | parse | canon. | partition | fold | shape | verify | verification | whole run | peak RSS MB | result |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
} >> "$out"
row() { # name model parallel layers [timeout] [extra generator args] [bug]
  local name="$1" model="$2" par="$3" layers="$4" limit="${5:-900}" gen="${6:-}" bug="${7:-}"
  local extra=(); [ -n "$layers" ] && extra=(--layers "$layers")
  # shellcheck disable=SC2206
  [ -n "$gen" ] && extra+=($gen)
  if timeout "$limit" /usr/bin/time -v -o "$tmp/gen.time" "$bin/tv-translate" \
       --import-model-config "$root/examples/models/$model.json" \
       --parallel "$par" "${extra[@]}" -o "$tmp/p.mlir" 2> "$tmp/gen.log"; then
    local gen_s gen_rss
    gen_s=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.2f", s}' "$tmp/gen.time")
    gen_rss=$(awk -F': ' '/Maximum resident/{printf "%.0f", $2/1024}' "$tmp/gen.time")
    if [ -n "$bug" ]; then
      # The same plan with one bug on one rank of one layer: must be rejected.
      if ! "$bin/tv-opt" "$tmp/p.mlir" --tv-inject-bug="$bug" -o "$tmp/b.mlir" 2>> "$tmp/gen.log"; then
        echo "| $name | - | - | - | - | - | - | - | - | - | - | - | - | - | - | bug injection failed: $(tail -1 "$tmp/gen.log") |" >> "$out"
        return
      fi
      mv "$tmp/b.mlir" "$tmp/p.mlir"
    fi
    "$root/bench/verify_one.sh" "$name" "$tmp/p.mlir" "$limit" "$gen_s" "$gen_rss" >> "$out"
  else
    echo "| $name | - | - | - | - | - | - | - | - | - | - | - | - | - | - | generation failed or timed out |" >> "$out"
  fi
}
"$root/bench/verify_one.sh" "demo (examples/dp2_pp2_tp2.mlir)" "$root/examples/dp2_pp2_tp2.mlir" >> "$out"
row "tiny-llama dp2 tp2 pp2 mb2" tiny-llama "dp=2 tp=2 pp=2 mb=2" ""
row "llama3-8b dp2 tp2 pp2 mb2, 2 layers" llama3-8b "dp=2 tp=2 pp=2 mb=2" 2
row "llama3-8b dp2 tp2 pp2 mb2, 32 layers" llama3-8b "dp=2 tp=2 pp=2 mb=2" ""
row "llama3-8b dp2 tp2 pp2 mb2, 32 layers, bug rank-scale rank=6 layer=20" llama3-8b "dp=2 tp=2 pp=2 mb=2" "" 900 "" "bug=rank-scale rank=6 layer=20"
row "tiny-deepseek dp4 tp2 pp2 mb2 ep2 sp zero2" tiny-deepseek "dp=4 tp=2 pp=2 mb=2 ep=2" "" 900 "--sp --zero 2"
row "deepseek-v3-671b dp4 tp2 pp2 mb2 ep2 sp zero2, 4 layers" deepseek-v3-671b "dp=4 tp=2 pp=2 mb=2 ep=2" 4 900 "--sp --zero 2"
# Context parallelism (issue 18): 4-rank dp2 x cp2 and 2-rank cp2 blocks.
row "tiny-llama dp2 cp2, ring (p2p)" tiny-llama "dp=2 cp=2" "" 900 "--cp-comm p2p"
row "tiny-llama dp2 cp2, Ulysses (a2a)" tiny-llama "dp=2 cp=2" "" 900 "--cp-comm a2a"
row "tiny-llama cp2, Ulysses (a2a)" tiny-llama "cp=2" "" 900 "--cp-comm a2a"
row "tiny-llama dp2 cp2, all-gathered KV" tiny-llama "dp=2 cp=2" "" 900 "--cp-comm allgather"
row "tiny-llama dp2 tp2 pp2 mb2, distributed optimizer (flat buckets), Adam" tiny-llama "dp=2 tp=2 pp=2 mb=2" "" 900 "--distributed-optimizer --optimizer adam"
row "tiny-llama dp2 tp2 pp2 mb2, distributed optimizer, bug flat-shard-misowned rank=5" tiny-llama "dp=2 tp=2 pp=2 mb=2" "" 900 "--distributed-optimizer --optimizer adam" "bug=flat-shard-misowned rank=5"
row "llama3.2-1b dp2 tp2, 1 layer, distributed optimizer (full-size buckets)" llama3.2-1b "dp=2 tp=2" 1 900 "--distributed-optimizer"
if [ $quick = 0 ]; then
  row "llama3-8b dp8 tp2, distributed optimizer, Adam (full size)" llama3-8b "dp=8 tp=2" "" 900 "--distributed-optimizer --optimizer adam"
  row "llama3-70b dp16 tp8 pp4 mb32, distributed optimizer, overlapped, dynamic loss scale" llama3-70b "dp=16 tp=8 pp=4 mb=32" "" 900 "--distributed-optimizer --overlap-grad-reduce --overlap-param-gather --loss-scale dynamic"
  row "llama3-8b dp512" llama3-8b "dp=512" ""
  row "llama3-8b dp512, bug rank-scale rank=301 layer=17" llama3-8b "dp=512" "" 900 "" "bug=rank-scale rank=301 layer=17"
  row "llama3-8b dp64 tp8, 8 layers" llama3-8b "dp=64 tp=8" 8
  row "llama3-8b dp64 tp8, 8 layers, bug rank-scale rank=301 layer=5" llama3-8b "dp=64 tp=8" 8 900 "" "bug=rank-scale rank=301 layer=5"
  row "llama3-70b dp16 tp8 pp4 mb32" llama3-70b "dp=16 tp=8 pp=4 mb=32" ""
  row "llama3-70b dp16 tp8 pp4 mb32, bug rank-scale rank=301 layer=25" llama3-70b "dp=16 tp=8 pp=4 mb=32" "" 900 "" "bug=rank-scale rank=301 layer=25"
  row "llama3-70b dp8 cp4 tp8 pp4 mb8, all-gathered KV" llama3-70b "dp=8 cp=4 tp=8 pp=4 mb=8" "" 900 "--cp-comm allgather"
  row "llama3-70b dp8 cp4 tp8 pp4 mb8, all-gathered KV, bug cp-mask-misaligned" llama3-70b "dp=8 cp=4 tp=8 pp=4 mb=8" "" 900 "--cp-comm allgather" "bug=cp-mask-misaligned"
  row "llama3-70b dp8 cp4 tp8 pp4 mb8, ring (p2p)" llama3-70b "dp=8 cp=4 tp=8 pp=4 mb=8" "" 900 "--cp-comm p2p"
  row "llama3-70b dp8 cp4 tp8 pp4 mb8, ring (p2p), bug ring-missing-rescale rank=72 layer=40" llama3-70b "dp=8 cp=4 tp=8 pp=4 mb=8" "" 900 "--cp-comm p2p" "bug=ring-missing-rescale rank=72 layer=40"
  # The two largest plans at their full mesh and micro-batches with one layer
  # per pipeline stage, then whole (each generates in 3 to 5 minutes).
  row "llama3-405b dp64 tp8 pp16 mb16, 16 layers" llama3-405b "dp=64 tp=8 pp=16 mb=16" 16
  row "deepseek-v3-671b dp32 tp8 pp8 mb16 ep8, 8 layers" deepseek-v3-671b "dp=32 tp=8 pp=8 mb=16 ep=8" 8
  row "llama3-405b dp64 tp8 pp16 mb16" llama3-405b "dp=64 tp=8 pp=16 mb=16" "" 1500
  row "llama3-405b dp64 tp8 pp16 mb16, bug rank-scale rank=3001 layer=60" llama3-405b "dp=64 tp=8 pp=16 mb=16" "" 1500 "" "bug=rank-scale rank=3001 layer=60"
  row "deepseek-v3-671b dp32 tp8 pp8 mb16 ep8" deepseek-v3-671b "dp=32 tp=8 pp=8 mb=16 ep=8" "" 1500
  row "deepseek-v3-671b dp32 tp8 pp8 mb16 ep8, bug rank-scale rank=301 layer=40" deepseek-v3-671b "dp=32 tp=8 pp=8 mb=16 ep=8" "" 1500 "" "bug=rank-scale rank=301 layer=40"
fi
rm -rf "$tmp"
