//===- HfCheckpointWriterTest.cpp - Checkpoints in the Hugging Face layout -===//
//
// writeHfCheckpoint and writePeftAdapter: the files and names, sharding, dtype conversion
// (against base/Float16.h), shared and aliased names, the all-or-nothing directory
// replacement, and the parsers of the export flags. Files are read back with readSafetensors
// and WeightSource (the reader rp-run --weights uses).
//
//===----------------------------------------------------------------------===//

#include "base/Float16.h"
#include "runtime/io/HfCheckpointWriter.h"
#include "runtime/io/WeightSource.h"

#include "test/Unit/support/TempDirTest.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <vector>

namespace rp::runtime {
namespace {

using json = nlohmann::json;

class HfCheckpointWriterTest : public rp::testing::TempDirTest {
protected:
  /// Three tensors: a [4, 3] "a.weight" (0.1 * i + 1/3), a [5] "b.bias" and a 0-D "c".
  void SetUp() override {
    TempDirTest::SetUp();
    for (int i = 0; i < 12; ++i)
      a_.push_back(0.1f * static_cast<float>(i) + 1.0f / 3.0f);
    b_ = {1e-8f, -2.5f, 65504.0f, 3.0e38f, 0.0f};
    c_ = {7.0f};
    tensors_ = {{"a.weight", {4, 3}, a_.data()}, {"b.bias", {5}, b_.data()}, {"c", {}, c_.data()}};
  }

  /// Every tensor of `source` (a WeightSource path) as fp32, by name.
  std::map<std::string, std::vector<float>> readBack(const std::string &source) {
    std::map<std::string, std::vector<float>> out;
    StatusOr<WeightSource> ws = WeightSource::open(source);
    EXPECT_TRUE(ws.ok()) << ws.status().message();
    if (!ws.ok())
      return out;
    Status s = ws.value().readTensors([&](const SafetensorsTensorView &t) {
      size_t n = 1;
      for (int64_t d : t.shape)
        n *= static_cast<size_t>(d);
      std::vector<float> v(n);
      RP_RETURN_IF_ERROR(convertToFloat32(t, v.data()));
      out[t.name] = v;
      return okStatus();
    });
    EXPECT_TRUE(s.ok()) << s.message();
    return out;
  }

  std::vector<float> a_, b_, c_;
  std::vector<HfTensor> tensors_;
};

TEST_F(HfCheckpointWriterTest, OneFileF32IsExactWithPtMetadata) {
  HfWriteOptions o;
  StatusOr<HfWriteResult> r = writeHfCheckpoint(path("out"), tensors_, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().files, std::vector<std::string>{"model.safetensors"});
  EXPECT_EQ(r.value().tensors, 3u);
  EXPECT_EQ(r.value().bytes, 18u * 4);
  StatusOr<SafetensorsFile> f = readSafetensors(path("out/model.safetensors"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f.value().metadata(), (std::map<std::string, std::string>{{"format", "pt"}}));
  ASSERT_NE(f.value().find("c"), nullptr);
  EXPECT_TRUE(f.value().find("c")->shape.empty());
  auto back = readBack(path("out"));
  EXPECT_EQ(back["a.weight"], a_);
  EXPECT_EQ(back["b.bias"], b_);
  EXPECT_EQ(back["c"], c_);
}

TEST_F(HfCheckpointWriterTest, ShardsGreedilyWithAnIndex) {
  HfWriteOptions o;
  o.maxShardBytes = 48; // a.weight (48 bytes) alone, then b.bias + c (24 bytes)
  StatusOr<HfWriteResult> r = writeHfCheckpoint(path("out"), tensors_, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().files, (std::vector<std::string>{"model-00001-of-00002.safetensors",
                                                       "model-00002-of-00002.safetensors"}));
  json index = json::parse(readBytes(path("out/model.safetensors.index.json")));
  EXPECT_EQ(index["metadata"]["total_size"], 72);
  EXPECT_EQ(index["metadata"]["total_parameters"], 18);
  EXPECT_EQ(index["weight_map"]["a.weight"], "model-00001-of-00002.safetensors");
  EXPECT_EQ(index["weight_map"]["b.bias"], "model-00002-of-00002.safetensors");
  EXPECT_EQ(index["weight_map"]["c"], "model-00002-of-00002.safetensors");
  EXPECT_EQ(readBack(path("out"))["a.weight"], a_);

  // A tensor larger than the maximum gets a shard of its own.
  o.maxShardBytes = 8;
  r = writeHfCheckpoint(path("small"), tensors_, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().files.size(), 3u);
}

TEST_F(HfCheckpointWriterTest, Bf16AndF16RoundToNearestEven) {
  for (HfExportDType dtype : {HfExportDType::BF16, HfExportDType::F16}) {
    HfWriteOptions o;
    o.dtype = dtype;
    const std::string dir = path(dtype == HfExportDType::BF16 ? "bf16" : "f16");
    StatusOr<HfWriteResult> r = writeHfCheckpoint(dir, tensors_, o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r.value().bytes, 18u * 2);
    StatusOr<SafetensorsFile> f = readSafetensors(dir + "/model.safetensors");
    ASSERT_TRUE(f.ok());
    for (const auto &[name, values] : {std::pair{"a.weight", a_}, std::pair{"b.bias", b_}}) {
      const SafetensorsTensorView *t = f.value().find(name);
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->dtype, safetensorsDTypeOf(dtype));
      for (size_t i = 0; i < values.size(); ++i) {
        uint16_t got;
        std::memcpy(&got, t->data + 2 * i, 2);
        const uint16_t want =
            dtype == HfExportDType::BF16 ? floatToBf16(values[i]) : floatToHalf(values[i]);
        EXPECT_EQ(got, want) << name << "[" << i << "]";
      }
    }
  }
}

TEST_F(HfCheckpointWriterTest, SharedNamesOnceAliasesRenameOrSkip) {
  std::vector<float> copy = a_;
  tensors_.push_back({"a.weight", {4, 3}, copy.data()}); // a param read by two layers
  tensors_.push_back({"lm_head.weight", {4, 3}, a_.data()});
  HfWriteOptions o;
  o.aliases = {{"lm_head.weight", ""}, {"c", "renamed.c"}};
  StatusOr<HfWriteResult> r = writeHfCheckpoint(path("out"), tensors_, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().tensors, 3u);
  auto back = readBack(path("out"));
  EXPECT_EQ(back.size(), 3u);
  EXPECT_EQ(back.count("lm_head.weight"), 0u);
  EXPECT_EQ(back["renamed.c"], c_);

  copy[5] += 1.0f; // the copies disagree: refused, nothing written
  r = writeHfCheckpoint(path("bad"), tensors_, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'a.weight' but hold different values"), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(std::filesystem::exists(path("bad")));
}

TEST_F(HfCheckpointWriterTest, RefusesNonEmptyDirUnlessForcedAndLeavesNoTemporary) {
  std::filesystem::create_directory(path("out"));
  writeBytes(path("out/old.txt"), "old");
  StatusOr<HfWriteResult> r = writeHfCheckpoint(path("out"), tensors_, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(r.status().message().find("exists and is not empty"), std::string::npos);
  EXPECT_EQ(readBytes(path("out/old.txt")), "old");

  HfWriteOptions o;
  o.force = true;
  r = writeHfCheckpoint(path("out"), tensors_, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(std::filesystem::exists(path("out/old.txt")));
  EXPECT_EQ(listDir(), std::vector<std::string>{"out"}); // no staging or moved-aside dirs

  // An empty existing directory is fine without force.
  std::filesystem::create_directory(path("empty"));
  EXPECT_TRUE(writeHfCheckpoint(path("empty"), tensors_, {}).ok());
}

TEST_F(HfCheckpointWriterTest, BadTargetsAndConfigs) {
  writeBytes(path("file"), "x");
  EXPECT_FALSE(writeHfCheckpoint(path("file"), tensors_, {}).ok());
  EXPECT_FALSE(writeHfCheckpoint(path("missing/out"), tensors_, {}).ok());
  EXPECT_FALSE(writeHfCheckpoint(path("none"), {}, {}).ok());
  HfWriteOptions o;
  for (const char *text : {"[1]", "{\"a\": ", ""}) {
    writeBytes(path("config.json"), text);
    o.configPath = path("config.json");
    StatusOr<HfWriteResult> r = writeHfCheckpoint(path("out"), tensors_, o);
    EXPECT_FALSE(r.ok()) << text;
  }
  o.configPath = path("nope.json");
  EXPECT_FALSE(writeHfCheckpoint(path("out"), tensors_, o).ok());
  EXPECT_EQ(listDir(), (std::vector<std::string>{"config.json", "file"}));

  writeBytes(path("config.json"), "{\"model_type\": \"qwen3\"}\n");
  o.configPath = path("config.json");
  ASSERT_TRUE(writeHfCheckpoint(path("out"), tensors_, o).ok());
  EXPECT_EQ(readBytes(path("out/config.json")), "{\"model_type\": \"qwen3\"}\n");
}

TEST_F(HfCheckpointWriterTest, PeftLayoutTransposesAdaptersAndWritesTheConfig) {
  // A [in 3, r 2], B [r 2, out 4].
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<LoraAdapter> adapters = {
      {"model.layers.0.self_attn.v_proj", 3, 4, 2, a.data(), b.data(), 0, ""},
      {"model.layers.0.self_attn.q_proj", 3, 4, 2, a.data(), b.data(), 0, ""}};
  PeftWriteOptions o;
  o.alpha = 16;
  o.baseModel = "org/base";
  StatusOr<HfWriteResult> r = writePeftAdapter(path("out"), adapters, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(listDir(), std::vector<std::string>{"out"});
  auto back = readBack(path("out/adapter_model.safetensors"));
  const std::string q = "base_model.model.model.layers.0.self_attn.q_proj";
  EXPECT_EQ(back[q + ".lora_A.weight"], (std::vector<float>{1, 3, 5, 2, 4, 6}));
  EXPECT_EQ(back[q + ".lora_B.weight"], (std::vector<float>{1, 5, 2, 6, 3, 7, 4, 8}));
  EXPECT_EQ(back.size(), 4u);
  StatusOr<SafetensorsFile> f = readSafetensors(path("out/adapter_model.safetensors"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f.value().find(q + ".lora_A.weight")->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.value().find(q + ".lora_B.weight")->shape, (std::vector<int64_t>{4, 2}));
  json config = json::parse(readBytes(path("out/adapter_config.json")));
  EXPECT_EQ(config["r"], 2);
  EXPECT_EQ(config["lora_alpha"], 16);
  EXPECT_EQ(config["peft_type"], "LORA");
  EXPECT_EQ(config["task_type"], "CAUSAL_LM");
  EXPECT_EQ(config["base_model_name_or_path"], "org/base");
  EXPECT_EQ(config["target_modules"], json({"q_proj", "v_proj"}));

  adapters[1].rank = 3; // mixed ranks
  EXPECT_FALSE(writePeftAdapter(path("mixed"), adapters, o).ok());
  o.alpha = 0;
  EXPECT_FALSE(writePeftAdapter(path("alpha"), {adapters[0]}, o).ok());
  EXPECT_FALSE(writePeftAdapter(path("none"), {}, PeftWriteOptions{8, "", {}, false}).ok());
  EXPECT_EQ(listDir(), std::vector<std::string>{"out"});
}

TEST_F(HfCheckpointWriterTest, PeftLayoutOfStackedExpertAdaptersIsPeftsTargetParameters) {
  // Two experts, r 2, in 3, out 2: A [E, r, in] = 0..11, B [E, out, r] = 100..107. peft's
  // lora_A [E r, in] holds A's rows in order; lora_B [out, r E] has column j E + e = B[e, :, j].
  std::vector<float> a(12), b(8);
  for (int i = 0; i < 12; ++i)
    a[i] = static_cast<float>(i);
  for (int i = 0; i < 8; ++i)
    b[i] = static_cast<float>(100 + i);
  const std::string experts = "model.layers.1.mlp.experts";
  // gate_up_proj first (the module's parameter order): peft nests it under down_proj.
  std::vector<LoraAdapter> adapters = {
      {experts, 3, 2, 2, a.data(), b.data(), 2, "gate_up_proj"},
      {experts, 3, 2, 2, a.data(), b.data(), 2, "down_proj"},
      {"model.layers.1.self_attn.q_proj", 3, 4, 2, a.data(), b.data(), 0, ""}};
  PeftWriteOptions o;
  o.alpha = 4;
  StatusOr<HfWriteResult> r = writePeftAdapter(path("out"), adapters, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto back = readBack(path("out/adapter_model.safetensors"));
  const std::string inner = "base_model.model." + experts + ".base_layer";
  const std::string outer = "base_model.model." + experts;
  EXPECT_EQ(back[inner + ".lora_A.weight"], a);
  // [o, j, e] = B[e, o, j]: o 0: (j 0: 100, 104), (j 1: 101, 105); o 1: 102, 106, 103, 107.
  const std::vector<float> wantB = {100, 104, 101, 105, 102, 106, 103, 107};
  EXPECT_EQ(back[inner + ".lora_B.weight"], wantB);
  EXPECT_EQ(back[outer + ".lora_B.weight"], wantB);
  EXPECT_EQ(back.size(), 6u);
  StatusOr<SafetensorsFile> f = readSafetensors(path("out/adapter_model.safetensors"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f.value().find(outer + ".lora_A.weight")->shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(f.value().find(outer + ".lora_B.weight")->shape, (std::vector<int64_t>{2, 4}));
  json config = json::parse(readBytes(path("out/adapter_config.json")));
  EXPECT_EQ(config["target_modules"], json({"q_proj"}));
  EXPECT_EQ(config["target_parameters"], json({"experts.down_proj", "experts.gate_up_proj"}));
}

TEST(HfExportFlagsTest, ParsesDTypesAndSizes) {
  EXPECT_EQ(parseHfExportDType("bf16").value(), HfExportDType::BF16);
  EXPECT_EQ(parseHfExportDType("fp16").value(), HfExportDType::F16);
  EXPECT_EQ(parseHfExportDType("float32").value(), HfExportDType::F32);
  EXPECT_FALSE(parseHfExportDType("f8").ok());
  EXPECT_EQ(parseByteSize("1048576").value(), 1048576u);
  EXPECT_EQ(parseByteSize("5GB").value(), 5'000'000'000u);
  EXPECT_EQ(parseByteSize("40KB").value(), 40'000u);
  EXPECT_EQ(parseByteSize("2MiB").value(), 2u << 20);
  EXPECT_EQ(parseByteSize("3GiB").value(), 3ull << 30);
  for (const char *bad : {"", "0", "GB", "5 GB", "5gb", "-1", "1.5GB", "99999999999999999999",
                          "9999999999GiB"})
    EXPECT_FALSE(parseByteSize(bad).ok()) << bad;
}

} // namespace
} // namespace rp::runtime
