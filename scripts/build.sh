#!/usr/bin/env bash
# Configures and builds rpc into $RP_BUILD_DIR (default: build/), with ccache and Ninja.
# Extra arguments go to the CMake configure step (e.g. -DRP_ENABLE_COMPILER=OFF);
# RP_BUILD_TARGET builds the targets it names instead of all (scripts/build-fuzz.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${RP_BUILD_DIR:-$root/build}"

# The compiler cache lives outside the repository; paths are hashed relative to the repo so
# that clean clones and separate build directories share entries.
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/rpc-ccache}"
export CCACHE_BASEDIR="$root"
export CCACHE_NOHASHDIR=1
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"

jobs="${RP_JOBS:-$(nproc)}"
echo "build: configuring $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${RP_BUILD_TYPE:-Release}" "$@" >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; echo "build: configure failed" >&2; exit 1; }
grep -E "^-- rpc:" "$build.configure.log" || true
echo "build: compiling with $jobs jobs"
# shellcheck disable=SC2086 # RP_BUILD_TARGET may name several targets
cmake --build "$build" -j "$jobs" ${RP_BUILD_TARGET:+--target $RP_BUILD_TARGET}
