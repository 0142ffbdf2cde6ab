#!/usr/bin/env bash
# Installs, with apt-get, exactly what rpc's build and tests need on Debian bookworm.
# Idempotent: packages already present are left alone, and nothing runs when all are present.
# The CUDA toolkit is never installed here; CMake detects it at /usr/local/cuda when present.
# The cuDNN frontend's headers (header-only C++, NVIDIA/cudnn-frontend) come from its PyPI wheel
# into deps/ (git-ignored), see install_cudnn_frontend below; without them the CUDA backend
# runs attention on its own kernels.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The pinned cuDNN frontend release: its include/ goes to deps/cudnn-frontend/include, where
# CMake looks (RP_CUDNN_FRONTEND_DIR). Needs python3 with pip and the network; failing that it
# says so and the build goes on without cuDNN attention.
CUDNN_FRONTEND_VERSION=1.32.0
install_cudnn_frontend() {
  local dest="$root/deps/cudnn-frontend"
  if [ -f "$dest/VERSION" ] && [ "$(cat "$dest/VERSION")" = "$CUDNN_FRONTEND_VERSION" ]; then
    echo "install-deps: cudnn-frontend $CUDNN_FRONTEND_VERSION present"
    return 0
  fi
  local tmp
  tmp="$(mktemp -d)"
  if ! python3 -m pip download --quiet --no-deps --only-binary=:all: \
      "nvidia-cudnn-frontend==$CUDNN_FRONTEND_VERSION" -d "$tmp" >"$tmp/pip.log" 2>&1; then
    echo "install-deps: cannot download nvidia-cudnn-frontend $CUDNN_FRONTEND_VERSION" \
      "(python3 -m pip download failed; attention will run on rpc's own CUDA kernels):" >&2
    tail -n 3 "$tmp/pip.log" >&2
    rm -rf "$tmp"
    return 0
  fi
  rm -rf "$dest"
  mkdir -p "$dest"
  python3 - "$tmp" "$dest" <<'PY'
import glob, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
wheel = zipfile.ZipFile(glob.glob(tmp + "/*.whl")[0])
members = [n for n in wheel.namelist() if n.startswith("include/")]
wheel.extractall(dest, members)
PY
  echo "$CUDNN_FRONTEND_VERSION" >"$dest/VERSION"
  rm -rf "$tmp"
  echo "install-deps: cudnn-frontend $CUDNN_FRONTEND_VERSION headers in deps/cudnn-frontend/include"
}

PACKAGES=(
  # build tools
  cmake ninja-build ccache g++ pkg-config python3 python3-pip
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
  libxxhash-dev
  # the sanitizer + fuzz build (build-fuzz/: clang with libFuzzer, ASan, UBSan, OpenMP)
  clang-22 libclang-rt-22-dev libomp-22-dev
  # rp-run's data parallelism across nodes (optional at build time; docs/MULTI_NODE.md)
  openmpi-bin libopenmpi-dev
  # the main job's English corpus (examples/data/prepare_corpus.py)
  fortunes fortunes-min
  # chat templates of the fine-tuning data script (examples/data/prepare_sft.py --model)
  python3-jinja2
  # rpc-finetune's config files (YAML)
  python3-yaml
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  install_cudnn_frontend
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
install_cudnn_frontend
