//===- tokens.cpp - Fuzz target: token files and raw text as training data -===//
//
// The first input byte picks how the rest is read (rp-run --data-format): auto with a .bin
// name, auto with a .txt name, tokens, or text (runtime/data/TokenFile.h). Data that reads is
// checked against a 264-token vocabulary (the byte vocabulary of examples/qwen3-tiny), and
// when it holds a window, a batch sampler draws one training and one eval micro-batch of
// 2 x 8 tokens, as rp-run does before training.
// Seeds: small llm.c token files and text (scripts/fuzz.sh writes them).

#include "fuzz/FuzzScratch.h"
#include "runtime/data/BatchSampler.h"
#include "runtime/data/TokenFile.h"

#include <vector>

using namespace rp::runtime;
using namespace rp::base;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  static const struct {
    const char *name;
    DataFormat format;
  } kModes[] = {{"data.bin", DataFormat::Auto},
                {"data.txt", DataFormat::Auto},
                {"data.bin", DataFormat::Tokens},
                {"data.bin", DataFormat::Text}};
  const auto &mode = kModes[data[0] % 4];
  const std::string path = rp::fuzz::scratch().write(mode.name, data + 1, size - 1);
  StatusOr<TokenData> tokens = readTokens(path, mode.format);
  if (!tokens.ok() || !checkVocabulary(*tokens, 264).ok())
    return 0;
  StatusOr<BatchSampler> sampler = BatchSampler::create(*tokens, 2, 8, /*seed=*/size);
  if (!sampler.ok())
    return 0;
  std::vector<int64_t> ids(16), labels(16), positions(16);
  (void)sampler->fillTrain(3, 1, DType::I64, ids.data(), DType::I64, labels.data(), nullptr,
                           DType::I64, positions.data());
  if (sampler->evalBatches() > 0)
    (void)sampler->fillEval(sampler->evalBatches() - 1, DType::I64, ids.data(), DType::I64,
                            labels.data(), nullptr, DType::I64, positions.data());
  (void)checkPositionFeed(*tokens, size % 2 == 0, 16, 8);
  return 0;
}
