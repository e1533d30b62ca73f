#!/usr/bin/env bash
# Every target fact lives in support/targets.def (docs/targets.md): this check fails when the C
# sources of the compiler, runtime or tools declare one elsewhere. It looks for what such a fact
# looks like in C, precisely enough not to fire on prose:
#   a target name as a string literal       "sm_90a"   (a name compared with strcmp, a local table)
#   an LLVM PTX feature string              "+ptx80"
#   a shared-memory size of some target     232448, 101376, 49152 ... or 48 * 1024, 227 * 1024 ...
# Comments naming targets without quotes ("sm_90a only") and tests (which assert the table's
# values on purpose) are not looked at. bench/ scripts read the table's text themselves.
#   tools/check-target-facts.sh [SOURCE_DIR]      exit 0 clean, 1 with the offending lines
#   tools/check-target-facts.sh --self-test       the patterns still catch what they are for
set -uo pipefail

PATTERN='"sm_[0-9]+a?"|"\+ptx[0-9]+"|\b(232448|233472|166912|167936|101376|102400|49152)\b|\b(48|99|100|163|164|227|228) ?\* ?1024\b'

if [ "${1:-}" = --self-test ]; then
  # Each line must be caught; the last two must not (a comment without quotes, another number).
  caught=$(printf '%s\n' 'if (!strcmp(mcpu, "sm_90a"))' '{"sm_80", "+ptx70"},' 'enum { M = 48 * 1024 };' \
    '#define HOST 101376' 'limit = 232448;' | grep -cE "$PATTERN")
  missed=$(printf '%s\n' '/* wgmma exists on sm_90a only */' 'n = 65536;' | grep -cE "$PATTERN")
  if [ "$caught" = 5 ] && [ "$missed" = 0 ]; then echo "self-test passed"; exit 0; fi
  echo "self-test failed: caught $caught of 5, false alarms $missed" >&2
  exit 1
fi

cd "${1:-$(dirname "$0")/..}" || exit 2
hits=$(grep -rnE "$PATTERN" --include='*.c' --include='*.h' --include='*.y' --include='*.l' --include='*.def' \
         backend driver frontend graph ir onnx passes runtime support tools include 2>/dev/null |
       grep -v '^support/targets\.')
if [ -n "$hits" ]; then
  echo "target facts outside support/targets.def (read them through support/targets.h instead):" >&2
  echo "$hits" >&2
  exit 1
fi
echo "no target facts outside support/targets.def"
