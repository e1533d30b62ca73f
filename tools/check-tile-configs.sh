#!/usr/bin/env bash
# Every row of support/tile_configs.def compiles (for its kernel and the kernel's twin, which shares
# the rows: CONV2D_NHWC's std_conv2d_nhwc_rsck), and every variant assembles with ptxas for sm_80
# and sm_90 with 0 bytes of spills (a failure). A variant using more registers than the row's
# `regs` column (the figure the tile-config model's occupancy uses; docs/tile-configs.md) prints
# "stale" so the column gets updated; the model then overestimates occupancy, nothing breaks.
#   tools/check-tile-configs.sh TILEC PTXAS [WORKDIR]
# Prints one line per row and target; exits 1 on the first kind of failure seen at the end.
set -u
tilec=$1 ptxas=$2 work=${3:-$(mktemp -d)}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work"
fail=0
grep '^TILE_CONFIG(' "$root/support/tile_configs.def" | sed 's/TILE_CONFIG(//; s/)//; s/,/ /g' |
while read -r id kern eng bm bn bk warps stages regs; do
  case $kern in
    MATMUL) src=lang/std/matmul.tile ks=std_matmul c="-D BLOCK_M=$bm -D BLOCK_N=$bn -D BLOCK_K=$bk" ;;
    CONV2D) src=lang/std/conv2d.tile ks=std_conv2d
            c="-D BLOCK_K=$bm -D BLOCK_P=$bn -D BLOCK_C=$bk -D SH=1 -D SW=1 -D PH=1 -D PW=1 -D DH=1 -D DW=1" ;;
    CONV2D_NHWC) src=lang/std/conv2d.tile ks="std_conv2d_nhwc std_conv2d_nhwc_rsck"
            c="-D BLOCK_K=$bm -D BLOCK_P=$bn -D BLOCK_C=$bk -D SH=1 -D SW=1 -D PH=1 -D PW=1 -D DH=1 -D DW=1" ;;
    *) echo "$id: unknown kernel $kern"; exit 1 ;;
  esac
  [ "$eng" = FMA ] && T=f32 || T=bf16
  for k in $ks; do
  for sm in sm_80 sm_90; do
    ptx="$work/$id.$k.$sm.ptx"
    # shellcheck disable=SC2086
    if ! "$tilec" "$root/$src" --kernel="$k" -D T=$T $c --num-warps="$warps" --num-stages="$stages" --mcpu=$sm \
         --emit=ptx -o "$ptx"; then
      echo "FAIL $id $k $sm: tilec failed"; exit 1
    fi
    out=$("$ptxas" -arch=$sm -v "$ptx" -o /dev/null 2>&1) || { echo "FAIL $id $k $sm: ptxas failed"; echo "$out"; exit 1; }
    used=$(echo "$out" | sed -n 's/.*Used \([0-9]*\) registers.*/\1/p' | sort -n | tail -1)
    spill=$(echo "$out" | sed -n 's/.* \([0-9]*\) bytes spill stores, \([0-9]*\) bytes spill loads.*/\1 \2/p' |
            awk '{s += $1 + $2} END {print s + 0}')
    stale=
    [ -n "$used" ] && [ "$used" -gt "$regs" ] && stale=" (stale: the regs column says $regs)"
    name=$id
    [ "$k" = std_conv2d_nhwc_rsck ] && name="$id (rsck)"
    echo "$name $sm: $used registers, $spill bytes of spills$stale"
    if [ "$spill" != 0 ] || [ -z "$used" ]; then
      echo "FAIL $name $sm"; exit 1
    fi
  done
  done
done || fail=1
exit $fail
