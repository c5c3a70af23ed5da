#!/usr/bin/env bash
#===- scripts/setup.sh - Install everything netvm needs (idempotent) ------===#
#
# Installs the Debian packages netvm builds and tests with, and configures
# the build directory. Safe to run again: every step checks first and does
# nothing when its work is already done, so a second run costs seconds.
#
# Usage: scripts/setup.sh            (installs packages, configures build/)
#        NETVM_BUILD_DIR=dir scripts/setup.sh
#===----------------------------------------------------------------------===#
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NETVM_BUILD_DIR:-$root/build}

# Packages, one per line: what the build, the tests and the benchmarks use.
packages=(
  # toolchain: LLVM/MLIR 22 as shared libraries, clang, lld, lit/FileCheck;
  # clang-format for scripts/check-format.sh
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 lld-22
  clang-format-22
  libclang-rt-22-dev
  cmake ninja-build ccache
  # packet I/O and the reference tool for tcpdump semantics
  libpcap-dev tcpdump
  # unit tests
  libgtest-dev
  # front ends (ANTLR4 C++ runtime 4.9 and tool), NetPDL XML
  libantlr4-runtime-dev antlr4 libpugixml-dev
  # coprocessor string matching
  libhyperscan-dev
  # AArch64 cross builds run under qemu
  qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross
  # python bindings
  python3-dev python3-venv
  # the benchmark's C peer of the learning bridge and of the lookup
  # coprocessor: DPDK's rte_hash
  dpdk-dev
  # whole-process timing of netvm-run against tcpdump (bench/e2e.py)
  hyperfine
)

missing=()
for p in "${packages[@]}"; do
  [[ $p == \#* ]] && continue
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  apt_opts=(-o DPkg::Lock::Timeout=900 -y -q)
  $sudo apt-get -o DPkg::Lock::Timeout=900 update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get "${apt_opts[@]}" install "${missing[@]}"
fi

# The Python bindings build with nanobind and are tested with pytest and
# NumPy: all three go into a virtual environment in the build tree (Debian's
# Python refuses pip installs outside one), whose interpreter CMake uses.
venv=$build/python-env
python_packages=("nanobind>=2.2,<4" numpy pytest)
if ! "$venv/bin/python" -c "import nanobind, numpy, pytest" 2>/dev/null; then
  echo "setup: creating $venv with ${python_packages[*]}"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    "${python_packages[@]}"
fi

# Configure once; later runs reuse the build tree (ninja decides what to redo).
if [[ ! -f $build/build.ninja ]]; then
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DNETVM_WERROR=ON \
    -DPython_EXECUTABLE="$venv/bin/python" \
    "${launcher[@]}"
elif ! grep -q "^Python_EXECUTABLE:[A-Z]*=$venv/bin/python\$" \
    "$build/CMakeCache.txt"; then
  # A build tree configured before the Python bindings existed.
  cmake -S "$root" -B "$build" -DPython_EXECUTABLE="$venv/bin/python"
fi
