# shellcheck shell=bash
# Sourced by the bench scripts: their environment variables all carry the RP_ prefix.
#
#   value="$(rp_env RP_NAME OLD_NAME DEFAULT)"
#
# prints $RP_NAME when it is set and not empty; else the bare name the script read before the
# RP_ prefix (OLD_NAME; "" when there was none), with a deprecation line on stderr -- the bare
# names are read for one release only; else DEFAULT.
rp_env() {
  local new="$1" old="$2"
  if [[ -n "${!new:-}" ]]; then
    printf '%s\n' "${!new}"
  elif [[ -n "$old" && -n "${!old:-}" ]]; then
    echo "$(basename "$0"): warning: $old is deprecated (read for this release only): set $new" >&2
    printf '%s\n' "${!old}"
  else
    printf '%s\n' "$3"
  fi
}

# The folder of the libcudnn that the PyTorch of Python $1 ships (nvidia/cudnn/lib), which
# rp-run's cuDNN attention dlopens; nothing when that Python has none.
#
#   lib="$(rp_torch_cudnn_lib python3)"
rp_torch_cudnn_lib() {
  local lib
  lib=$("$1" -c 'import nvidia, os; print(os.path.join(os.path.dirname(nvidia.__path__[0]), "nvidia", "cudnn", "lib"))' 2>/dev/null) || true
  [[ -n "$lib" && -d "$lib" ]] && printf '%s\n' "$lib"
  return 0
}
