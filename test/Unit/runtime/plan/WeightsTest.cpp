//===- WeightsTest.cpp - validateWeights: a weights file against a plan ---===//

#include "runtime/plan/Weights.h"

#include "test/Unit/support/PlanTestUtil.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rp::runtime {
namespace {

namespace pb = rp::plan;
using rp::testing::makeValidPlan;

class WeightsTest : public rp::testing::TempDirTest {
protected:
  struct Entry {
    std::string name;
    SafetensorsDType dtype;
    std::vector<int64_t> shape;
  };

  /// Writes a file holding `entries` (zero-filled) and reads it back.
  SafetensorsFile makeWeights(const std::vector<Entry> &entries) {
    std::vector<std::vector<char>> storage;
    std::vector<SafetensorsTensor> tensors;
    for (const Entry &e : entries) {
      size_t bytes = safetensorsDTypeSize(e.dtype);
      for (int64_t d : e.shape)
        bytes *= static_cast<size_t>(d);
      storage.emplace_back(bytes, 0);
      tensors.push_back({e.name, e.dtype, e.shape, storage.back().data(), bytes});
    }
    const std::string p = path("model.safetensors");
    Status s = writeSafetensors(p, tensors);
    EXPECT_TRUE(s.ok()) << s.message();
    StatusOr<SafetensorsFile> f = readSafetensors(p);
    EXPECT_TRUE(f.ok()) << f.status().message();
    return std::move(f).value();
  }

  /// The tensors the plan of PlanTestUtil.h needs.
  static std::vector<Entry> planTensors() {
    return {{"layers.0.w", SafetensorsDType::F32, {4, 4}},
            {"lm_head", SafetensorsDType::F32, {4, 8}},
            {"norm.scale", SafetensorsDType::F32, {4}}};
  }
};

TEST_F(WeightsTest, MatchingFilePasses) {
  std::vector<Entry> entries = planTensors();
  entries.push_back({"unused.extra", SafetensorsDType::I8, {3}}); // extra tensors are ignored
  SafetensorsFile f = makeWeights(entries);
  Status s = validateWeights(makeValidPlan(), f);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST_F(WeightsTest, MissingTensor) {
  std::vector<Entry> entries = planTensors();
  entries.erase(entries.begin() + 1);
  SafetensorsFile f = makeWeights(entries);
  Status s = validateWeights(makeValidPlan(), f);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::NotFound);
  EXPECT_NE(
      s.message().find("weights file " + path("model.safetensors") + ": has no tensor 'lm_head'"),
      std::string::npos)
      << s.message();
}

TEST_F(WeightsTest, WrongShape) {
  std::vector<Entry> entries = planTensors();
  entries[0].shape = {4, 2};
  SafetensorsFile f = makeWeights(entries);
  Status s = validateWeights(makeValidPlan(), f);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("weights file " + path("model.safetensors") +
                             ": tensor 'layers.0.w' has shape [4, 2], the plan expects [4, 4]"),
            std::string::npos)
      << s.message();
}

TEST_F(WeightsTest, WrongDType) {
  std::vector<Entry> entries = planTensors();
  entries[2].dtype = SafetensorsDType::F16;
  SafetensorsFile f = makeWeights(entries);
  Status s = validateWeights(makeValidPlan(), f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensor 'norm.scale' has dtype F16, the plan expects F32"),
            std::string::npos)
      << s.message();
}

TEST_F(WeightsTest, IntegerParamKeepsItsDType) {
  pb::Plan plan = makeValidPlan();
  plan.mutable_params(2)->mutable_type()->set_dtype(pb::I64);
  std::vector<Entry> entries = planTensors();
  SafetensorsFile f = makeWeights(entries);
  Status s = validateWeights(plan, f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensor 'norm.scale' has dtype F32, the plan expects I64"),
            std::string::npos)
      << s.message();
  entries[2].dtype = SafetensorsDType::I64;
  SafetensorsFile g = makeWeights(entries);
  EXPECT_TRUE(validateWeights(plan, g).ok());
}

TEST_F(WeightsTest, ParamWithoutStoredValueMayBeAbsent) {
  pb::Plan plan = makeValidPlan();
  plan.mutable_params(1)->set_init(pb::PARAM_INIT_ZEROS); // a LoRA B
  std::vector<Entry> entries = planTensors();
  entries.erase(entries.begin() + 1);
  SafetensorsFile f = makeWeights(entries);
  EXPECT_TRUE(validateWeights(plan, f).ok());
  // When a checkpoint holds it, it is checked like any other.
  entries.push_back({"lm_head", SafetensorsDType::F32, {8, 4}});
  SafetensorsFile g = makeWeights(entries);
  Status s = validateWeights(plan, g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensor 'lm_head' has shape [8, 4], the plan expects [4, 8]"),
            std::string::npos)
      << s.message();
}

} // namespace
} // namespace rp::runtime
