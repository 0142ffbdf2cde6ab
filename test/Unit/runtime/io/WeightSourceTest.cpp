//===- WeightSourceTest.cpp - Initial weights from Hugging Face checkpoints ===//
//
// WeightSource (one file, a directory, a sharded checkpoint's index), validateWeights on it,
// and HostArena::loadWeights: the host arena's fp32 weights equal the expected values bit for
// bit from F32, BF16 and F16 tensors (each exactly representable), and every bad input is
// refused with the file and the tensor named. The fixtures are written with writeSafetensors
// into a fresh temporary directory.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/WeightSource.h"
#include "base/Float16.h"
#include "runtime/exec/HostArena.h"
#include "runtime/plan/Weights.h"

#include "test/Unit/support/PlanTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace rp::runtime {
namespace {

namespace pb = rp::plan;
using rp::testing::makeValidPlan;

/// A tensor to write: fp32 values stored as `dtype` (F32, F16 or BF16, exact), or no values:
/// zero bytes of any dtype.
struct Fixture {
  std::string name;
  SafetensorsDType dtype;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

int64_t elements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Values exact in bf16 and f16 alike: multiples of 1/8 in [-4, 4), and 2^-24 (the smallest
/// f16 subnormal, a normal bf16) at index 1.
std::vector<float> valuesFor(const std::vector<int64_t> &shape, int seed) {
  std::vector<float> v(static_cast<size_t>(elements(shape)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] =
        static_cast<float>(static_cast<int>((i * 7 + static_cast<size_t>(seed) * 13) % 64) - 32) /
        8.0f;
  if (v.size() > 1)
    v[1] = 0x1p-24f;
  return v;
}

/// The tensors the plan of PlanTestUtil.h needs, with their expected fp32 values.
std::vector<Fixture> planFixtures(SafetensorsDType dtype) {
  return {{"layers.0.w", dtype, {4, 4}, valuesFor({4, 4}, 1)},
          {"lm_head", dtype, {4, 8}, valuesFor({4, 8}, 2)},
          {"norm.scale", dtype, {4}, valuesFor({4}, 3)}};
}

class WeightSourceTest : public rp::testing::TempDirTest {
protected:
  /// Writes `tensors` to `name` (in the temp dir) in their dtypes.
  void write(const std::string &name, const std::vector<Fixture> &tensors) {
    std::vector<std::vector<uint8_t>> storage;
    std::vector<SafetensorsTensor> out;
    storage.reserve(tensors.size());
    for (const Fixture &f : tensors) {
      const size_t size = safetensorsDTypeSize(f.dtype);
      std::vector<uint8_t> bytes(f.values.size() * size);
      for (size_t i = 0; i < f.values.size(); ++i) {
        const float x = f.values[i];
        uint16_t h = 0;
        switch (f.dtype) {
        case SafetensorsDType::F32:
          std::memcpy(&bytes[i * 4], &x, 4);
          continue;
        case SafetensorsDType::BF16:
          h = floatToBf16(x);
          ASSERT_EQ(floatToBits(bf16ToFloat(h)), floatToBits(x)) << "not exact in bf16";
          break;
        case SafetensorsDType::F16:
          h = floatToHalf(x);
          ASSERT_EQ(floatToBits(halfToFloat(h)), floatToBits(x)) << "not exact in f16";
          break;
        default:
          ADD_FAILURE() << "values only for F32, F16 and BF16";
          return;
        }
        std::memcpy(&bytes[i * 2], &h, 2);
      }
      if (f.values.empty()) // zero bytes of any dtype
        bytes.resize(static_cast<size_t>(elements(f.shape)) * size);
      storage.push_back(std::move(bytes));
      out.push_back({f.name, f.dtype, f.shape, storage.back().data(), storage.back().size()});
    }
    Status s = writeSafetensors(path(name), out);
    ASSERT_TRUE(s.ok()) << s.message();
  }

  /// Writes an index mapping each tensor to its shard.
  void writeIndex(const std::string &name, const std::map<std::string, std::string> &map) {
    std::string text = R"({"metadata": {"total_size": 0}, "weight_map": {)";
    bool first = true;
    for (const auto &[tensor, shard] : map) {
      text += (first ? "\"" : ", \"") + tensor + "\": \"" + shard + "\"";
      first = false;
    }
    writeBytes(path(name), text + "}}");
  }

  /// The plan's three tensors in two fp16 shards plus an index, in directory `dir`.
  void writeShardedF16(const std::string &dir) {
    std::filesystem::create_directory(path(dir));
    std::vector<Fixture> t = planFixtures(SafetensorsDType::F16);
    write(dir + "/model-00001-of-00002.safetensors", {t[0], t[2]});
    write(dir + "/model-00002-of-00002.safetensors", {t[1]});
    writeIndex(dir + "/model.safetensors.index.json",
               {{"layers.0.w", "model-00001-of-00002.safetensors"},
                {"lm_head", "model-00002-of-00002.safetensors"},
                {"norm.scale", "model-00001-of-00002.safetensors"}});
  }

  /// Opens `source`, checks it against the plan and loads a host arena: the first error.
  Status load(const std::string &source, bool allowExtra = false) {
    StatusOr<WeightSource> weights = WeightSource::open(source);
    if (!weights.ok())
      return weights.status();
    RP_RETURN_IF_ERROR(validateWeights(plan_, *weights, allowExtra));
    StatusOr<HostArena> arena = HostArena::create(plan_);
    if (!arena.ok())
      return arena.status();
    arena_.emplace(std::move(*arena));
    return arena_->loadWeights(*weights);
  }

  /// The arena holds `expected` bit for bit: the fp32 master of the trainable params and the
  /// (f32) compute weights of every param.
  void expectLoaded(const std::vector<Fixture> &expected) {
    ASSERT_TRUE(arena_);
    for (int i = 0; i < plan_.params_size(); ++i) {
      const pb::Param &p = plan_.params(i);
      const Fixture &f = expected[static_cast<size_t>(i)];
      ASSERT_EQ(p.name(), f.name);
      const size_t bytes = f.values.size() * 4;
      EXPECT_EQ(std::memcmp(arena_->weights() + p.weight_offset(), f.values.data(), bytes), 0)
          << p.name();
      if (p.trainable()) {
        EXPECT_EQ(std::memcmp(arena_->master() + p.state_offset() / 4, f.values.data(), bytes), 0)
            << p.name();
      }
    }
  }

  /// Loads `source` and expects the plan's values, written as `dtype`, in the arena.
  void expectLoads(const std::string &source, SafetensorsDType dtype) {
    Status s = load(source);
    ASSERT_TRUE(s.ok()) << s.message();
    expectLoaded(planFixtures(dtype));
  }

  static void expectError(const Status &s, StatusCode code, const std::string &text) {
    ASSERT_FALSE(s.ok()) << "expected: " << text;
    EXPECT_EQ(s.code(), code) << s.message();
    EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
  }

  pb::Plan plan_ = makeValidPlan();
  std::optional<HostArena> arena_;
};

/// The plan's three tensors as raw bf16 bytes back to back in `file`, after a 16-byte
/// preamble (as ONNX external data lies in a file), and their ranges.
std::vector<ExternalTensor> writeRawBf16(const std::string &file) {
  std::string bytes(16, 'x');
  std::vector<ExternalTensor> ranges;
  for (const Fixture &f : planFixtures(SafetensorsDType::BF16)) {
    ExternalTensor t{f.name, file, static_cast<int64_t>(bytes.size()),
                     static_cast<int64_t>(f.values.size() * 2), SafetensorsDType::BF16, f.shape};
    for (float x : f.values) {
      const uint16_t h = floatToBf16(x);
      bytes.append(reinterpret_cast<const char *>(&h), 2);
    }
    ranges.push_back(std::move(t));
  }
  std::ofstream(file, std::ios::binary) << bytes;
  return ranges;
}

TEST_F(WeightSourceTest, ExternalRangesLoadLikeAFile) {
  std::vector<ExternalTensor> ranges = writeRawBf16(path("model.data"));
  std::reverse(ranges.begin(), ranges.end()); // any order: read in file order
  StatusOr<WeightSource> weights = WeightSource::fromExternal(ranges);
  ASSERT_TRUE(weights.ok()) << weights.status().message();
  EXPECT_TRUE(weights->external());
  EXPECT_EQ(weights->describe(), "external weights in " + path("model.data"));
  ASSERT_EQ(weights->tensors().size(), 3u);
  EXPECT_EQ(weights->tensors()[0].name, "layers.0.w");
  ASSERT_TRUE(validateWeights(plan_, *weights, false).ok());
  StatusOr<HostArena> arena = HostArena::create(plan_);
  ASSERT_TRUE(arena.ok()) << arena.status().message();
  arena_.emplace(std::move(*arena));
  Status s = arena_->loadWeights(*weights);
  ASSERT_TRUE(s.ok()) << s.message();
  expectLoaded(planFixtures(SafetensorsDType::BF16));
}

TEST_F(WeightSourceTest, ExternalRangeErrors) {
  const std::vector<ExternalTensor> good = writeRawBf16(path("model.data"));
  auto open = [&](const std::function<void(std::vector<ExternalTensor> &)> &edit) {
    std::vector<ExternalTensor> t = good;
    edit(t);
    StatusOr<WeightSource> w = WeightSource::fromExternal(t);
    return w.ok() ? okStatus() : w.status();
  };
  expectError(open([&](auto &t) { t[1].file = path("gone.data"); }), StatusCode::NotFound,
              "external weights: tensor 'lm_head' in '" + path("gone.data") +
                  "': cannot open the file");
  expectError(open([&](auto &t) { t[1].file = path(""); }), StatusCode::InvalidArgument,
              "': not a regular file");
  expectError(open([](auto &t) { t[0].bytes = 30; }), StatusCode::InvalidArgument,
              "tensor 'layers.0.w' in '" + path("model.data") +
                  "': 30 bytes at offset 16, but BF16[4, 4] needs 32");
  expectError(open([](auto &t) { t[2].offset = 1000; }), StatusCode::DataLoss,
              "tensor 'norm.scale' in '" + path("model.data") +
                  "': bytes [1000, 1008) run past the end of the file (120 bytes)");
  expectError(open([](auto &t) { t[2].name = "lm_head"; }), StatusCode::InvalidArgument,
              "a second range for the same tensor");
}

TEST_F(WeightSourceTest, SingleF32File) {
  write("model.safetensors", planFixtures(SafetensorsDType::F32));
  expectLoads(path("model.safetensors"), SafetensorsDType::F32);
}

TEST_F(WeightSourceTest, SingleBf16FileInADirectory) {
  std::filesystem::create_directory(path("hf"));
  write("hf/model.safetensors", planFixtures(SafetensorsDType::BF16));
  StatusOr<WeightSource> source = WeightSource::open(path("hf"));
  ASSERT_TRUE(source.ok()) << source.status().message();
  EXPECT_EQ(source->shards(), std::vector<std::string>{path("hf") + "/model.safetensors"});
  EXPECT_TRUE(source->indexPath().empty());
  expectLoads(path("hf"), SafetensorsDType::BF16);
  expectLoads(path("hf/model.safetensors"), SafetensorsDType::BF16);
}

TEST_F(WeightSourceTest, ShardedF16ByDirectoryAndByIndex) {
  writeShardedF16("hf");
  StatusOr<WeightSource> source = WeightSource::open(path("hf"));
  ASSERT_TRUE(source.ok()) << source.status().message();
  EXPECT_EQ(source->indexPath(), path("hf") + "/model.safetensors.index.json");
  ASSERT_EQ(source->shards().size(), 2u);
  EXPECT_EQ(source->shards()[1], path("hf") + "/model-00002-of-00002.safetensors");
  ASSERT_NE(source->find("lm_head"), nullptr);
  EXPECT_EQ(source->find("lm_head")->shard, 1u);
  EXPECT_EQ(source->find("lm_head")->dtype, SafetensorsDType::F16);
  expectLoads(path("hf"), SafetensorsDType::F16);
  expectLoads(path("hf/model.safetensors.index.json"), SafetensorsDType::F16);
}

TEST_F(WeightSourceTest, ReadTensorsGoesShardByShardInDataOrder) {
  writeShardedF16("hf");
  StatusOr<WeightSource> source = WeightSource::open(path("hf"));
  ASSERT_TRUE(source.ok()) << source.status().message();
  std::vector<std::string> seen;
  Status s = source->readTensors([&](const SafetensorsTensorView &t) {
    seen.push_back(t.name);
    return okStatus();
  });
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(seen, (std::vector<std::string>{"layers.0.w", "norm.scale", "lm_head"}));
}

TEST_F(WeightSourceTest, DirectoryWithoutACheckpoint) {
  std::filesystem::create_directory(path("empty"));
  expectError(load(path("empty")), StatusCode::NotFound,
              "weights directory '" + path("empty") +
                  "' holds neither model.safetensors nor model.safetensors.index.json");
}

TEST_F(WeightSourceTest, MissingParam) {
  std::vector<Fixture> t = planFixtures(SafetensorsDType::BF16);
  t.erase(t.begin() + 1);
  write("model.safetensors", t);
  expectError(load(path("model.safetensors")), StatusCode::NotFound,
              "weights file " + path("model.safetensors") + ": has no tensor 'lm_head'");
  // In a sharded checkpoint the index is named.
  writeShardedF16("hf");
  writeIndex("hf/model.safetensors.index.json",
             {{"layers.0.w", "model-00001-of-00002.safetensors"},
              {"norm.scale", "model-00001-of-00002.safetensors"}});
  std::filesystem::remove(path("hf/model-00002-of-00002.safetensors"));
  expectError(load(path("hf")), StatusCode::NotFound,
              "weights index " + path("hf") +
                  "/model.safetensors.index.json: has no tensor 'lm_head'");
}

TEST_F(WeightSourceTest, ExporterNamedParamGetsAHint) {
  plan_.mutable_params(1)->set_name("onnx::MatMul_123");
  write("model.safetensors", planFixtures(SafetensorsDType::F32));
  Status s = load(path("model.safetensors"), /*allowExtra=*/true);
  expectError(s, StatusCode::NotFound, "has no tensor 'onnx::MatMul_123'");
  EXPECT_NE(s.message().find("the ONNX exporter named this param"), std::string::npos);
  plan_.mutable_params(1)->set_name("val_107");
  expectError(load(path("model.safetensors"), true), StatusCode::NotFound,
              "the ONNX exporter named this param");
  plan_.mutable_params(1)->set_name("val_x");
  s = load(path("model.safetensors"), true);
  EXPECT_EQ(s.message().find("the ONNX exporter"), std::string::npos) << s.message();
}

TEST_F(WeightSourceTest, WrongShapeNamesTheShard) {
  writeShardedF16("hf");
  std::vector<Fixture> t = planFixtures(SafetensorsDType::F16);
  t[1].shape = {8, 4};
  write("hf/model-00002-of-00002.safetensors", {t[1]});
  expectError(load(path("hf")), StatusCode::InvalidArgument,
              "weights file " + path("hf") +
                  "/model-00002-of-00002.safetensors: tensor "
                  "'lm_head' has shape [8, 4], the plan expects [4, 8]");
}

TEST_F(WeightSourceTest, UnsupportedDTypes) {
  std::vector<Fixture> t = planFixtures(SafetensorsDType::F32);
  t[0] = {"layers.0.w", SafetensorsDType::F64, {4, 4}, {}};
  write("f64.safetensors", t);
  expectError(load(path("f64.safetensors")), StatusCode::InvalidArgument,
              "weights file " + path("f64.safetensors") +
                  ": tensor 'layers.0.w' has dtype F64, which rp-run does not load");
  t[0] = {"layers.0.w", SafetensorsDType::I8, {4, 4}, {}};
  write("i8.safetensors", t);
  expectError(load(path("i8.safetensors")), StatusCode::InvalidArgument,
              "tensor 'layers.0.w' has dtype I8, which rp-run does not load");
  // An integer param keeps its dtype: no conversion.
  plan_.mutable_params(2)->mutable_type()->set_dtype(pb::I64);
  write("int.safetensors", planFixtures(SafetensorsDType::BF16));
  expectError(load(path("int.safetensors")), StatusCode::InvalidArgument,
              "tensor 'norm.scale' has dtype BF16, the plan expects I64");
}

TEST_F(WeightSourceTest, ExtraTensorsAreRefusedUnlessAllowed) {
  std::vector<Fixture> t = planFixtures(SafetensorsDType::BF16);
  for (int i = 0; i < 7; ++i)
    t.push_back({"extra." + std::to_string(i), SafetensorsDType::BF16, {2}, {1.0f, 2.0f}});
  write("model.safetensors", t);
  Status s = load(path("model.safetensors"));
  expectError(s, StatusCode::InvalidArgument,
              "weights file " + path("model.safetensors") +
                  ": 7 tensors are no param of the plan: 'extra.0', 'extra.1', 'extra.2', "
                  "'extra.3', 'extra.4' and 2 more");
  EXPECT_NE(s.message().find("--allow-extra-weights ignores them"), std::string::npos);
  s = load(path("model.safetensors"), /*allowExtra=*/true);
  ASSERT_TRUE(s.ok()) << s.message();
  expectLoaded(planFixtures(SafetensorsDType::BF16));
}

TEST_F(WeightSourceTest, MissingShard) {
  writeShardedF16("hf");
  std::filesystem::remove(path("hf/model-00002-of-00002.safetensors"));
  expectError(load(path("hf")), StatusCode::NotFound,
              "weights index '" + path("hf") + "/model.safetensors.index.json' names shard '" +
                  path("hf") +
                  "/model-00002-of-00002.safetensors' (for tensor 'lm_head'), "
                  "which does not exist");
}

TEST_F(WeightSourceTest, MalformedIndex) {
  writeShardedF16("hf");
  const std::string index = path("hf/model.safetensors.index.json");
  const std::string where = "weights index '" + index + "'";
  const std::pair<std::string, std::string> cases[] = {
      {"{\"weight_map\": ", where + " is not valid JSON"},
      {"[1, 2]", where + " has no \"weight_map\" object"},
      {"{\"metadata\": {}}", where + " has no \"weight_map\" object"},
      {"{\"weight_map\": {}}", where + ": \"weight_map\" is empty"},
      {"{\"weight_map\": {\"lm_head\": 2}}",
       where + ": \"weight_map\" entry 'lm_head' is 2, not the file name of a shard"},
      {"{\"weight_map\": {\"lm_head\": \"../model.safetensors\"}}",
       where + ": \"weight_map\" entry 'lm_head' names shard '../model.safetensors': a shard "
               "must be a file name beside the index"},
  };
  for (const auto &[text, message] : cases) {
    writeBytes(index, text);
    expectError(load(path("hf")), StatusCode::InvalidArgument, message);
  }
}

TEST_F(WeightSourceTest, IndexAndShardsDisagree) {
  writeShardedF16("hf");
  // The index maps lm_head to the first shard, which does not hold it.
  writeIndex("hf/model.safetensors.index.json",
             {{"layers.0.w", "model-00001-of-00002.safetensors"},
              {"lm_head", "model-00001-of-00002.safetensors"},
              {"norm.scale", "model-00001-of-00002.safetensors"}});
  expectError(load(path("hf")), StatusCode::InvalidArgument,
              "maps tensor 'lm_head' to shard '" + path("hf") +
                  "/model-00001-of-00002.safetensors', which does not hold it");
  // A shard holds a tensor the index maps elsewhere (or not at all).
  writeIndex("hf/model.safetensors.index.json", {{"layers.0.w", "model-00001-of-00002.safetensors"},
                                                 {"lm_head", "model-00002-of-00002.safetensors"}});
  expectError(load(path("hf")), StatusCode::InvalidArgument,
              "shard '" + path("hf") +
                  "/model-00001-of-00002.safetensors' holds tensor "
                  "'norm.scale', which the index does not map to that shard");
}

TEST_F(WeightSourceTest, ShardThatChangedAfterOpenIsDataLoss) {
  writeShardedF16("hf");
  StatusOr<WeightSource> source = WeightSource::open(path("hf"));
  ASSERT_TRUE(source.ok()) << source.status().message();
  std::vector<Fixture> t = planFixtures(SafetensorsDType::BF16);
  write("hf/model-00002-of-00002.safetensors", {t[1]});
  StatusOr<HostArena> arena = HostArena::create(plan_);
  ASSERT_TRUE(arena.ok());
  expectError(arena->loadWeights(*source), StatusCode::DataLoss,
              "model-00002-of-00002.safetensors: tensor 'lm_head' changed while the weights "
              "were read");
}

} // namespace
} // namespace rp::runtime
