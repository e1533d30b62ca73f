#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (installing clang + libclang-rt-dev only if missing) and
# runs each for SECONDS, seeded from the lit tests and examples.
#   tools/fuzz.sh [SECONDS]      (default 60 per target; FUZZ_TARGETS="fuzz_ir" picks targets)
# Crash inputs go to build-fuzz/artifacts/; the corpora grow in build-fuzz/corpus/<target>.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-60}"
BUILD_DIR=build-fuzz

have_fuzzer_rt() { ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; }
if ! command -v clang >/dev/null 2>&1 || ! have_fuzzer_rt; then
  echo "tilec: installing clang libclang-rt-dev"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends clang libclang-rt-dev >/dev/null
fi

if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  CC=clang cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTILEC_FUZZ=ON >/dev/null
else
  cmake -S . -B "$BUILD_DIR" >/dev/null   # pick up targets added since the last configure
fi
TARGETS=(${FUZZ_TARGETS:-fuzz_tile fuzz_ir fuzz_meta fuzz_onnx})
cmake --build "$BUILD_DIR" --target "${TARGETS[@]}" -j"$(nproc)" 2>&1 | grep -Ev '^\[ *[0-9]+%\]' || true

mkdir -p "$BUILD_DIR/artifacts" "$BUILD_DIR/corpus/fuzz_tile" "$BUILD_DIR/corpus/fuzz_ir" "$BUILD_DIR/corpus/fuzz_meta" \
  "$BUILD_DIR/corpus/fuzz_onnx"
# Seeds are named by content hash so re-seeding never duplicates.
seed() {
  local dir="$1"; shift
  local f
  for f in "$@"; do
    [ -f "$f" ] || continue
    cp "$f" "$dir/seed-$(sha1sum "$f" | cut -c1-16)"
  done
}
shopt -s globstar nullglob
seed "$BUILD_DIR/corpus/fuzz_tile" tests/lit/**/*.tile examples/*.tile
seed "$BUILD_DIR/corpus/fuzz_ir" tests/lit/**/*.tir
seed "$BUILD_DIR/corpus/fuzz_meta" tests/fuzz/seeds/fuzz_meta/*
# ONNX seeds: the models of libonnx-testdata (node tests are a few hundred bytes each).
seed "$BUILD_DIR/corpus/fuzz_onnx" /usr/share/libonnx-testdata/data/node/*/model.onnx
# Metadata seeds: what this tree's tilec writes for the zoo (needs the normal build/; skipped if absent).
if [ -x build/bin/tilec ]; then
  for k in tests/zoo/*.tile examples/*.tile; do
    build/bin/tilec "$k" --emit=meta -o "$BUILD_DIR/corpus/fuzz_meta/seed-$(basename "$k" .tile)" 2>/dev/null || true
  done
fi

summary=()
for t in "${TARGETS[@]}"; do
  log="$BUILD_DIR/$t.log"
  before=$(ls "$BUILD_DIR/artifacts" | wc -l)
  start=$(date +%s)
  # -fork keeps going after a crash so one run can find several; each crash lands in artifacts/.
  set +e
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$BUILD_DIR/bin/$t" "$BUILD_DIR/corpus/$t" -max_total_time="$SECS" -max_len=4096 -timeout=10 \
    -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -artifact_prefix="$BUILD_DIR/artifacts/$t-" >"$log" 2>&1
  set -e
  secs=$(( $(date +%s) - start ))
  runs=$(grep -oE '#[0-9]+' "$log" | tail -1 | tr -d '#')
  crashes=$(( $(ls "$BUILD_DIR/artifacts" | wc -l) - before ))
  summary+=("$t: runs=${runs:-0} seconds=$secs crashes=$crashes (log $log)")
done
printf '%s\n' "${summary[@]}"
ls "$BUILD_DIR/artifacts"
