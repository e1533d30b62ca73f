#!/usr/bin/env bash
# Installs what tilec needs on Debian 12 (only what is missing), then configures and builds.
#   tools/bootstrap.sh [BUILD_DIR] [extra cmake args...]
# Re-running is cheap: no reinstall, incremental build.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake pkg-config flex bison python3 llvm-19-dev llvm-19-tools libxxhash-dev libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "tilec: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

BUILD_DIR="${1:-build}"
shift || true
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
fi
cmake --build "$BUILD_DIR" -j"$(nproc)" 2>&1 | grep -Ev '^\[ *[0-9]+%\]' || true
test -x "$BUILD_DIR/bin/tilec" || { echo "tilec: build failed" >&2; exit 1; }
