#!/usr/bin/env bash
# The README's test command: install + build if needed, then the whole test suite twice:
# a normal build, and an AddressSanitizer + UndefinedBehaviorSanitizer build (TILEC_SANITIZE=ON).
# Exits nonzero on any failure. TILEC_SKIP_SANITIZE=1 skips the sanitizer pass (local iteration).
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
tools/bootstrap.sh build || exit 1
echo "== ctest (build)"
(cd build && ctest --output-on-failure -j"$(nproc)") || status=1
if [ "${TILEC_SKIP_SANITIZE:-0}" != 1 ]; then
  # libtileops' kernels are compiled by the normal build's tilec: the same PTX and host code, minutes sooner.
  tools/bootstrap.sh build-asan -DTILEC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
    -DTILEOPS_TILEC="$PWD/build/bin/tilec" || exit 1
  echo "== ctest (build-asan: ASan + UBSan)"
  # The emulator's fibers switch stacks; ASan is told (fiber annotations), and its one generic
  # swapcontext warning is silenced. TILEC_EMU_SLOW=1: no speed assertions in a sanitizer build.
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 TILEC_EMU_SLOW=1 \
     ctest --output-on-failure -j"$(nproc)") || status=1
fi
exit $status
