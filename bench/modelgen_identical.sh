#!/usr/bin/env bash
# Issue 35: the generator's output must stay byte-identical when its code
# changes form (a split, text to builders). Generates every model config of
# examples/models and test/ModelGen/Inputs under 4 parallelisms x 4 feature
# sets, and the tiny models under 10 more option sets (the options the grid
# leaves out), with two tv-translate binaries and compares the outputs,
# locations included (refusals included). Usage: bench/modelgen_identical.sh OLD/tv-translate [NEW/tv-translate]
# (NEW defaults to build/bin/tv-translate). Exit 1 on any difference.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
old=${1:?usage: $0 OLD_TV_TRANSLATE [NEW_TV_TRANSLATE]}
new=${2:-$root/build/bin/tv-translate}
n=0 generated=0 differ=0
# compare CONFIG ARGS...: both binaries' outputs (or errors) on one
# configuration.
compare() {
  local cfg=$1; shift
  n=$((n + 1))
  a=$("$old" --import-model-config "$cfg" "$@" 2>&1 | md5sum)
  b=$("$new" --import-model-config "$cfg" "$@" 2>&1 | md5sum)
  "$new" --import-model-config "$cfg" "$@" -o /dev/null 2>/dev/null &&
    generated=$((generated + 1))
  if [ "$a" != "$b" ]; then
    differ=$((differ + 1))
    echo "differs: $(basename "$cfg") $*"
  fi
}
for cfg in "$root"/examples/models/*.json "$root"/test/ModelGen/Inputs/grid-*.json; do
  for par in "dp=2 tp=2 pp=2 mb=2" "dp=2 cp=2" "tp=2 pp=2 mb=4 vpp=2" "dp=4 ep=2 mb=2"; do
    for extra in "" "--sp --zero 2" "--distributed-optimizer --optimizer adam" "--cp-comm p2p"; do
      # shellcheck disable=SC2086
      compare "$cfg" --parallel "$par" $extra
    done
  done
done
# The options the grid above leaves out, on the tiny models.
for cfg in "$root"/examples/models/tiny-*.json; do
  for opts in "--parallel dp=2,tp=2,pp=2,mb=2 --gather-logits --traced-norm" \
              "--parallel dp=2,tp=2,pp=2,mb=2 --zero 3" \
              "--parallel dp=2,tp=2,pp=2,mb=2 --zero 1 --optimizer adam" \
              "--parallel dp=4,ep=2,mb=2 --loss-scaling per-rank" \
              "--parallel dp=2,cp=2 --cp-comm p2p --cp-load-balance" \
              "--parallel dp=2,cp=2 --cp-comm a2a" \
              "--parallel dp=2,cp=2 --cp-comm allgather" \
              "--parallel dp=2,tp=2,pp=2,mb=2 --make-vocab-size-divisible-by 4" \
              "--parallel dp=2,tp=2 --distributed-optimizer --ddp-bucket-size 500 --seq 16 --micro-batch-size 2" \
              "--parallel tp=2,pp=2,mb=4,vpp=2 --sp --layers 4"; do
    # The parallelism's commas stand for spaces (one word in the list).
    read -r -a args <<< "$opts"
    args[1]=${args[1]//,/ }
    compare "$cfg" "${args[@]}"
  done
done
echo "$n configurations ($generated generated, the rest refused): $differ differ"
[ "$differ" = 0 ]
