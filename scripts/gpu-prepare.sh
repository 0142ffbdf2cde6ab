#!/usr/bin/env bash
# Prepares the GPU run on a machine without a GPU: builds the runtime world for Hopper (rp-run,
# the CUDA unit tests that need a GPU and rp-bench-attention; protobuf static, no LLVM/MLIR, no
# MPI; stripped), compiles the check plans with rpc-compile (the example in fp32, bf16 and fp16;
# the GPT-OSS-shaped tiny export in fp32 and bf16), writes their data, takes the benchmark's
# plans when bench/export_qwen3_1p7b.sh made them, and packs everything the GPU machine needs,
# with the shared libraries it may lack (OpenBLAS), into gpu-stage/stage.tar.xz, and the
# Python wheels it lacks (Liger-Kernel, for the strongest PyTorch baseline) into
# gpu-stage/wheels/ (git-ignored; about 20 MiB in all).
#
#   bash scripts/gpu-prepare.sh      # then, on the GPU machine (carry gpu-stage):
#   bash scripts/gpu-run.sh OUTDIR   # or only the checks: scripts/gpu-check.sh STAGE OUTDIR
#
# RP_CUDA_ARCHS (default 90) picks the GPU architectures; RP_BENCH_PLANS (default
# bench/out/qwen3-1p7b/plans) the benchmark's plans; RP_LIGER_WHEEL (default
# liger-kernel==0.8.5) the wheel pip downloads when gpu-stage/wheels has none (RP_LIGER_WHEEL=
# "" : none); RP_STAGE_MAX_MIB (default 0: no limit) makes the script fail when the stage is
# larger than that many MiB, where it must fit a transfer limit. Needs build/bin/rpc-compile
# (run scripts/build.sh first).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="$root/build-gpu"
stage="$root/gpu-stage/stage"
rpc="$root/build/bin/rpc-compile"
[[ -x "$rpc" ]] || { echo "gpu-prepare: $rpc not found; run scripts/build.sh first" >&2; exit 1; }

RP_BUILD_DIR="$build" RP_BUILD_TARGET="rp-run rp-unit-tests rp-bench-attention" bash scripts/build.sh \
  -DRP_ENABLE_COMPILER=OFF -DRP_STATIC_PROTOBUF=ON -DRP_ENABLE_MPI=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="${RP_CUDA_ARCHS:-90}"
# cuDNN attention is compiled in when scripts/install-deps.sh fetched the frontend's headers;
# libcudnn itself is not packed (the GPU machine's PyTorch has one; gpu-check.sh finds it).
echo "gpu-prepare: cuDNN attention $(grep -o 'cudnn-sdpa=[A-Z]*' "$build.configure.log" || echo 'cudnn-sdpa=?')"

wheels="$root/gpu-stage/wheels"
saved_wheels="$(mktemp -d)"
[[ -d "$wheels" ]] && cp -a "$wheels/." "$saved_wheels/"
rm -rf "$root/gpu-stage"
mkdir -p "$stage/bin" "$stage/lib" "$stage/plans" "$wheels"
cp -a "$saved_wheels/." "$wheels/" && rm -rf "$saved_wheels"
cp "$build/bin/rp-run" "$build/bin/rp-bench-attention" "$stage/bin/"
# The CUDA unit tests, wherever test/Unit's folders put them (kernels/cuda, runtime/backends/cuda);
# not the host replays (-host-test: ctest runs them without a GPU).
find "$build/test/Unit" -type f -name 'rp-cuda-*' ! -name '*-host-test' -perm -u+x \
  -exec cp {} "$stage/bin/" \;
strip --strip-unneeded "$stage"/bin/*
# Shared libraries outside glibc/libstdc++ and CUDA that the binaries load.
for lib in $(ldd "$stage"/bin/* | awk '/=>/ {print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|libstdc++*|libgcc_s*|ld-linux*) ;;
    libcuda*|libcublas*|libcudart*|libnvrtc*) ;; # the GPU machine's CUDA 13
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done

strip --strip-unneeded "$stage"/lib/* 2>/dev/null || true

model="$root/examples/qwen3-tiny/model.onnx"
for dtype in fp32 bf16; do
  "$rpc" "$model" --gpus 2 --micro-batches 4 --update sync --dtype "$dtype" \
    -o "$stage/plans/qwen3-tiny-$dtype.rpplan"
done
# fp16 with loss scaling against fp32: one worker, one micro-batch (bench/fp16_loss_scale.sh's).
for dtype in fp32 fp16; do
  "$rpc" "$model" --gpus 1 --micro-batches 1 --update sync --dtype "$dtype" \
    -o "$stage/plans/qwen3-tiny-m1-$dtype.rpplan"
done
gptoss="$root/test/Frontends/onnx/Inputs/exports/gpt_oss-dynamo/model.onnx"
for dtype in fp32 bf16; do
  "$rpc" "$gptoss" --gpus 2 --micro-batches 2 --update sync --dtype "$dtype" \
    -o "$stage/plans/gpt-oss-tiny-$dtype.rpplan"
done
/usr/bin/python3 "$root/examples/data/prepare_corpus.py" "$stage/fortunes.bin"
/usr/bin/python3 "$root/test/Tools/Inputs/make_tokens.py" words "$stage/gptoss-tokens.bin" 20000 264
# Plans of one model share their initial weights: one copy, the others link to it.
(
  cd "$stage/plans"
  for f in *.safetensors; do
    for g in *.safetensors; do
      [[ "$g" < "$f" && ! -L "$g" ]] && cmp -s "$f" "$g" && { ln -sf "$g" "$f"; break; }
    done
  done
)

# The benchmark's plans (no weights: bench/make_inputs.py writes them on the GPU machine).
bench_plans="${RP_BENCH_PLANS:-$root/bench/out/qwen3-1p7b/plans}"
if [[ -f "$bench_plans/model.json" ]]; then
  mkdir -p "$stage/bench-plans"
  cp "$bench_plans/model.json" "$bench_plans/params.json" "$stage/bench-plans/"
  for p in "$bench_plans"/p*/model.rpplan; do
    n="$(basename "$(dirname "$p")")"
    mkdir -p "$stage/bench-plans/$n" && cp "$p" "$stage/bench-plans/$n/"
  done
  echo "gpu-prepare: benchmark plans from $bench_plans: $(cd "$stage/bench-plans" && echo p[0-9]*)"
else
  echo "gpu-prepare: no benchmark plans in $bench_plans (bench/export_qwen3_1p7b.sh makes them)"
fi

liger="${RP_LIGER_WHEEL-liger-kernel==0.8.5}"
if [[ -n "$liger" ]] && ! compgen -G "$wheels/*.whl" >/dev/null; then
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux2014_x86_64 -d "$wheels" "$liger" ||
    echo "gpu-prepare: could not download $liger; the Liger baselines will fail" >&2
fi
echo "commit $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo ' (with local changes)')" \
  >"$root/gpu-stage/STAMP"

tar -C "$root/gpu-stage" -cf - stage | xz -T"$(nproc)" -9e >"$root/gpu-stage/stage.tar.xz"
rm -rf "$stage"
size=$(du -cb "$root/gpu-stage/stage.tar.xz" "$wheels" | tail -n 1 | cut -f1)
echo "gpu-prepare: gpu-stage/ ($((size / 1048576)) MiB: stage.tar.xz, wheels/)"
max_mib="${RP_STAGE_MAX_MIB:-0}"
if ((max_mib > 0 && size > max_mib * 1048576)); then
  echo "gpu-prepare: the stage is over RP_STAGE_MAX_MIB=$max_mib MiB" >&2
  exit 1
fi
