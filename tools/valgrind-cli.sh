#!/usr/bin/env bash
# Runs the tilec CLI under valgrind (memcheck, leaks counted as errors) on every lit test input and
# example, for each emit kind; prints one line per input with a valgrind error and a closing
# "N passed, M failed" line. Separate from CI (tools/test.sh runs the ASan/UBSan build instead).
#   tools/valgrind-cli.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
command -v valgrind >/dev/null || { echo "valgrind-cli: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
tools/bootstrap.sh "$BUILD" || exit 1
pass=0; fail=0
while IFS= read -r f; do
  case "$f" in *.tir) kinds="ir" ;; *) kinds="tokens ast ir" ;; esac
  for k in $kinds; do
    valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
      "$BUILD/bin/tilec" "$f" --emit="$k" >/dev/null 2>/tmp/valgrind-cli.$$
    if [ $? -eq 99 ]; then
      fail=$((fail + 1)); echo "FAIL $f --emit=$k"; grep -m5 '==' /tmp/valgrind-cli.$$
    else
      pass=$((pass + 1))
    fi
  done
done < <(find tests/lit examples -path '*/Output' -prune -o \( -name '*.tile' -o -name '*.tir' \) -print | sort)
rm -f /tmp/valgrind-cli.$$
echo "valgrind: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
