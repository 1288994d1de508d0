#!/usr/bin/env bash
# Times import + verification of the real nnScaler plans under /usr/bin/time
# -v, one process pipe per case, side by side with the reference tool's wall
# time on the same plan (../shared/plans/nnscaler/more/TIMINGS.md, same kind
# of machine), and appends a table to bench/RESULTS.md:
#   - the demo and br1..br14 (test/Import/NnScaler/Inputs);
#   - the eleven plans of ../shared/plans/nnscaler/more, when present.
# Usage: bench/nnscaler.sh [--quick]   (--quick: the 8- and 64-rank plans only)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
inputs="$root/test/Import/NnScaler/Inputs"
more="$root/../shared/plans/nnscaler/more"
bin="$root/build/bin"
out="$root/bench/RESULTS.md"
quick=0
[ "${1:-}" = "--quick" ] && quick=1
tmp=$(mktemp -d)
machine="$(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -m)"
commit=$(git -C "$root" rev-parse --short HEAD)
# The reference's wall time in seconds (TIMINGS.md; br cases: 4.2-7.0 s).
declare -A ref=(
  [demo]=8.9 [br]=4.2
  [llama3_dp2pp2tp2nm2_ly2_h32_hi4096_sq128]=9.6
  [llama3_dp2pp2tp2nm2_ly2_h32_hi1024_sq128]=8.3
  [llama3_dp2pp2tp2nm2_ly2_h32_hi16384_sq128]=7.7
  [llama3_dp2pp2tp2nm2_ly2_h8_hi4096_sq128]=7.6
  [moe_dp2pp2tp2nm2_gbs1024_ly2_h16_hi512_sq128_a2_r16]=9.0
  [moe_dp2pp2tp2nm2_gbs1024_ly4_h16_hi512_sq128_a2_r16]=18.5
  [llama3_dp2pp4tp8nm8_ly2_h32_hi4096_sq128]=58.1
  [llama3_dp16pp4tp8nm8_ly2_h32_hi4096_sq128]=470
  [llama3_dp16pp4tp8nm8_ly3_h32_hi4096_sq128]=761
  [llama3_dp32pp4tp8nm8_ly2_h32_hi4096_sq128]=1133
  [moe_dp16pp2tp4nm16_gbs1024_ly2_h16_hi512_sq128_a6_r64]=701
)
{
  echo
  echo "### nnScaler plans: import + verify ($(date -u +%Y-%m-%d), commit $commit, $machine)"
  echo
  echo "Command per case: \`gunzip -c CASE.json.gz > /tmp/c.json; /usr/bin/time -v sh -c 'tv-translate --import-nnscaler-json /tmp/c.json | tv-opt --tv-verify-pipeline -o /dev/null'\`"
  echo "(decompression excluded; wall and peak RSS of the whole pipe, the larger of its two processes)."
  echo "Reference: VERDICT's wall time on the same plan (../shared/plans/nnscaler/more/TIMINGS.md)."
  echo
  echo "| case | result | wall s | peak RSS MB | reference wall s | speed-up |"
  echo "|---|---|---|---|---|---|"
} >> "$out"
run() { # name, gz file, reference seconds
  gunzip -c "$2" > "$tmp/c.json"
  /usr/bin/time -v -o "$tmp/time" sh -c \
    "'$bin/tv-translate' --import-nnscaler-json '$tmp/c.json' | '$bin/tv-opt' --tv-verify-pipeline -o /dev/null" \
    > "$tmp/log" 2>&1
  # The verifier's verdict first; else the first error (a warning of the
  # import, such as br14's derived lineages, is no result).
  result=$(grep -oE "tv-verify: (proven|counterexample|unknown)" "$tmp/log" | head -1)
  [ -n "$result" ] || result=$(grep -E "error: " "$tmp/log" |
    grep -oE "plan deadlocks|nnscaler import|op result" | head -1)
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/{print $2}' "$tmp/time" | awk -F: '{ if (NF==2) print $1*60+$2; else print $1*3600+$2*60+$3 }')
  rss=$(awk -F': ' '/Maximum resident/{printf "%.0f", $2/1024}' "$tmp/time")
  speed=$(awk -v r="$3" -v w="$wall" 'BEGIN { if (w > 0) printf "%.0fx", r / w; else print "?" }')
  echo "| $1 | ${result:-?} | $wall | $rss | $3 | $speed |" >> "$out"
}
for c in demo br1 br2 br3 br4 br5 br6 br7 br8 br9 br10 br11 br12 br13 br14; do
  r=${ref[demo]}; [ "$c" = demo ] || r=${ref[br]}
  run "$c" "$inputs/$c.json.gz" "$r"
done
if [ -d "$more" ]; then
  for f in "$more"/*.json.gz; do
    name=$(basename "$f" .json.gz)
    if [ $quick = 1 ] && [[ "$name" == *dp16* || "$name" == *dp32* ]]; then
      continue
    fi
    run "$name" "$f" "${ref[$name]:-?}"
  done
fi
rm -rf "$tmp"
