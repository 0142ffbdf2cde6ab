#!/usr/bin/env bash
# Fuzzes one target: scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...]   (docs/FUZZING.md)
#
# Builds the sanitizer + libFuzzer tree build-fuzz/ when needed (clang-22, ASan + UBSan;
# RP_FUZZ_BUILD_DIR overrides the path), seeds build-fuzz/corpus/TARGET/ from the repository's
# test inputs on first use (scripts/fuzz_seeds.py), then runs bin/rp-fuzz-TARGET for SECONDS
# over that working corpus and the regression corpus test/fuzz-corpus/TARGET/. New coverage
# goes to the working corpus; a crash, leak or timeout stops the run and leaves the input in
# build-fuzz/artifacts/TARGET/. Not part of CI (CI only replays test/fuzz-corpus/).
# Targets: onnx onnxtext plan safetensors tokens checkpoint profile target.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
targets="onnx onnxtext plan safetensors tokens checkpoint profile target"
if [ $# -lt 2 ] || ! [[ "$2" =~ ^[0-9]+$ ]] || ! [[ " $targets " == *" $1 "* ]]; then
  echo "usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...]" >&2
  echo "  TARGET: one of: $targets" >&2
  exit 2
fi
target="$1" seconds="$2"
shift 2
build="${RP_FUZZ_BUILD_DIR:-$root/build-fuzz}"

if [ ! -x "$build/bin/rp-fuzz-$target" ] || [ "${RP_FUZZ_REBUILD:-1}" = 1 ]; then
  RP_BUILD_DIR="$build" bash "$root/scripts/build-fuzz.sh" >&2
fi

corpus="$build/corpus/$target"
artifacts="$build/artifacts/$target"
mkdir -p "$artifacts" "$root/test/fuzz-corpus/$target"
if [ ! -d "$corpus" ]; then
  python3 "$root/scripts/fuzz_seeds.py" "$target" "$corpus"
fi
echo "fuzz: $target for $seconds s (corpus $corpus, findings in $artifacts/)"
cd "$build"
exec "$build/bin/rp-fuzz-$target" -max_total_time="$seconds" -print_final_stats=1 \
  -timeout=30 -rss_limit_mb=4096 -artifact_prefix="$artifacts/" "$@" \
  "$corpus" "$root/test/fuzz-corpus/$target"
