#!/usr/bin/env bash
# Installs what is missing (Debian 12), configures into build/ and builds.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

pkgs=(cmake ninja-build g++ lld python3 libgtest-dev libz3-dev llvm-22-dev
      llvm-22-tools libmlir-22-dev mlir-22-tools)
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

# The CMake cache keeps the MLIR path: start over if it points elsewhere.
if [ -f build/CMakeCache.txt ] && ! grep -q "MLIR_DIR:PATH=/usr/lib/llvm-22/lib/cmake/mlir" build/CMakeCache.txt; then
  rm -rf build
fi
if [ ! -f build/build.ninja ]; then
  cmake -G Ninja -S . -B build \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DLLVM_USE_LINKER=lld
fi
ninja -C build -j"$(nproc)" tv-opt tv-translate tv-unittests mlir-doc
