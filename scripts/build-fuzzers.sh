#!/usr/bin/env bash
#===- scripts/build-fuzzers.sh - Build the libFuzzer harnesses ------------===#
#
# Configures (once) and builds the fuzz build tree, $build/fuzz: the
# harnesses of tools/netvm-*-fuzzer and the libraries they exercise, all
# compiled with -fsanitize=fuzzer-no-link,address,undefined (the option
# NETVM_FUZZERS; docs/fuzzing.md) at -O1. NDEBUG stays defined as in
# Debian's LLVM: without it LLVM's headers change the layout of shared
# classes (llvm::Statistic), which UBSan reports. Only the target
# netvm-fuzzers is built.
# The main build tree is not touched and stays uninstrumented.
#
# Usage: scripts/build-fuzzers.sh          (build/fuzz)
#        NETVM_BUILD_DIR=dir scripts/build-fuzzers.sh   (dir/fuzz)
#===----------------------------------------------------------------------===#
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NETVM_BUILD_DIR:-$root/build}
fuzz=$build/fuzz

if [[ ! -f $fuzz/build.ninja ]]; then
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S "$root" -B "$fuzz" -G Ninja \
    -DNETVM_FUZZERS=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DNETVM_WERROR=ON \
    "${launcher[@]}"
fi
ninja -C "$fuzz" netvm-fuzzers
