# lit configuration for rpc's compiler tests (FileCheck, not, -verify-diagnostics).
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "rpc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtext", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.rp_obj_root, "test")
config.excludes = ["Unit", "Analysis", "Conformance", "Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.rp_tools_dir, append_path=True)

tool_dirs = [config.rp_tools_dir, config.llvm_tools_dir]
tools = ["rp-opt", "rpc-compile", "rp-ref", "rp-run", "rpc-finetune"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Python with Debian's python3-onnx (the interpreter lit runs under) for tests that write
# binary models and tensors.
import sys
config.substitutions.append(("%python", sys.executable))

# "torch-python": a Python with the export environment (examples/export/requirements.txt:
# torch, transformers, onnx, onnxscript, tokenizers, peft, PyYAML), named by the environment
# variable RP_TORCH_PYTHON or CMake's RP_TORCH_PYTHON, as %torch_python: the tests that export,
# tokenize and load models end to end. Without one they are unsupported.
import subprocess as _subprocess
_torch_python = os.environ.get("RP_TORCH_PYTHON") or getattr(config, "rp_torch_python", "")
if _torch_python:
    try:
        # find_spec, not import: torch takes seconds to import, and ctest runs lit per file.
        _probe = _subprocess.run(
            [_torch_python, "-c", "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) "
             "is None for m in ['torch', 'transformers', 'onnx', 'onnxscript', 'tokenizers', "
             "'peft', 'yaml']))"], capture_output=True, timeout=60)
        _ok = _probe.returncode == 0
    except (OSError, _subprocess.SubprocessError):
        _ok = False
    if _ok:
        config.available_features.add("torch-python")
        config.substitutions.append(("%torch_python", _torch_python))
    else:
        lit_config.note(f"RP_TORCH_PYTHON {_torch_python} lacks the export environment: the "
                        "torch-python tests are unsupported")

# "cuda": this build has the CUDA backend (RP_ENABLE_CUDA); "gpu": an NVIDIA device is visible.
if config.rp_enable_cuda:
    config.available_features.add("cuda")
# "cudnn-sdpa": the CUDA backend was built with the cuDNN frontend (cmake/RpCudnn.cmake).
if getattr(config, "rp_have_cudnn_frontend", False):
    config.available_features.add("cudnn-sdpa")
if os.path.exists("/dev/nvidia0") or os.path.exists("/dev/nvidiactl"):
    config.available_features.add("gpu")

# "mpi": rp-run was built with MPI (runtime/dist) and an mpirun is on PATH: the data-parallel
# tests run; "no-mpi": rp-run was built without MPI (its refusal under a launcher is tested).
# The tests use Open MPI's mpirun options and environment (OMPI_COMM_WORLD_RANK).
import shutil
import subprocess
def _open_mpi_mpirun():
    if not shutil.which("mpirun"):
        return False
    try:
        out = subprocess.run(["mpirun", "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return "Open MPI" in out.stdout + out.stderr
if config.rp_have_mpi and _open_mpi_mpirun():
    config.available_features.add("mpi")
elif config.rp_have_mpi:
    lit_config.note("rp-run has MPI but no Open MPI mpirun is on PATH: the data-parallel "
                    "tests (REQUIRES: mpi) are unsupported")
if not config.rp_have_mpi:
    config.available_features.add("no-mpi")
