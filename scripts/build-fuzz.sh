#!/usr/bin/env bash
# Builds the sanitizer + libFuzzer tree (default build-fuzz/): clang-22 with AddressSanitizer,
# UndefinedBehaviorSanitizer and libFuzzer's coverage instrumentation (RP_FUZZ=ON), CUDA off,
# only the fuzz targets (rp-fuzzers) and the runtime world's unit tests (rp-unit-tests), with
# what they link. Used by scripts/fuzz.sh and by scripts/test.sh, which replays the regression
# corpus test/fuzz-corpus/ and runs the unit tests with it (ctest -L 'fuzz|unit').
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RP_BUILD_DIR="${RP_BUILD_DIR:-$root/build-fuzz}" RP_BUILD_TARGET="rp-fuzzers rp-unit-tests" \
  exec bash "$root/scripts/build.sh" -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DRP_FUZZ=ON -DRP_ENABLE_CUDA=OFF
