#!/usr/bin/env bash
# Installs what is missing (Debian 12), configures into build/ and builds.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

pkgs=(cmake ninja-build g++ lld python3 libgtest-dev libz3-dev llvm-22-dev
      llvm-22-tools libmlir-22-dev mlir-22-tools graphviz z3)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

# The CMake cache keeps the MLIR path: start over only if it points elsewhere.
# (A path given with -D is cached as MLIR_DIR:UNINITIALIZED=..., so match any type.)
if [ -f build/CMakeCache.txt ] && ! grep -Eq "^MLIR_DIR:[A-Z]+=/usr/lib/llvm-22/lib/cmake/mlir/?$" build/CMakeCache.txt; then
  echo "setup: build/ was configured for another MLIR; starting over"
  rm -rf build
fi
if [ ! -f build/build.ninja ]; then
  echo "setup: configuring build/"
  cmake -G Ninja -S . -B build \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DLLVM_USE_LINKER=lld
fi
echo "setup: building (ninja -C build)"
ninja -C build -j"$(nproc)" tv-opt tv-translate TVPlugin tv-unittests mlir-doc
