#!/usr/bin/env bash
# The README's main job: install + build if needed, then compile the fused
# conv2d + BatchNorm + ReLU + residual-add example: print its tile IR, compile it to PTX for sm_90,
# show the kernel metadata and, where the CUDA toolkit's ptxas exists, its register/stack/smem use.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bootstrap.sh build
src=examples/conv_bn_relu_add.tile
out=build/main-job
mkdir -p "$out"
echo "== tilec $src --emit=ir"
build/bin/tilec "$src" --emit=ir "$@"
echo "== tilec $src --emit=ptx --mcpu=sm_90 -o $out/conv_bn_relu_add.ptx"
build/bin/tilec "$src" --emit=ptx --mcpu=sm_90 -o "$out/conv_bn_relu_add.ptx" "$@"
sed -n '/^\/\/ tilec-metadata/,/^\/\/ end/p' "$out/conv_bn_relu_add.ptx"
PTXAS="${PTXAS:-/usr/local/cuda/bin/ptxas}"
if [ -x "$PTXAS" ]; then
  echo "== ptxas -v -arch=sm_90"
  "$PTXAS" -v -arch=sm_90 "$out/conv_bn_relu_add.ptx" -o "$out/conv_bn_relu_add.cubin" 2>&1 | grep -E "entry|Used|stack"
else
  echo "(ptxas not found at $PTXAS: PTX not assembled; install the CUDA toolkit to check it)"
fi
