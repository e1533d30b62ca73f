#!/usr/bin/env bash
# The README's main job: install + build if needed, then compile the fused
# conv2d + BatchNorm + ReLU + residual-add example and print its tile IR.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bootstrap.sh build
echo "== tilec examples/conv_bn_relu_add.tile --emit=ir"
build/bin/tilec examples/conv_bn_relu_add.tile --emit=ir "$@"
