#!/usr/bin/env bash
# The installed package, end to end (CTest package.install and package.rebuild; docs/install.md).
#   package.sh install|rebuild BUILD_DIR SOURCE_DIR SANITIZE PTXAS
# Installs BUILD_DIR into a fresh prefix under a temporary directory, moves the prefix (it must be
# relocatable), then builds projects against it that know nothing of the build tree:
#   install: the libraries' SONAMEs, dependencies (libtilert: glibc only, nothing from LLVM) and
#            exported symbols (the public API only); examples/aot configured with find_package and built
#            with cubins when ptxas exists, again with TILEC_PTX_ONLY=ON, and with its Makefile through
#            pkg-config; each run on the emulator, checked against its float64 reference;
#            and a plug-in embedding it, opened with RTLD_LOCAL (tests/package/plugin); libtileops's
#            dependencies and exports, and examples/tileops built against it (CMake and pkg-config);
#   rebuild: tests/package/rebuild (two targets, one .tile each): editing one .tile rebuilds that
#            target and not the other; a second build does nothing.
# Exit 77 (skip) in a sanitizer build: its libraries need the sanitizer runtimes loaded first, which a
# program built outside the tree without -fsanitize does not have.
set -euo pipefail
mode=$1 build=$(cd "$2" && pwd) src=$(cd "$3" && pwd) sanitize=$4 ptxas=${5:-}
case "$sanitize" in ON|on|1|TRUE|true)
  echo "SKIP: sanitizer build: the installed libraries need libasan/libubsan preloaded, which a program built"
  echo "      outside the tree without -fsanitize does not do (the normal build runs this test)"
  exit 77;;
esac
tmp=$(mktemp -d /tmp/tilec-package.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# No libdevice, as on a machine without the CUDA toolkit: the example must not depend on it.
export TILE_DEVICE=emu TILEC_CACHE_DIR= TILEC_LIBDEVICE=/nonexistent/libdevice.10.bc
unset CMAKE_PREFIX_PATH PKG_CONFIG_PATH || true

cmake --install "$build" --prefix "$tmp/installed" > "$tmp/install.log"
mv "$tmp/installed" "$tmp/prefix"   # relocatable: nothing may remember where it was installed
prefix=$tmp/prefix
if grep -rIl -- "$tmp/installed" "$prefix/lib/cmake" "$prefix/lib/pkgconfig"; then fail "the package names its install path"; fi
if grep -rIl -- "$build/" "$prefix/lib/cmake" "$prefix/lib/pkgconfig"; then fail "the package names the build tree"; fi

if [ "$mode" = install ]; then
  # ---- the libraries
  rt=$prefix/lib/libtilert.so
  readelf -d "$rt" | grep -q 'SONAME.*\[libtilert\.so\.0\]' || fail "libtilert.so has no SONAME libtilert.so.0"
  readelf -d "$prefix/lib/libtilec.so" | grep -q 'SONAME.*\[libtilec\.so\.0\]' || fail "libtilec.so has no SONAME libtilec.so.0"
  needed=$(readelf -d "$rt" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
  echo "libtilert.so needs: $needed"
  for lib in $needed; do
    case "$lib" in libc.so.6|libm.so.6|libdl.so.2|libpthread.so.0|ld-linux-x86-64.so.2) ;;
      *) fail "libtilert.so depends on $lib (only libc, libm, libdl may be needed; nothing from LLVM)";; esac
  done
  if readelf -d "$rt" | grep -Eq 'R(UN)?PATH'; then fail "libtilert.so has an RPATH"; fi
  # exported functions = the public API: tlrt_* of tilert.h, the emulator ABI for host kernels
  exported=$(nm -D --defined-only "$rt" | awk '$2 ~ /^[TW]$/ {print $3}' | sort)
  declared=$(grep -Eo '^[A-Za-z].*[ *](tlrt_[a-z0-9_]+)\(' "$prefix/include/tilec/tilert.h" | grep -Eo 'tlrt_[a-z0-9_]+\($' | tr -d '(' | sort)
  other=$(echo "$exported" | grep -Ev '^(tlrt_|tl_emu_|__truncsfbf2$)' || true)
  [ -z "$other" ] || fail "libtilert.so exports internals: $other"
  missing=$(comm -13 <(echo "$exported") <(echo "$declared"))
  [ -z "$missing" ] || fail "tilert.h declares functions libtilert.so does not export: $missing"
  extra=$(comm -23 <(echo "$exported" | grep '^tlrt_') <(echo "$declared"))
  [ -z "$extra" ] || fail "libtilert.so exports tlrt_ functions tilert.h does not declare: $extra"
  echo "libtilert.so exports $(echo "$exported" | wc -l) functions: $(echo "$declared" | wc -l) of tilert.h, the rest tl_emu_*"
  cexported=$(nm -D --defined-only "$prefix/lib/libtilec.so" | awk '$2 ~ /^[TWDRBV]$/ {print $3}' | sort)
  cdeclared=$(grep -Eo '^[A-Za-z].*[ *](tl_[a-z0-9_]+)\(' "$prefix/include/tilec/tilec.h" | grep -Eo 'tl_[a-z0-9_]+\($' | tr -d '(' | sort)
  [ "$cexported" = "$cdeclared" ] || fail "libtilec.so exports [$(echo $cexported)], tilec.h declares [$(echo $cdeclared)]"

  # ---- find_package: the example as a user copies it
  cp -r "$src/examples/aot" "$tmp/aot"
  cmake -S "$tmp/aot" -B "$tmp/aot/build" -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/configure.log" 2>&1 ||
    { cat "$tmp/configure.log"; fail "configuring examples/aot"; }
  cmake --build "$tmp/aot/build" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "building examples/aot"; }
  gen=$tmp/aot/build/tilec_kernels/rmsnorm_aot/rms_norm.tile.c
  if [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
    for a in sm_80 sm_90; do grep -q "{TLRT_IMAGE_CUBIN, ${a#sm_}, 0," "$gen" || fail "no $a cubin embedded"; done
    grep -q '{TLRT_IMAGE_PTX, 90, 0,' "$gen" || fail "no sm_90 PTX embedded for the JIT"
  else
    grep -q 'kernels are embedded as PTX only' "$tmp/configure.log" || fail "no configure message about PTX only"
  fi
  grep -q '{TLRT_IMAGE_HOST,' "$gen" || fail "no host code embedded"
  if grep -rIl -- "$build/" "$tmp/aot/build"; then fail "the example's build refers to the tilec build tree"; fi
  "$tmp/aot/build/rmsnorm_aot" | tee "$tmp/run.log"
  grep -q 'kernels: host code (emulator)' "$tmp/run.log" || fail "the example did not run the embedded host code"

  # ---- PTX only (as without ptxas)
  cmake -S "$tmp/aot" -B "$tmp/aot/ptx" -DCMAKE_PREFIX_PATH="$prefix" -DTILEC_PTX_ONLY=ON > "$tmp/configure2.log" 2>&1 ||
    { cat "$tmp/configure2.log"; fail "configuring examples/aot with TILEC_PTX_ONLY"; }
  grep -q 'kernels are embedded as PTX only' "$tmp/configure2.log" || fail "no configure message about PTX only"
  cmake --build "$tmp/aot/ptx" > "$tmp/build2.log" 2>&1 || { cat "$tmp/build2.log"; fail "building PTX only"; }
  gen=$tmp/aot/ptx/tilec_kernels/rmsnorm_aot/rms_norm.tile.c
  if grep -q TLRT_IMAGE_CUBIN "$gen"; then fail "TILEC_PTX_ONLY embedded a cubin"; fi
  for cc in 80 90; do grep -q "{TLRT_IMAGE_PTX, $cc, 0," "$gen" || fail "PTX only: no sm_$cc PTX"; done
  "$tmp/aot/ptx/rmsnorm_aot" > "$tmp/run2.log" || { cat "$tmp/run2.log"; fail "the PTX-only build did not run"; }

  # ---- pkg-config and a plain Makefile
  cp -r "$src/examples/aot" "$tmp/mk"
  PKG_CONFIG_PATH="$prefix/lib/pkgconfig" make -C "$tmp/mk" > "$tmp/make.log" 2>&1 || { cat "$tmp/make.log"; fail "make with pkg-config"; }
  "$tmp/mk/build/rmsnorm_aot" | tee "$tmp/run3.log"
  grep -q 'kernels: host code (emulator)' "$tmp/run3.log" || fail "the Makefile build did not run the embedded host code"
  # ---- a plug-in opened with RTLD_LOCAL: libtilert is outside the global scope, kernels still resolve
  kinc=$tmp/aot/build/tilec_kernels/rmsnorm_aot
  cc -std=c17 -shared -fPIC -o "$tmp/plugin.so" "$src/tests/package/plugin/plugin.c" "$kinc/rms_norm.tile.c" \
     -I"$kinc/include" $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs tilert) -lm
  cc -std=c17 -o "$tmp/host" "$src/tests/package/plugin/host.c" -ldl
  "$tmp/host" "$tmp/plugin.so" || fail "the RTLD_LOCAL plug-in"
  # ---- C++: the generated header and tilert.h declare C linkage
  if command -v c++ > /dev/null; then
    printf '%s\n' '#include "rms_norm.tile.h"' 'int main() {' '  TlrtContext *ctx = nullptr; TlrtModule *m = nullptr;' \
      '  if (tlrt_create(TLRT_DEVICE_EMU, &ctx) != TLRT_OK || tilec_load_rms_norm(ctx, &m) != TLRT_OK) return 1;' \
      '  int n = tlrt_module_kernel_count(m); tlrt_module_unload(m); tlrt_destroy(ctx); return n == 1 ? 0 : 1;' '}' > "$tmp/cxx.cpp"
    cc -std=c17 -c -o "$tmp/kernels.o" -I"$prefix/include" "$kinc/rms_norm.tile.c"
    c++ -std=c++17 -Wall -Werror -o "$tmp/cxx" -I"$kinc/include" "$tmp/cxx.cpp" "$tmp/kernels.o" \
        $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs tilert)
    "$tmp/cxx" || fail "a C++ program could not load the embedded module"
  else
    echo "note: no C++ compiler (c++): the C++ check did not run"
  fi
  # ---- libtileops: dependencies (libtilert, libc, libm: nothing from LLVM), exports = tileops.h, and
  # examples/tileops (fused conv-BN-ReLU-add, gemm + bias + gelu) built with find_package and with
  # pkg-config against the prefix, run, checked against float64 by the example itself
  ops=$prefix/lib/libtileops.so
  [ -e "$ops" ] || fail "the package has no libtileops.so"
  readelf -d "$ops" | grep -q 'SONAME.*\[libtileops\.so\.0\]' || fail "libtileops.so has no SONAME libtileops.so.0"
  if readelf -d "$ops" | grep -Eq 'R(UN)?PATH'; then fail "libtileops.so has an RPATH"; fi
  oneeded=$(readelf -d "$ops" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
  echo "libtileops.so needs: $oneeded"
  for lib in $oneeded; do
    case "$lib" in libtilert.so.0|libc.so.6|libm.so.6|libdl.so.2|libpthread.so.0|ld-linux-x86-64.so.2) ;;
      *) fail "libtileops.so depends on $lib (only libtilert, libc, libm may be needed; nothing from LLVM)";; esac
  done
  oexported=$(nm -D --defined-only "$ops" | awk '$2 ~ /^[TWDRBV]$/ {print $3}' | sort)
  odeclared=$(grep -Eo '^[A-Za-z].*[ *](tileops_[a-z0-9_]+)\(' "$prefix/include/tilec/tileops.h" | grep -Eo 'tileops_[a-z0-9_]+\($' | tr -d '(' | sort)
  [ "$oexported" = "$odeclared" ] || fail "libtileops.so exports [$(echo $oexported)], tileops.h declares [$(echo $odeclared)]"
  cp -r "$src/examples/tileops" "$tmp/ops"
  cmake -S "$tmp/ops" -B "$tmp/ops/build" -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/ops-configure.log" 2>&1 ||
    { cat "$tmp/ops-configure.log"; fail "configuring examples/tileops"; }
  cmake --build "$tmp/ops/build" > "$tmp/ops-build.log" 2>&1 || { cat "$tmp/ops-build.log"; fail "building examples/tileops"; }
  "$tmp/ops/build/tileops_example" | tee "$tmp/ops-run.log" || fail "examples/tileops (find_package) failed"
  grep -q '^OK$' "$tmp/ops-run.log" || fail "examples/tileops did not print OK"
  cp -r "$src/examples/tileops" "$tmp/opsmk"
  PKG_CONFIG_PATH="$prefix/lib/pkgconfig" make -C "$tmp/opsmk" > "$tmp/ops-make.log" 2>&1 || { cat "$tmp/ops-make.log"; fail "make examples/tileops with pkg-config"; }
  "$tmp/opsmk/build/tileops_example" > "$tmp/ops-run2.log" || { cat "$tmp/ops-run2.log"; fail "examples/tileops (pkg-config) failed"; }
  echo "package.install: OK"
  exit 0
fi

# ---- rebuild: dependencies are per .tile and per target
cp -r "$src/tests/package/rebuild" "$tmp/rb"
cmake -S "$tmp/rb" -B "$tmp/rb/build" -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log"; fail "configuring tests/package/rebuild"; }
cmake --build "$tmp/rb/build" > "$tmp/build1.log" 2>&1 || { cat "$tmp/build1.log"; fail "first build"; }
[ "$("$tmp/rb/build/one")" = twice ] && [ "$("$tmp/rb/build/two")" = plus_one ] || fail "the first build's programs"
two_before=$(stat -c %Y.%y "$tmp/rb/build/two")
sleep 1
sed -i 's/kernel twice(/kernel thrice(/' "$tmp/rb/one.tile"
cmake --build "$tmp/rb/build" > "$tmp/build2.log" 2>&1 || { cat "$tmp/build2.log"; fail "rebuild"; }
cat "$tmp/build2.log"
grep -q 'tilec one.tile -> PTX sm_80' "$tmp/build2.log" || fail "editing one.tile did not recompile it"
grep -q 'Linking C executable one' "$tmp/build2.log" || fail "editing one.tile did not relink one"
if grep -Eq 'two\.tile|executable two' "$tmp/build2.log"; then fail "editing one.tile rebuilt target two"; fi
[ "$(stat -c %Y.%y "$tmp/rb/build/two")" = "$two_before" ] || fail "two was rewritten"
[ "$("$tmp/rb/build/one")" = thrice ] || fail "one does not run the edited kernel"
cmake --build "$tmp/rb/build" > "$tmp/build3.log" 2>&1
if grep -Eq 'tilec|Linking' "$tmp/build3.log"; then cat "$tmp/build3.log"; fail "a build with nothing changed did work"; fi
echo "package.rebuild: OK"
