#!/usr/bin/env bash
#===- scripts/test.sh - Set up, build and run every netvm test ------------===#
#
# Installs what is missing (scripts/setup.sh), builds the main tree and the
# fuzz tree (scripts/build-fuzzers.sh), runs the lit suites (regression
# tests, bounded fuzzer runs in test/Fuzz, and the GoogleTest unit tests,
# which lit runs too), the
# Python package's pytest suite (test/Python) and the format check
# (scripts/check-format.sh, one test), and prints one summary line:
#   N passed, N failed[, N skipped]
# Exits non-zero if anything failed.
#===----------------------------------------------------------------------===#
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NETVM_BUILD_DIR:-$root/build}

"$root/scripts/setup.sh"
ninja -C "$build"
NETVM_BUILD_DIR="$build" "$root/scripts/build-fuzzers.sh"

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
status=0
/usr/lib/llvm-22/bin/lit -sv --xunit-xml-output "$results/lit.xml" \
  "$build/test" "$build/test/Unit" || status=$?
# The Python package, from the build tree, with the venv setup.sh made.
PYTHONPATH="$build/python" NETVM_BUILD_DIR="$build" PYTHONDONTWRITEBYTECODE=1 \
  NETVM_CACHE_DIR="$build/test/jit-cache" \
  "$build/python-env/bin/python" -m pytest -q -p no:cacheprovider \
  --junitxml "$results/pytest.xml" "$root/test/Python" || status=$?
# clang-format over our C and C++ sources: one test case in the count.
"$root/scripts/check-format.sh" --junit "$results/format.xml" || status=$?

python3 "$root/scripts/summarize-tests.py" "$results"/*.xml || status=1
exit $status
