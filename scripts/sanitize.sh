#!/usr/bin/env bash
# Builds tv with AddressSanitizer + UndefinedBehaviorSanitizer into
# build-asan/ and runs the unit tests and every lit test under them (issue 19).
# Ends with "sanitize: N passed, M failed, R reports" and exits non-zero on a
# failure or on any sanitizer report.
#
# Debian's LLVM and MLIR are not instrumented: ASan must not trust their
# container annotations (allow_user_poisoning=0 as the issue measured), and
# UBSan's vptr check is off (it needs RTTI for LLVM's classes, which
# LLVM is built without: every cl::Option call was reported). Reports
# go to files under build-asan/reports/ rather than only to stderr, so that a
# test expecting failure (`not tv-opt ...`) cannot swallow one: the run fails
# unless that directory stays empty.
#
# --subset runs the unit tests and the lit tests of the dialect, the passes
# (partition, fold, shape reduction), the verifier, a 2-layer DeepSeek plan,
# the nnScaler demo and the fuzz corpus: what ./scripts/test.sh runs in CI
# (the whole suite takes ~20 minutes under the sanitizers on 2 cores).
set -uo pipefail
subset=""
[ "${1:-}" = "--subset" ] && subset='Dialect/|Transforms/|Verify/|ModelGen/deepseek|ModelGen/distributed_optimizer|Import/NnScaler/demo|Fuzz/'
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
"$root/scripts/setup.sh" >&2 || { echo "sanitize: set-up failed"; exit 1; }

if [ -f build-asan/CMakeCache.txt ] && ! grep -q -- "-fno-sanitize=vptr" build-asan/CMakeCache.txt; then
  rm -rf build-asan
fi
if [ ! -f build-asan/build.ninja ]; then
  echo "sanitize: configuring build-asan/" >&2
  cmake -G Ninja -S . -B build-asan \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DLLVM_USE_LINKER=lld >&2 || { echo "sanitize: configure failed"; exit 1; }
fi
echo "sanitize: building (ninja -C build-asan)" >&2
ninja -C build-asan -j"$(nproc)" tv-opt tv-translate tv-unittests >&2 \
  || { echo "sanitize: build failed"; exit 1; }

reports="$root/build-asan/reports"
rm -rf "$reports" && mkdir -p "$reports"
export ASAN_OPTIONS="allow_user_poisoning=0:detect_leaks=1:log_path=$reports/asan:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan"
export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp"
# ASan reserves terabytes of shadow address space: the fuzzer's replay must
# not cap the address space of the tools it runs.
export TV_FUZZ_MEMORY_MB=0

failed=0
passed=0
if build-asan/bin/tv-unittests --gtest_brief=1 >&2; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
fi
lit_log=$(mktemp)
# The plugin test loads tv into Debian's uninstrumented mlir-opt-22, which
# cannot host the sanitizer runtimes; the reference docs are not built here;
# validate_shard_partition makes upstream's partitioner crash on purpose (pair
# 14, a known MLIR 22 bug) in a child tv-opt, whose report is not tv's.
filter_out='plugin|reference_current|validate_shard_partition'
if [ -n "$subset" ]; then
  /usr/lib/llvm-22/bin/lit -s build-asan/test --filter "$subset" \
    --filter-out "$filter_out" 2>&1 | tee "$lit_log" >&2
else
  /usr/lib/llvm-22/bin/lit -s build-asan/test --filter-out "$filter_out" 2>&1 \
    | tee "$lit_log" >&2
fi
l_passed=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' "$lit_log" | tail -1)
l_bad=$(grep -E '^ *(Failed|Unresolved|Unexpectedly Passed|Timed Out) *:' "$lit_log" \
  | awk -F: '{ n += $2 } END { print n + 0 }')
passed=$((passed + ${l_passed:-0}))
failed=$((failed + ${l_bad:-0}))
n_reports=$(find "$reports" -type f | wc -l)
for f in $(find "$reports" -type f | head -5); do
  echo "== $f" >&2
  head -40 "$f" >&2
done
echo "sanitize: $passed passed, $failed failed, $n_reports reports"
[ "$failed" -eq 0 ] && [ "$n_reports" -eq 0 ]
