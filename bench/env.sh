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
