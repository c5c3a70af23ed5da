#!/usr/bin/env bash
#===- scripts/check-format.sh - Check the formatting of C and C++ ---------===#
#
# Runs clang-format-22 --dry-run -Werror (style: .clang-format, LLVM's) over
# netvm's own C and C++ sources, or over the files given, prints each file
# that is not formatted and exits 1 if there is one.
#
# Checked: the *.c, *.cpp and *.h files git tracks (without git: found under
# the source tree, build/ left out), except test inputs (test/**/Inputs/:
# data, whose layout a test may depend on). Not checked: generated code
# (only in build/), the *.def X-macro tables, TableGen (.td: .clang-format
# has a TableGen section for editors).
#
# Usage: scripts/check-format.sh [--junit report.xml] [file...]
#   --junit  also write the result as a JUnit report with one test case,
#            which scripts/summarize-tests.py counts (scripts/test.sh).
#
# To reformat what this checks, from the source tree:
#   git ls-files '*.c' '*.cpp' '*.h' ':!:test/**/Inputs/**' \
#     | xargs clang-format-22 -i
#===----------------------------------------------------------------------===#
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
clang_format=${CLANG_FORMAT:-clang-format-22}

junit=""
if [[ ${1:-} == --junit ]]; then
  junit=${2:?"--junit needs a file name"}
  shift 2
fi

files=("$@")
if ((${#files[@]} == 0)); then
  cd "$root"
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files '*.c' '*.cpp' '*.h' \
      ':!:test/**/Inputs/**')
  else
    mapfile -t files < <(find . \( -path ./build -o -path ./.git \
      -o -path './test/*/Inputs' \) -prune -o -type f \
      \( -name '*.c' -o -name '*.cpp' -o -name '*.h' \) -print \
      | sed 's#^\./##' | sort)
  fi
fi

if ! command -v "$clang_format" >/dev/null; then
  echo "check-format: $clang_format not found (run scripts/setup.sh)" >&2
  exit 2
fi

# One clang-format per file: its exit status says whether the file is
# formatted, whatever it prints.
bad=()
for f in "${files[@]}"; do
  if ! "$clang_format" --dry-run -Werror --ferror-limit=1 "$f" \
      >/dev/null 2>&1; then
    bad+=("$f")
  fi
done

if ((${#bad[@]})); then
  echo "check-format: ${#bad[@]} of ${#files[@]} files are not formatted" \
       "($clang_format -i <file> fixes one):"
  printf '  %s\n' "${bad[@]}"
else
  echo "check-format: ${#files[@]} files formatted"
fi

if [[ -n $junit ]]; then
  {
    echo '<?xml version="1.0" encoding="UTF-8"?>'
    failures=$((${#bad[@]} ? 1 : 0))
    echo "<testsuites><testsuite name=\"format\" tests=\"1\"" \
         "failures=\"$failures\">"
    echo '<testcase classname="format" name="check-format">'
    if ((${#bad[@]})); then
      echo "<failure message=\"${#bad[@]} files are not formatted\">"
      printf '%s\n' "${bad[@]}" | sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g'
      echo '</failure>'
    fi
    echo '</testcase></testsuite></testsuites>'
  } >"$junit"
fi

((${#bad[@]} == 0))
