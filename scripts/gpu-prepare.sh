#!/usr/bin/env bash
# Prepares the GPU checks of the CUDA backend on a machine without a GPU: builds the
# runtime world for Hopper (rp-run, the CUDA unit tests and rp-bench-attention; protobuf
# static, no LLVM/MLIR),
# compiles the example plans with rpc-compile, writes the data, and packs everything the GPU
# machine needs, with the shared libraries it may lack (OpenBLAS), into
# gpu-stage/stage.tar.xz (git-ignored; about 14 MiB).
#
#   bash scripts/gpu-prepare.sh                 # then, on the GPU machine (carry gpu-stage):
#   bash scripts/gpu-check.sh gpu-stage/stage.tar.xz OUTDIR
#
# RP_CUDA_ARCHS (default 90) picks the GPU architectures; RP_STAGE_MAX_MIB (default 0: no
# limit) makes the script fail when the stage is larger than that many MiB, where the stage
# must fit a transfer limit. Needs build/bin/rpc-compile (run scripts/build.sh first).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="$root/build-gpu"
stage="$root/gpu-stage/stage"
rpc="$root/build/bin/rpc-compile"
[[ -x "$rpc" ]] || { echo "gpu-prepare: $rpc not found; run scripts/build.sh first" >&2; exit 1; }

RP_BUILD_DIR="$build" RP_BUILD_TARGET="rp-run rp-unit-tests rp-bench-attention" bash scripts/build.sh \
  -DRP_ENABLE_COMPILER=OFF -DRP_STATIC_PROTOBUF=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${RP_CUDA_ARCHS:-90}"
# cuDNN attention is compiled in when scripts/install-deps.sh fetched the frontend's headers;
# libcudnn itself is not packed (the GPU machine's PyTorch has one; gpu-check.sh finds it).
echo "gpu-prepare: cuDNN attention $(grep -o 'cudnn-sdpa=[A-Z]*' "$build.configure.log" || echo 'cudnn-sdpa=?')"

rm -rf "$root/gpu-stage"
mkdir -p "$stage/bin" "$stage/lib" "$stage/plans"
cp "$build/bin/rp-run" "$build/bin/rp-bench-attention" "$stage/bin/"
# The CUDA unit tests, wherever test/Unit's folders put them (kernels/cuda, runtime/backends/cuda).
find "$build/test/Unit" -type f -name 'rp-cuda-*' -perm -u+x -exec cp {} "$stage/bin/" \;
# Shared libraries outside glibc/libstdc++ and CUDA that the binaries load.
for lib in $(ldd "$stage"/bin/* | awk '/=>/ {print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|libstdc++*|libgcc_s*|ld-linux*) ;;
    libcuda*|libcublas*|libcudart*|libnvrtc*) ;; # the GPU machine's CUDA 13
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done

model="$root/examples/qwen3-tiny/model.onnx"
for dtype in fp32 bf16; do
  "$rpc" "$model" --gpus 2 --micro-batches 4 --update sync --dtype "$dtype" \
    -o "$stage/plans/qwen3-tiny-$dtype.rpplan"
done
/usr/bin/python3 "$root/examples/data/prepare_corpus.py" "$stage/fortunes.bin"
cp "$root/scripts/gpu-check.sh" "$stage/"

tar -C "$root/gpu-stage" -cJf "$root/gpu-stage/stage.tar.xz" stage
rm -rf "$stage"
size=$(stat -c %s "$root/gpu-stage/stage.tar.xz")
echo "gpu-prepare: gpu-stage/stage.tar.xz ($((size / 1048576)) MiB)"
max_mib="${RP_STAGE_MAX_MIB:-0}"
if ((max_mib > 0 && size > max_mib * 1048576)); then
  echo "gpu-prepare: the stage is over RP_STAGE_MAX_MIB=$max_mib MiB" >&2
  exit 1
fi
