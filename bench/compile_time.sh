#!/usr/bin/env bash
# Compile-time split of the conv-BN-ReLU-add example, median of N runs (default 5), in seconds:
#   tilec --time-passes --emit=ptx   frontend, tile passes, tile IR -> LLVM IR, libdevice, LLVM opt,
#                                    NVPTX code generation, and the whole process (wall)
#   opt -O3 + llc -mcpu=sm_90        LLVM's own tools on tilec's unoptimised module (--emit=llvm -O0),
#                                    as a reference for the LLVM part of tilec's time
# usage: bench/compile_time.sh [BUILD_DIR [RUNS]]     (BUILD_DIR defaults to ./build)
# Environment: LLVM_BIN (default /usr/lib/llvm-19/bin), SRC (default examples/conv_bn_relu_add.tile),
# MCPU (default sm_90), TILEC_ARGS (extra tilec options, e.g. "-D T=f16").
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
runs=${2:-5}
tilec=$build/bin/tilec
llvm_bin=${LLVM_BIN:-/usr/lib/llvm-19/bin}
src=${SRC:-$root/examples/conv_bn_relu_add.tile}
mcpu=${MCPU:-sm_90}
extra=${TILEC_ARGS:-}

for tool in "$tilec" "$llvm_bin/opt" "$llvm_bin/llc"; do
    [ -x "$tool" ] || { echo "compile_time.sh: $tool not found (build tilec first)" >&2; exit 2; }
done
case $runs in ''|*[!0-9]*|0) echo "compile_time.sh: RUNS must be a positive integer" >&2; exit 2;; esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

now() { date +%s.%N; }
# elapsed T0 T1: T1 - T0 in seconds.
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f\n", b - a }'; }
# median FILE: the median of the numbers in FILE, one per line.
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Pulls the milliseconds of one line of the --time-passes report (stderr) and appends seconds to FILE.
#   frontend (parse + sema): 1.234 ms
#   <ms> <pct>%  Total                          (the pass manager's table, then the backend's)
#   <ms> [ms | <pct>%]  codegen (tile IR -> LLVM IR)   (the backend's split: codegen, libdevice,
#                                               LLVM optimisation, target code generation)
grab() { # LOG AWK-PROGRAM FILE
    local v
    v=$(awk "$2" "$1")
    [ -n "$v" ] || v=nan
    echo "$v" >> "$3"
}

# shellcheck disable=SC2086  # $extra is a list of options
for i in $(seq "$runs"); do
    t0=$(now)
    "$tilec" "$src" --emit=ptx --mcpu="$mcpu" --time-passes $extra -o "$tmp/k.ptx" 2> "$tmp/log"
    t1=$(now)
    elapsed "$t0" "$t1" >> "$tmp/wall"
    grab "$tmp/log" '/^frontend/ { for (i = 1; i <= NF; i++) if ($i == "ms") print $(i - 1) / 1000 }' "$tmp/frontend"
    grab "$tmp/log" '/Pass execution timing report/ { p = 1 } /Backend execution timing report/ { p = 0 }
                     p && $NF == "Total" { print $1 / 1000 }' "$tmp/passes"
    grab "$tmp/log" '/[0-9] +(ms|[0-9.]+%) +codegen \(tile IR/ { print $1 / 1000 }' "$tmp/codegen"
    grab "$tmp/log" '/[0-9] +(ms|[0-9.]+%) +libdevice/ { print $1 / 1000 }' "$tmp/libdevice"
    grab "$tmp/log" '/[0-9] +(ms|[0-9.]+%) +LLVM optimisation/ { print $1 / 1000 }' "$tmp/opt"
    grab "$tmp/log" '/[0-9] +(ms|[0-9.]+%) +target code generation/ { print $1 / 1000 }' "$tmp/target"

    "$tilec" "$src" --emit=llvm -O0 --mcpu="$mcpu" $extra -o "$tmp/k.ll"
    t0=$(now)
    "$llvm_bin/opt" -O3 "$tmp/k.ll" -o "$tmp/k.bc"
    t1=$(now)
    "$llvm_bin/llc" -mcpu="$mcpu" "$tmp/k.bc" -o "$tmp/k_llc.ptx"
    t2=$(now)
    elapsed "$t0" "$t1" >> "$tmp/llvm_opt"
    elapsed "$t1" "$t2" >> "$tmp/llvm_llc"
    elapsed "$t0" "$t2" >> "$tmp/llvm_both"
done

row() { printf '  %-34s %9.4f\n' "$1" "$(median "$tmp/$2")"; }
echo "compile time of $(basename "$src") for $mcpu${extra:+ ($extra)}: median of $runs runs, seconds"
echo "tilec --time-passes --emit=ptx"
row "frontend (parse + sema)" frontend
row "tile passes (pipeline total)" passes
row "codegen (tile IR -> LLVM IR)" codegen
row "libdevice (load + link)" libdevice
row "LLVM opt (default<O3>)" opt
row "NVPTX codegen (PTX emission)" target
row "whole tilec process (wall)" wall
echo "LLVM tools on tilec --emit=llvm -O0"
row "opt -O3" llvm_opt
row "llc -mcpu=$mcpu" llvm_llc
row "opt + llc" llvm_both
