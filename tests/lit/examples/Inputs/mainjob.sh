# Compiles the main job's modules for the emulator into DIR and runs tilec-mainjob on them (the
# steps of tools/main-job.sh without install, build or traffic report).
#   sh mainjob.sh TILEC EXAMPLES DIR [tilec-mainjob options...]
# MAINJOB_SWAP=1 compiles the "bf16" hand-fused module with T=f16 instead: same element size, so nothing
# faults, but every value is misread (a wrong result the runner must catch).
set -e
tilec=$1 ex=$2 dir=$3
shift 3
mkdir -p "$dir"
so="--emit=so --target=host"
"$tilec" "$ex/resnet_block.tile" --kernel=basic_block $so -o "$dir/block_fused.so"
"$tilec" "$ex/resnet_block.tile" --kernel=basic_block --no-fuse --no-fold-bn $so -o "$dir/block_unfused.so"
"$tilec" "$ex/conv_bn_relu_add.tile" $so -o "$dir/hand_f32.so"
if [ "${MAINJOB_SWAP:-0}" = 1 ]; then
  "$tilec" "$ex/conv_bn_relu_add.tile" -D T=f16 $so -o "$dir/hand_bf16.so"
else
  "$tilec" "$ex/conv_bn_relu_add.tile" -D T=bf16 $so -o "$dir/hand_bf16.so"
fi
exec env TILE_DEVICE=emu "$(dirname "$tilec")/tilec-mainjob" "$dir" "$@"
