#!/usr/bin/env bash
# Sets up and builds like scripts/test.sh, then verifies the built-in example
# plan (dp2 pp2 tp2, 2 micro-batches, 2 layers, hidden 128) and prints the
# verdict. Pass another plan as the first argument to verify it instead.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# Set-up reports its progress on stderr, so that the verdict is stdout alone.
"$root/scripts/setup.sh" >&2
plan="${1:-$root/examples/dp2_pp2_tp2.mlir}"
[ -f "$plan" ] || plan="$root/examples/tp_mlp_forward.mlir"
echo "tv: verifying $plan"
exec "$root/build/bin/tv-opt" "$plan" \
  --tv-verify-pipeline -o /dev/null
