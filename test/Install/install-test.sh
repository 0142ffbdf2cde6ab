#!/usr/bin/env bash
# The install test (ctest label "install"): installs a build tree with `cmake --install` into a
# temporary prefix and runs the installed tools from there.
#
#   install-test.sh BUILD_DIR SOURCE_DIR WRITE_TEST_PLAN COMPILER
#
# BUILD_DIR: a configured and built tree; SOURCE_DIR: the repository root (the bundled example);
# WRITE_TEST_PLAN: rp-write-test-plan (writes a small plan and its weights into a directory);
# COMPILER: 1 when the tree has the compiler tools (RP_ENABLE_COMPILER), else 0.
#
# Checks, for the runtime component alone (`--component runtime`) and for the whole install:
# <prefix>/bin holds exactly the expected tools (rp-run; with the compiler also rpc-compile,
# rp-opt, rp-ref and the Python script rpc-finetune, whose helpers lie in share/rpc/python),
# ldd resolves every library each binary needs and none of them lies in the build tree, each
# one runs (--version), and the documentation is under share/doc/rpc. Then
# the installed rp-run --check accepts the small plan and, with the compiler, the plan the
# installed rpc-compile writes for the bundled example (examples/qwen3-tiny). Finally cpack
# writes the Debian packages (cmake/Packaging.cmake) and their contents and Depends are
# checked. Everything is written under a temporary directory, removed at the end. Any failure
# exits 1 with the reason.
set -euo pipefail

if [ $# -ne 4 ]; then
  echo "usage: install-test.sh BUILD_DIR SOURCE_DIR WRITE_TEST_PLAN COMPILER" >&2
  exit 2
fi
build="$(cd "$1" && pwd)"
source="$(cd "$2" && pwd)"
write_plan="$3"
compiler="$4"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fail() {
  echo "install-test: FAIL: $*" >&2
  exit 1
}

# check_prefix PREFIX TOOL...: PREFIX/bin holds exactly the TOOLs, each resolves its libraries
# outside the build tree and runs.
check_prefix() {
  local prefix="$1"
  shift
  local want have tool libs
  want="$(printf '%s\n' "$@" | sort | tr '\n' ' ')"
  [ -d "$prefix/bin" ] || fail "$prefix/bin is missing"
  have="$(find "$prefix/bin" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' ')"
  [ "$have" = "$want" ] || fail "$prefix/bin holds '$have', expected '$want'"
  for tool in "$@"; do
    [ -x "$prefix/bin/$tool" ] || fail "$prefix/bin/$tool is not executable"
    if [ "$(head -c 2 "$prefix/bin/$tool")" = "#!" ]; then # a script: no libraries
      "$prefix/bin/$tool" --version >"$work/version.txt" 2>&1 ||
        fail "$prefix/bin/$tool --version failed: $(cat "$work/version.txt")"
      echo "install-test: $prefix/bin/$tool: $(head -1 "$work/version.txt")"
      continue
    fi
    libs="$(ldd "$prefix/bin/$tool")" || fail "ldd $prefix/bin/$tool failed"
    if grep -q "not found" <<<"$libs"; then
      fail "$prefix/bin/$tool: libraries not found: $(grep "not found" <<<"$libs" | tr -s ' \t' ' ')"
    fi
    if grep -qF "$build" <<<"$libs"; then
      fail "$prefix/bin/$tool loads libraries from the build tree: $(grep -F "$build" <<<"$libs")"
    fi
    "$prefix/bin/$tool" --version >"$work/version.txt" 2>&1 ||
      fail "$prefix/bin/$tool --version failed: $(cat "$work/version.txt")"
    [ -s "$work/version.txt" ] || fail "$prefix/bin/$tool --version printed nothing"
    echo "install-test: $prefix/bin/$tool: $(head -1 "$work/version.txt")"
  done
  [ -f "$prefix/share/doc/rpc/README.md" ] || fail "$prefix/share/doc/rpc/README.md is missing"
  for doc in "$source"/docs/*.md; do
    [ -f "$prefix/share/doc/rpc/docs/$(basename "$doc")" ] ||
      fail "$prefix/share/doc/rpc/docs/$(basename "$doc") is missing"
  done
}

# check_plan RP_RUN PLAN: rp-run --check accepts PLAN.
check_plan() {
  "$1" "$2" --check >"$work/check.txt" 2>&1 || fail "$1 $2 --check failed: $(cat "$work/check.txt")"
  grep -qF "rp-run: $2 is valid" "$work/check.txt" ||
    fail "$1 $2 --check did not report the plan valid: $(cat "$work/check.txt")"
  echo "install-test: $1 --check: $2 is valid"
}

tools=(rp-run)
if [ "$compiler" = 1 ]; then
  tools+=(rpc-compile rp-opt rp-ref rpc-finetune)
fi

cmake --install "$build" --prefix "$work/runtime" --component runtime >"$work/install.log" 2>&1 ||
  fail "cmake --install --component runtime failed: $(cat "$work/install.log")"
check_prefix "$work/runtime" rp-run

cmake --install "$build" --prefix "$work/all" >"$work/install.log" 2>&1 ||
  fail "cmake --install failed: $(cat "$work/install.log")"
check_prefix "$work/all" "${tools[@]}"
if [ "$compiler" = 1 ]; then
  for helper in export_model.py tokenfiles.py; do
    [ -f "$work/all/share/rpc/python/$helper" ] || fail "share/rpc/python/$helper is missing"
  done
  grep -q '^VERSION = "[0-9]' "$work/all/bin/rpc-finetune" ||
    fail "the installed rpc-finetune does not carry the version"
fi

mkdir "$work/plans"
"$write_plan" "$work/plans" || fail "$write_plan failed"
check_plan "$work/runtime/bin/rp-run" "$work/plans/tiny.rpplan"

if [ "$compiler" = 1 ]; then
  "$work/all/bin/rpc-compile" "$source/examples/qwen3-tiny/model.onnx" --gpus 2 \
    --micro-batches 4 --update sync -o "$work/plans/qwen3-tiny.rpplan" >"$work/compile.log" 2>&1 ||
    fail "the installed rpc-compile failed on the example: $(cat "$work/compile.log")"
  check_plan "$work/all/bin/rp-run" "$work/plans/qwen3-tiny.rpplan"
fi
# The Debian packages (cpack; Depends from dpkg-shlibdeps): rpc-runtime holds rp-run and never
# depends on LLVM/MLIR; rpc holds the compiler tools and depends on rpc-runtime.
cpack --config "$build/CPackConfig.cmake" -B "$work/packages" >"$work/cpack.log" 2>&1 ||
  fail "cpack failed: $(cat "$work/cpack.log")"
# check_package NAME TOOL: cpack wrote NAME_*.deb holding usr/bin/TOOL; prints its Depends
# (the output is read whole: `grep -q` on a pipe would end the writer early under pipefail).
check_package() {
  local deb
  deb="$(ls "$work/packages/$1"_*.deb 2>/dev/null)" || fail "cpack wrote no $1 package"
  dpkg-deb -c "$deb" >"$work/contents.txt" || fail "dpkg-deb -c $deb failed"
  grep -q "\./usr/bin/$2\$" "$work/contents.txt" || fail "$deb does not hold usr/bin/$2"
  depends="$(dpkg-deb -f "$deb" Depends)"
  echo "install-test: $(basename "$deb"): Depends: $depends"
}
check_package rpc-runtime rp-run
if grep -qiE "llvm|mlir" <<<"$depends"; then
  fail "rpc-runtime depends on LLVM/MLIR: $depends"
fi
if [ "$compiler" = 1 ]; then
  check_package rpc rpc-compile
  grep -q "rpc-runtime (= " <<<"$depends" || fail "rpc does not depend on rpc-runtime: $depends"
fi
echo "install-test: passed (${tools[*]})"
