#!/usr/bin/env bash
# Issue 35: the generator's output must stay byte-identical when its code
# changes form (a split, text to builders). Generates every model config of
# examples/models and test/ModelGen/Inputs under 4 parallelisms x 4 feature
# sets with two tv-translate binaries and compares the outputs (refusals
# included). Usage: bench/modelgen_identical.sh OLD/tv-translate [NEW/tv-translate]
# (NEW defaults to build/bin/tv-translate). Exit 1 on any difference.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
old=${1:?usage: $0 OLD_TV_TRANSLATE [NEW_TV_TRANSLATE]}
new=${2:-$root/build/bin/tv-translate}
n=0 generated=0 differ=0
for cfg in "$root"/examples/models/*.json "$root"/test/ModelGen/Inputs/grid-*.json; do
  for par in "dp=2 tp=2 pp=2 mb=2" "dp=2 cp=2" "tp=2 pp=2 mb=4 vpp=2" "dp=4 ep=2 mb=2"; do
    for extra in "" "--sp --zero 2" "--distributed-optimizer --optimizer adam" "--cp-comm p2p"; do
      n=$((n + 1))
      # shellcheck disable=SC2086
      a=$("$old" --import-model-config "$cfg" --parallel "$par" $extra 2>&1 | md5sum)
      # shellcheck disable=SC2086
      b=$("$new" --import-model-config "$cfg" --parallel "$par" $extra 2>&1 | md5sum)
      # shellcheck disable=SC2086
      "$new" --import-model-config "$cfg" --parallel "$par" $extra -o /dev/null 2>/dev/null &&
        generated=$((generated + 1))
      if [ "$a" != "$b" ]; then
        differ=$((differ + 1))
        echo "differs: $(basename "$cfg") --parallel \"$par\" $extra"
      fi
    done
  done
done
echo "$n configurations ($generated generated, the rest refused): $differ differ"
[ "$differ" = 0 ]
