#!/usr/bin/env bash
# Times import + verification of the real nnScaler plans (demo and br1-br14)
# under /usr/bin/time -v, one process per case (import piped into the whole
# pipeline), and appends a table to bench/RESULTS.md.
# Usage: bench/nnscaler.sh [DIR_WITH_JSON_GZ]   (default: test/NnScaler/Inputs)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/test/NnScaler/Inputs}"
bin="$root/build/bin"
out="$root/bench/RESULTS.md"
tmp=$(mktemp -d)
machine="$(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -m)"
commit=$(git -C "$root" rev-parse --short HEAD)
{
  echo
  echo "### nnScaler plans: import + verify ($(date -u +%Y-%m-%d), commit $commit, $machine)"
  echo
  echo "Command per case: \`gunzip -c CASE.json.gz > /tmp/c.json; /usr/bin/time -v sh -c 'tv-translate --import-nnscaler-json /tmp/c.json | tv-opt --tv-verify-pipeline -o /dev/null'\`"
  echo "(decompression excluded; wall and peak RSS of the whole pipe)."
  echo
  echo "| case | result | wall s | peak RSS MB |"
  echo "|---|---|---|---|"
} >> "$out"
for c in demo br1 br2 br3 br4 br5 br6 br7 br8 br9 br10 br11 br12 br13 br14; do
  gunzip -c "$dir/$c.json.gz" > "$tmp/c.json"
  /usr/bin/time -v -o "$tmp/time" sh -c \
    "'$bin/tv-translate' --import-nnscaler-json '$tmp/c.json' | '$bin/tv-opt' --tv-verify-pipeline -o /dev/null" \
    > "$tmp/log" 2>&1
  result=$(grep -oE "tv-verify: (proven|counterexample|unknown)|plan deadlocks|nnscaler import|op result" "$tmp/log" | head -1)
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/{print $2}' "$tmp/time" | awk -F: '{ if (NF==2) print $1*60+$2; else print $1*3600+$2*60+$3 }')
  rss=$(awk -F': ' '/Maximum resident/{printf "%.0f", $2/1024}' "$tmp/time")
  echo "| $c | ${result:-?} | $wall | $rss |" >> "$out"
done
rm -rf "$tmp"
