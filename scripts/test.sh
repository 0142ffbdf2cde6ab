#!/usr/bin/env bash
# Runs every test of rpc: installs what is missing, builds (compiler + runtime), runs ctest
# (lit + FileCheck, GoogleTest, docs check), then proves that the runtime world builds and
# passes its tests alone, without LLVM/MLIR (-DRP_ENABLE_COMPILER=OFF), and finally replays the
# fuzz regression corpus through the fuzz targets and runs the unit tests, both built with
# clang, ASan and UBSan (scripts/build-fuzz.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/install-deps.sh

RP_BUILD_DIR="$root/build" bash scripts/build.sh
ctest --test-dir "$root/build" --output-on-failure -j "$(nproc)"

# The runtime world alone, also without MPI (RP_ENABLE_MPI=OFF): rp-run builds without data
# parallelism and refuses to train under an MPI launch (docs/MULTI_NODE.md); and without the
# cuDNN frontend (RP_ENABLE_CUDNN=OFF): attention on rpc's own CUDA kernels (docs/CUDA.md).
echo "test: runtime world alone (RP_ENABLE_COMPILER=OFF), without MPI and cuDNN"
RP_BUILD_DIR="$root/build-runtime" bash scripts/build.sh -DRP_ENABLE_COMPILER=OFF -DRP_ENABLE_MPI=OFF \
  -DRP_ENABLE_CUDNN=OFF
# No compile or link line of the runtime world may name LLVM/MLIR headers or libraries.
if grep -qE "llvm-22|libMLIR|libLLVM" "$root/build-runtime/build.ninja"; then
  echo "test: the runtime-only build references LLVM/MLIR" >&2
  exit 1
fi
ctest --test-dir "$root/build-runtime" --output-on-failure -j "$(nproc)"
# (Its exit status is 2 by design: the output is captured first, so that pipefail does not
# read the refusal as the check's failure.)
refusal=$(OMPI_COMM_WORLD_SIZE=2 "$root/build-runtime/bin/rp-run" none.rpplan --data none.bin \
  --steps 1 2>&1 || true)
if grep -q "built without MPI" <<<"$refusal"; then :; else
  echo "test: rp-run without MPI did not refuse an MPI launch" >&2
  exit 1
fi

echo "test: sanitizer build (clang, ASan + UBSan): fuzz regression corpus and unit tests"
RP_BUILD_DIR="$root/build-fuzz" bash scripts/build-fuzz.sh
ctest --test-dir "$root/build-fuzz" -L 'fuzz|unit' --output-on-failure -j "$(nproc)"
