//===- checkpoint.cpp - Fuzz target: checkpoint manifests ------------------===//
//
// The input is a checkpoint.json (runtime/train/Checkpoint.h), placed in a scratch checkpoint
// directory beside two small valid tensor files, model-step1.safetensors and
// optimizer-step1.safetensors, and loaded as `rp-run --resume DIR` loads it: the manifest may
// name any file, so path handling ("..", '/', absolute names) is exercised, not only the JSON.
// The tensor files' own bytes are the safetensors target's business.
// Seeds: manifests written by saveCheckpoint (scripts/fuzz.sh).

#include "fuzz/FuzzScratch.h"
#include "runtime/train/Checkpoint.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

using namespace rp::runtime;
using namespace rp::base;

namespace {

/// The checkpoint directory, created once with a valid step-1 checkpoint in it.
const std::string &checkpointDir() {
  static const std::string dir = [] {
    const std::string d = rp::fuzz::scratch().dir() + "/ckpt";
    float w[4] = {1, 2, 3, 4};
    CheckpointData data;
    data.step = 1;
    data.metadata = {{"seed", "7"}};
    data.model = {{"w", SafetensorsDType::F32, {4}, w, sizeof w}};
    data.optimizer = {{"m.w", SafetensorsDType::F32, {4}, w, sizeof w}};
    Status saved = saveCheckpoint(d, data);
    if (!saved.ok()) {
      std::fprintf(stderr, "rp-fuzz: %s\n", saved.message().c_str());
      std::abort();
    }
    return d;
  }();
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &dir = checkpointDir();
  rp::fuzz::scratch().write("ckpt/" + std::string(kCheckpointManifestName), data, size);
  StatusOr<LoadedCheckpoint> loaded = loadCheckpoint(dir);
  if (loaded.ok() && (loaded->model.tensors().empty() || loaded->optimizer.tensors().empty())) {
    std::fprintf(stderr, "rp-fuzz: a loaded checkpoint lost its tensors\n");
    std::abort();
  }
  return 0;
}
