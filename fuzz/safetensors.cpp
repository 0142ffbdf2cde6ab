//===- safetensors.cpp - Fuzz target: the safetensors reader ---------------===//
//
// The input is a .safetensors file, read as rp-run reads weights and checkpoint tensors
// (runtime/io/Safetensors.h). Every tensor view of a file that reads is touched byte by byte
// (a view past the mapping is an ASan report), and looked up by name.
// Seeds: the .safetensors files under test/ and examples/ (scripts/fuzz.sh).

#include "fuzz/FuzzScratch.h"
#include "runtime/io/Safetensors.h"

#include <cstdio>
#include <cstdlib>

using namespace rp::runtime;
using namespace rp::base;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string path = rp::fuzz::scratch().write("weights.safetensors", data, size);
  StatusOr<SafetensorsFile> file = readSafetensors(path);
  if (!file.ok())
    return 0;
  unsigned sum = 0;
  for (const SafetensorsTensorView &t : file->tensors()) {
    for (size_t i = 0; i < t.size; ++i)
      sum += t.data[i];
    if (file->find(t.name) == nullptr || t.size > file->fileSize()) {
      std::fprintf(stderr, "rp-fuzz: tensor '%s' is listed but inconsistent\n", t.name.c_str());
      std::abort();
    }
  }
  for (const auto &[key, value] : file->metadata())
    sum += static_cast<unsigned>(key.size() + value.size());
  volatile unsigned sink = sum;
  (void)sink;
  return 0;
}
