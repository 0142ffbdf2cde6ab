#!/usr/bin/env bash
# Installs, with apt-get, exactly what rpc's build and tests need on Debian bookworm.
# Idempotent: packages already present are left alone, and nothing runs when all are present.
# The CUDA toolkit is never installed here; CMake detects it at /usr/local/cuda when present.
set -euo pipefail

PACKAGES=(
  # build tools
  cmake ninja-build ccache g++ pkg-config python3
  # Debian packages (cpack: dpkg-shlibdeps computes their Depends; cmake/Packaging.cmake)
  dpkg-dev file
  # MLIR / LLVM 22.1 (tools: /usr/lib/llvm-22/bin: mlir-tblgen, FileCheck, lit, not)
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  # LLVM's CMake config links these system libraries
  zlib1g-dev libzstd-dev libxml2-dev libedit-dev libffi-dev libcurl4-openssl-dev
  # plan files and ONNX
  protobuf-compiler libprotobuf-dev libonnx-dev libonnx-testdata python3-onnx
  # runtime libraries
  libgtest-dev nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev libopenblas-dev
  # the sanitizer + fuzz build (build-fuzz/: clang with libFuzzer, ASan, UBSan, OpenMP)
  clang-22 libclang-rt-22-dev libomp-22-dev
  # rp-run's data parallelism across nodes (optional at build time; docs/MULTI_NODE.md)
  openmpi-bin libopenmpi-dev
  # the main job's English corpus (examples/data/prepare_corpus.py)
  fortunes fortunes-min
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
