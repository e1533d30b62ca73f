#!/usr/bin/env bash
# The README's main job, for a new user: conv -> BatchNorm -> ReLU -> add, end to end.
#   tools/main-job.sh [--shape small|resnet50|N,C,H,W] [--runs R] [--seed S] [--build DIR]
# Installs what is missing and builds (tools/bootstrap.sh), compiles the ResNet basic block of
# examples/resnet_block.tile twice with tilec (fused: the default; unfused: --no-fuse --no-fold-bn) and the
# hand-fused kernel of examples/conv_bn_relu_add.tile (f32, and bf16 I/O), to PTX when libtilert finds a
# GPU and to host shared objects for the SIMT emulator otherwise (TILE_DEVICE=emu|cuda overrides), takes
# the DRAM bytes per run from `tilec --report=traffic`, then runs everything with tilec-mainjob
# (tools/main_job/), which checks each result against a float64 reference and prints the table.
# Default shapes (N=1, C=16, H=W=14) finish in seconds in the emulator; --shape resnet50 is the ResNet-50
# stage-1 block (N=32, C=64, H=W=56), for the GPU. Exit status: tilec-mainjob's (0 = every check passed).
set -euo pipefail
cd "$(dirname "$0")/.."

shape=small runs="" seed="" build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --shape) shape="${2:?--shape needs small, resnet50 or N,C,H,W}"; shift 2 ;;
    --runs) runs="${2:?--runs needs a count}"; shift 2 ;;
    --seed) seed="${2:?--seed needs a number}"; shift 2 ;;
    --build) build="${2:?--build needs a directory}"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "main-job.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
case "$shape" in
  small) dims=1,16,14,14 ;;
  resnet50) dims=32,64,56,56 ;;
  *) dims="$shape" ;;
esac
if ! [[ "$dims" =~ ^[1-9][0-9]*,[1-9][0-9]*,[1-9][0-9]*,[1-9][0-9]*$ ]]; then
  echo "main-job.sh: --shape must be small, resnet50 or N,C,H,W (positive integers), not '$shape'" >&2
  exit 2
fi
IFS=, read -r N C H W <<<"$dims"

echo "== install + build ($build)"
tools/bootstrap.sh "$build"
tilec="$build/bin/tilec" runner="$build/bin/tilec-mainjob"
test -x "$runner" || { echo "main-job.sh: $runner was not built" >&2; exit 1; }

out="$build/main-job"
mkdir -p "$out"
device=$("$runner" --device)
if [ "$device" = cuda ]; then
  emit=(--emit=ptx --mcpu="${TILEC_MCPU:-sm_90}") ext=ptx
else
  emit=(--emit=so --target=host) ext=so
fi
compile() { # compile NAME SOURCE [tilec options...]: one module, reported on one line
  local name=$1 src=$2
  shift 2
  echo "   tilec $src${*:+ $*} ${emit[*]} -o $out/$name.$ext"
  "$tilec" "$src" "$@" "${emit[@]}" --cache-dir="$out/cache" -o "$out/$name.$ext"
}
echo "== compile for $device"
blk=examples/resnet_block.tile hand=examples/conv_bn_relu_add.tile
compile block_fused "$blk" --kernel=basic_block
compile block_unfused "$blk" --kernel=basic_block --no-fuse --no-fold-bn
compile hand_f32 "$hand"
rm -f "$out/hand_bf16.$ext"
compile hand_bf16 "$hand" -D T=bf16 || echo "   (bf16 I/O variant did not compile: its row is skipped)"

echo "== DRAM traffic: tilec $blk --kernel=basic_block --report=traffic --dims N=$N,C=$C,H=$H,W=$W"
"$tilec" "$blk" --kernel=basic_block --report=traffic --dims "N=$N,C=$C,H=$H,W=$W" -o /dev/null 2>"$out/traffic.txt"
grep -E '^(fused|unfused|saved):' "$out/traffic.txt" | sed 's/^/   /'
bytes() { # bytes fused|unfused: read + write of that totals line
  awk -v k="$1:" '$1 == k { for (i = 1; i < NF; i++) { if ($i == "read") r = $(i + 1); if ($i == "write") w = $(i + 1) } print r + w }' \
    "$out/traffic.txt"
}
traffic="$(bytes fused),$(bytes unfused)"

echo "== run"
args=("$out" --shape "$dims" --traffic "$traffic")
[ -n "$runs" ] && args+=(--runs "$runs")
[ -n "$seed" ] && args+=(--seed "$seed")
exec "$runner" "${args[@]}"
