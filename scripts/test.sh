#!/usr/bin/env bash
# Sets up, builds, and runs every test: GoogleTest through ctest, then lit.
# Ends with one line "N passed, M failed"; exits non-zero on any failure.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
"$root/scripts/setup.sh" || { echo "0 passed, 1 failed"; exit 1; }

ctest_log=$(mktemp)
(cd build && ctest --output-on-failure -j"$(nproc)") 2>&1 | tee "$ctest_log"
ctest_rc=${PIPESTATUS[0]}
lit_log=$(mktemp)
/usr/lib/llvm-22/bin/lit -sv build/test 2>&1 | tee "$lit_log"
lit_rc=${PIPESTATUS[0]}

# ctest: "100% tests passed, 0 tests failed out of 42"
c_total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$ctest_log" | tail -1)
c_failed=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed.*/\1/p' "$ctest_log" | tail -1)
c_total=${c_total:-0}; c_failed=${c_failed:-0}
# lit: "  Passed: 12", "  Failed: 1" (also Unexpectedly Passed, Unresolved, Timed Out)
l_passed=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' "$lit_log" | tail -1)
l_bad=$(grep -E '^ *(Failed|Unresolved|Unexpectedly Passed|Timed Out) *:' "$lit_log" \
  | awk -F: '{ n += $2 } END { print n + 0 }')
l_passed=${l_passed:-0}; l_bad=${l_bad:-0}
passed=$(( c_total - c_failed + l_passed ))
failed=$(( c_failed + l_bad ))
if [ "$ctest_rc" -ne 0 ] || [ "$lit_rc" -ne 0 ]; then
  [ "$failed" -gt 0 ] || failed=1
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
