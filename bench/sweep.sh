#!/usr/bin/env bash
# Growth sweeps (issue 5): ratios into bench/RESULTS.md, plot into bench/sweep.svg.
exec python3 "$(cd "$(dirname "$0")" && pwd)/sweep.py" "$@"
