//===- ProfileTest.cpp - Layer profile and target parsing -----------------===//
//
// runtime/partition/Profile.h: the JSON layer profile, the JSON and flag forms of a target,
// and every error class with its exact message.
//
//===----------------------------------------------------------------------===//

#include "runtime/partition/CostModel.h"
#include "runtime/partition/Profile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

using namespace rp::partition;
using rp::base::StatusCode;

namespace {

const char *kGoodProfile = R"({
  "layers": [
    {"name": "block_0", "fwd_ms": 7.43, "bwd_ms": 15.83, "param_bytes": 100663296,
     "trainable_bytes": 100663296, "act_bytes": 33554432},
    {"name": "block_1", "fwd_ms": 7.5, "bwd_ms": 16, "recompute_ms": 3.0,
     "param_bytes": 1e8, "trainable_bytes": 0, "act_bytes": 33554432},
    {"name": "tail", "fwd_ms": 22.07, "bwd_ms": 43.71, "param_bytes": 622329856,
     "trainable_bytes": 622329856, "act_bytes": 4}
  ],
  "comm_ms": 1.6
})";

/// A one-layer profile whose layer body is `layer`.
std::string oneLayer(const std::string &layer) {
  return std::string(R"({"layers": [)") + layer + "]}";
}

const char *kLayerOk = R"({"name": "a", "fwd_ms": 1, "bwd_ms": 2, "param_bytes": 3,
  "trainable_bytes": 4, "act_bytes": 5})";

std::string profileError(const std::string &text) {
  StatusOr<Profile> p = parseProfile(text, "profile.json");
  EXPECT_FALSE(p.ok());
  if (p.ok())
    return "";
  EXPECT_EQ(p.status().code(), StatusCode::InvalidArgument);
  return p.status().message();
}

std::string targetError(const std::string &text) {
  StatusOr<TargetSpec> t = parseTarget(text, "gpu.json");
  EXPECT_FALSE(t.ok());
  return t.ok() ? "" : t.status().message();
}

std::string flagError(const std::string &text) {
  StatusOr<TargetSpec> t = parseTargetFlag(text);
  EXPECT_FALSE(t.ok());
  return t.ok() ? "" : t.status().message();
}

} // namespace

// A well-formed profile: fields, the recompute_ms default, integral floats as byte counts.
TEST(ProfileTest, ParsesLayers) {
  StatusOr<Profile> p = parseProfile(kGoodProfile, "profile.json");
  ASSERT_TRUE(p.ok()) << p.status().toString();
  ASSERT_EQ(p->layers.size(), 3u);
  EXPECT_EQ(p->layers[0].name, "block_0");
  EXPECT_DOUBLE_EQ(p->layers[0].fwdMs, 7.43);
  EXPECT_DOUBLE_EQ(p->layers[0].bwdMs, 15.83);
  EXPECT_DOUBLE_EQ(p->layers[0].recomputeMs, 7.43); // defaults to fwd_ms
  EXPECT_EQ(p->layers[0].paramBytes, 100663296u);
  EXPECT_EQ(p->layers[0].trainableBytes, 100663296u);
  EXPECT_EQ(p->layers[0].actBytes, 33554432u);
  EXPECT_DOUBLE_EQ(p->layers[1].recomputeMs, 3.0);
  EXPECT_EQ(p->layers[1].paramBytes, 100000000u);
  EXPECT_EQ(p->layers[1].trainableBytes, 0u);
  EXPECT_EQ(p->layers[2].name, "tail");
  ASSERT_TRUE(p->commMs.has_value());
  EXPECT_DOUBLE_EQ(*p->commMs, 1.6);
}

// comm_ms is optional.
TEST(ProfileTest, CommIsOptional) {
  StatusOr<Profile> p = parseProfile(oneLayer(kLayerOk), "profile.json");
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_FALSE(p->commMs.has_value());
}

// Document-level errors: syntax, top-level type, the layers array.
TEST(ProfileTest, DocumentErrors) {
  EXPECT_EQ(profileError("{\"layers\": [}"), "profile.json: malformed JSON");
  EXPECT_EQ(profileError(""), "profile.json: malformed JSON");
  EXPECT_EQ(profileError("[1, 2]"),
            "profile.json: expected a JSON object at the top level, got an array");
  EXPECT_EQ(profileError("{}"), "profile.json: missing 'layers'");
  EXPECT_EQ(profileError(R"({"layers": {}})"),
            "profile.json: 'layers' must be an array, got an object");
  EXPECT_EQ(profileError(R"({"layers": []})"),
            "profile.json: 'layers' is empty: a profile needs at least the tail layer");
  EXPECT_EQ(profileError(R"({"layers": [], "version": 1})"),
            "profile.json: unknown field 'version' (expected layers, comm_ms)");
  EXPECT_EQ(profileError(oneLayer(kLayerOk).replace(1, 0, R"("comm_ms": -1, )")),
            "profile.json: 'comm_ms' must be a non-negative time in ms, got -1");
  EXPECT_EQ(profileError(oneLayer(kLayerOk).replace(1, 0, R"("comm_ms": "1", )")),
            "profile.json: 'comm_ms' must be a number, got a string");
}

// Layer errors name the layer index (0-based) and the field.
TEST(ProfileTest, LayerErrors) {
  std::string ok = kLayerOk;
  auto layers = [&](const std::string &bad) {
    return std::string(R"({"layers": [)") + ok + "," + ok + "," + ok + "," + bad + "]}";
  };
  EXPECT_EQ(profileError(layers(R"({"name": "d", "fwd_ms": 1, "param_bytes": 3,
    "trainable_bytes": 4, "act_bytes": 5})")),
            "profile.json: layer 3: missing 'bwd_ms'");
  EXPECT_EQ(profileError(layers("42")), "profile.json: layer 3: expected an object, got a number");
  EXPECT_EQ(profileError(oneLayer(R"({"fwd_ms": 1})")), "profile.json: layer 0: missing 'name'");
  EXPECT_EQ(profileError(oneLayer(R"({"name": 7})")),
            "profile.json: layer 0: 'name' must be a string, got a number");
  EXPECT_EQ(profileError(oneLayer(R"({"name": ""})")),
            "profile.json: layer 0: 'name' must not be empty");
  EXPECT_EQ(profileError(oneLayer(R"({"name": "a", "fwd_ms": "7.4", "bwd_ms": 2})")),
            "profile.json: layer 0: 'fwd_ms' must be a number, got a string");
  EXPECT_EQ(profileError(oneLayer(R"({"name": "a", "fwd_ms": 1, "bwd_ms": -2})")),
            "profile.json: layer 0: 'bwd_ms' must be a non-negative time in ms, got -2");
  EXPECT_EQ(profileError(oneLayer(R"({"name": "a", "fwd_ms": 1, "bwd_ms": null})")),
            "profile.json: layer 0: 'bwd_ms' must be a number, got null");
  EXPECT_EQ(
      profileError(oneLayer(R"({"name": "a", "fwd_ms": 1, "bwd_ms": 2, "recompute_ms": -0.5})")),
      "profile.json: layer 0: 'recompute_ms' must be a non-negative time in ms, got -0.5");
  EXPECT_EQ(profileError(oneLayer(R"({"name": "a", "fwd_ms": 1, "bwd_ms": 2})")),
            "profile.json: layer 0: missing 'param_bytes'");
  EXPECT_EQ(profileError(oneLayer(R"({"name": "a", "fwd_ms": 1, "bwd_ms": 2, "param_bytes": -3,
    "trainable_bytes": 4, "act_bytes": 5})")),
            "profile.json: layer 0: 'param_bytes' must be a non-negative integer byte count, "
            "got -3");
  EXPECT_EQ(profileError(oneLayer(R"({"name": "a", "fwd_ms": 1, "bwd_ms": 2, "param_bytes": 3,
    "trainable_bytes": 4.5, "act_bytes": 5})")),
            "profile.json: layer 0: 'trainable_bytes' must be a non-negative integer byte "
            "count, got 4.5");
  EXPECT_EQ(profileError(oneLayer(R"({"name": "a", "fwd_ms": 1, "bwd_ms": 2, "param_bytes": 3,
    "trainable_bytes": 4, "act_bytes": true})")),
            "profile.json: layer 0: 'act_bytes' must be a number, got a boolean");
  EXPECT_EQ(profileError(oneLayer(R"({"name": "a", "fwd": 1})")),
            "profile.json: layer 0: unknown field 'fwd' (expected name, fwd_ms, bwd_ms, "
            "recompute_ms, param_bytes, trainable_bytes, act_bytes, work_bytes, saved_bytes)");
}

// validateProfile: the same checks on profiles built in C++.
TEST(ProfileTest, ValidateInMemory) {
  Profile p;
  EXPECT_EQ(validateProfile(p, "profile").message(),
            "profile: no layers (a profile needs at least the tail layer)");
  p.layers.push_back({"a", 1, 2, 1, 0, 0, 0});
  EXPECT_TRUE(validateProfile(p, "profile").ok());
  p.layers[0].bwdMs = -1;
  EXPECT_EQ(validateProfile(p, "profile").message(),
            "profile: layer 0: 'bwd_ms' must be a non-negative time in ms, got -1");
}

// Files: a round trip, and a missing file.
TEST(ProfileTest, LoadFromFile) {
  std::string path = ::testing::TempDir() + "rp_profile_test.json";
  {
    std::ofstream out(path);
    out << kGoodProfile;
  }
  StatusOr<Profile> p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->layers.size(), 3u);
  std::remove(path.c_str());

  StatusOr<Profile> missing = loadProfile("/nonexistent/profile.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::NotFound);
  EXPECT_EQ(missing.status().message(), "/nonexistent/profile.json: cannot open file");

  {
    std::ofstream out(path);
    out << R"({"layers": [{"name": "a", "fwd_ms": 1}]})";
  }
  StatusOr<Profile> bad = loadProfile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), path + ": layer 0: missing 'bwd_ms'");
  std::remove(path.c_str());
}

// A full target, and one with only the required fields.
TEST(ProfileTargetTest, ParsesJson) {
  StatusOr<TargetSpec> t = parseTarget(R"({"name": "rtx4090", "peak_tflops": 330,
    "hbm_gbps": 1008, "pcie_gbps": 32, "memory_bytes": 25757220864})",
                                       "gpu.json");
  ASSERT_TRUE(t.ok()) << t.status().toString();
  EXPECT_EQ(t->name, "rtx4090");
  EXPECT_DOUBLE_EQ(t->peakTflops, 330);
  EXPECT_DOUBLE_EQ(t->hbmGbps, 1008);
  EXPECT_DOUBLE_EQ(t->pcieGbps, 32);
  EXPECT_EQ(t->memoryBytes, 25757220864u);

  StatusOr<TargetSpec> minimal =
      parseTarget(R"({"name": "g", "pcie_gbps": 16, "memory_bytes": 24e9})", "gpu.json");
  ASSERT_TRUE(minimal.ok()) << minimal.status().toString();
  EXPECT_DOUBLE_EQ(minimal->peakTflops, 0);
  EXPECT_EQ(minimal->memoryBytes, 24000000000u);
}

// Target errors, JSON form.
TEST(ProfileTargetTest, JsonErrors) {
  EXPECT_EQ(targetError("{"), "gpu.json: malformed JSON");
  EXPECT_EQ(targetError(R"({"pcie_gbps": 32, "memory_bytes": 1})"), "gpu.json: missing 'name'");
  EXPECT_EQ(targetError(R"({"name": "g", "memory_bytes": 1})"), "gpu.json: missing 'pcie_gbps'");
  EXPECT_EQ(targetError(R"({"name": "g", "pcie_gbps": 32})"), "gpu.json: missing 'memory_bytes'");
  EXPECT_EQ(targetError(R"({"name": "g", "pcie_gbps": "fast", "memory_bytes": 1})"),
            "gpu.json: 'pcie_gbps' must be a number, got a string");
  EXPECT_EQ(targetError(R"({"name": "g", "pcie_gbps": 0, "memory_bytes": 1})"),
            "gpu.json: target 'g': 'pcie_gbps' must be a positive number (GB/s per direction), "
            "got 0");
  EXPECT_EQ(targetError(R"({"name": "g", "pcie_gbps": 32, "memory_bytes": 0})"),
            "gpu.json: target 'g': 'memory_bytes' must be positive");
  EXPECT_EQ(targetError(R"({"name": "g", "pcie_gbps": 32, "memory_bytes": -1})"),
            "gpu.json: 'memory_bytes' must be a non-negative integer byte count, got -1");
  EXPECT_EQ(targetError(R"({"name": "g", "pcie_gbps": 32, "memory_bytes": 1,
    "peak_tflops": -5})"),
            "gpu.json: target 'g': 'peak_tflops' must be a non-negative number, got -5");
  EXPECT_EQ(targetError(R"({"name": "g", "pcie": 32})"),
            "gpu.json: unknown field 'pcie' (expected name, peak_tflops, hbm_gbps, pcie_gbps, "
            "memory_bytes)");
}

// The presets by name: the paper's GPU, its successor and the benchmark's.
TEST(ProfileTargetTest, Presets) {
  StatusOr<TargetSpec> t = parseTargetFlag("rtx4090");
  ASSERT_TRUE(t.ok()) << t.status().toString();
  EXPECT_EQ(t->name, "rtx4090");
  EXPECT_DOUBLE_EQ(t->peakTflops, 165);
  EXPECT_DOUBLE_EQ(t->hbmGbps, 1008);
  EXPECT_DOUBLE_EQ(t->pcieGbps, 25);
  EXPECT_EQ(t->memoryBytes, uint64_t(24) << 30);
  std::optional<TargetSpec> b = targetPreset("rtx5090");
  ASSERT_TRUE(b);
  EXPECT_DOUBLE_EQ(b->peakTflops, 209.5);
  EXPECT_EQ(b->memoryBytes, uint64_t(32) << 30);
  std::optional<TargetSpec> h = targetPreset("h100");
  ASSERT_TRUE(h);
  EXPECT_DOUBLE_EQ(h->peakTflops, 989);
  EXPECT_DOUBLE_EQ(h->pcieGbps, 50);
  EXPECT_EQ(h->memoryBytes, uint64_t(80) << 30);
  EXPECT_FALSE(targetPreset("a100"));
  EXPECT_EQ(flagError("a100"),
            "target flag 'a100': 'a100' is not key=value (nor a preset: rtx4090, rtx5090, h100)");
}

// The flag form, and makeTarget.
TEST(ProfileTargetTest, Flags) {
  StatusOr<TargetSpec> t =
      parseTargetFlag("name=rtx4090,pcie_gbps=32,memory_bytes=24e9,peak_tflops=330");
  ASSERT_TRUE(t.ok()) << t.status().toString();
  EXPECT_EQ(t->name, "rtx4090");
  EXPECT_DOUBLE_EQ(t->pcieGbps, 32);
  EXPECT_EQ(t->memoryBytes, 24000000000u);
  EXPECT_DOUBLE_EQ(t->peakTflops, 330);
  EXPECT_DOUBLE_EQ(t->hbmGbps, 0);

  EXPECT_EQ(flagError("name=g,pcie_gbps=32"),
            "target flag 'name=g,pcie_gbps=32': missing 'memory_bytes'");
  EXPECT_EQ(flagError("name=g,pcie_gbps=x32,memory_bytes=1"),
            "target flag 'name=g,pcie_gbps=x32,memory_bytes=1': 'pcie_gbps' must be a number, "
            "got 'x32'");
  EXPECT_EQ(flagError("name=g,,pcie_gbps=32"),
            "target flag 'name=g,,pcie_gbps=32': empty item; expected key=value pairs separated "
            "by ','");
  EXPECT_EQ(flagError("name=g,pcie_gbps"),
            "target flag 'name=g,pcie_gbps': 'pcie_gbps' is not key=value (nor a preset: rtx4090, "
            "rtx5090, h100)");
  EXPECT_EQ(flagError("name=g,speed=1"),
            "target flag 'name=g,speed=1': unknown key 'speed' (expected name, peak_tflops, "
            "hbm_gbps, pcie_gbps, memory_bytes)");
  EXPECT_EQ(flagError("name=g,pcie_gbps=32,memory_bytes=1.5"),
            "target flag 'name=g,pcie_gbps=32,memory_bytes=1.5': 'memory_bytes' must be a "
            "non-negative integer byte count, got 1.5");
  EXPECT_EQ(flagError("name=g,pcie_gbps=-1,memory_bytes=1"),
            "target 'g': 'pcie_gbps' must be a positive number (GB/s per direction), got -1");

  StatusOr<TargetSpec> made = makeTarget("", 0, 0, 32, 1);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().message(), "target: 'name' must not be empty");
}

// Byte formatting used in messages.
TEST(ProfileTargetTest, FormatBytes) {
  EXPECT_EQ(formatBytes(17), "17 B");
  EXPECT_EQ(formatBytes(12 * 1024), "12.0 KiB");
  EXPECT_EQ(formatBytes(300ull << 20), "300.0 MiB");
  EXPECT_EQ(formatBytes(3ull << 29), "1.5 GiB");
}

// work_bytes is optional (0 when absent); a stage's memory adds the largest working set of its
// layers to its weights (and gradient buffers in backward).
TEST(ProfileTest, WorkBytesAddTheLargestWorkingSetToAStage) {
  StatusOr<Profile> p = parseProfile(
      R"({"layers": [
        {"name": "a", "fwd_ms": 1, "bwd_ms": 2, "param_bytes": 100, "trainable_bytes": 10,
         "act_bytes": 8, "work_bytes": 1000},
        {"name": "b", "fwd_ms": 1, "bwd_ms": 2, "param_bytes": 200, "trainable_bytes": 20,
         "act_bytes": 8, "work_bytes": 3000},
        {"name": "tail", "fwd_ms": 1, "bwd_ms": 2, "param_bytes": 50, "trainable_bytes": 5,
         "act_bytes": 4}]})",
      "profile.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p.value().layers[0].workBytes, 1000u);
  EXPECT_EQ(p.value().layers[2].workBytes, 0u);
  StatusOr<CostModel> model = CostModel::create(p.value(), 25.0, 4);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model.value().memoryBytes(StageKind::Forward, 0, 2), 300u + 3000u);
  EXPECT_EQ(model.value().memoryBytes(StageKind::Backward, 0, 2), 300u + 30u + 3000u);
  EXPECT_EQ(model.value().memoryBytes(StageKind::FusedTail, 2, 3), 55u);
}

// saved_bytes is optional (nullopt when absent: rpc fills in its estimate, the cost model counts
// 0); a byte count like the others.
TEST(ProfileTest, SavedBytesIsAnOptionalByteCount) {
  StatusOr<Profile> p = parseProfile(
      R"({"layers": [
        {"name": "a", "fwd_ms": 1, "bwd_ms": 2, "param_bytes": 100, "trainable_bytes": 10,
         "act_bytes": 8, "saved_bytes": 7000},
        {"name": "tail", "fwd_ms": 1, "bwd_ms": 2, "param_bytes": 50, "trainable_bytes": 5,
         "act_bytes": 4, "saved_bytes": 0}]})",
      "profile.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p.value().layers[0].savedBytes, std::optional<uint64_t>(7000));
  EXPECT_EQ(p.value().layers[1].savedBytes, std::optional<uint64_t>(0));
  StatusOr<Profile> absent = parseProfile(
      R"({"layers": [{"name": "tail", "fwd_ms": 1, "bwd_ms": 2, "param_bytes": 50,
         "trainable_bytes": 5, "act_bytes": 4}]})",
      "profile.json");
  ASSERT_TRUE(absent.ok()) << absent.status().message();
  EXPECT_FALSE(absent.value().layers[0].savedBytes.has_value());
  EXPECT_EQ(profileError(oneLayer(R"({"name": "a", "fwd_ms": 1, "bwd_ms": 2, "param_bytes": 3,
    "trainable_bytes": 4, "act_bytes": 5, "saved_bytes": -1})")),
            "profile.json: layer 0: 'saved_bytes' must be a non-negative integer byte count, "
            "got -1");
  EXPECT_EQ(profileError(oneLayer(R"({"name": "a", "fwd_ms": 1, "bwd_ms": 2, "param_bytes": 3,
    "trainable_bytes": 4, "act_bytes": 5, "saved_bytes": 1.5})")),
            "profile.json: layer 0: 'saved_bytes' must be a non-negative integer byte count, "
            "got 1.5");
  EXPECT_EQ(profileError(oneLayer(R"({"name": "a", "fwd_ms": 1, "bwd_ms": 2, "param_bytes": 3,
    "trainable_bytes": 4, "act_bytes": 5, "saved_bytes": "big"})")),
            "profile.json: layer 0: 'saved_bytes' must be a number, got a string");
}
