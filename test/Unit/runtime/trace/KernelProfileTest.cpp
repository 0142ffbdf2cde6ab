//===- KernelProfileTest.cpp - rp-run --profile-kernels' sums ----------===//

#include "runtime/trace/KernelProfile.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace rp::runtime {
namespace {

ProfiledInstruction instr(const std::string &fn, int index, const std::string &kernel,
                          const std::string &sig) {
  return ProfiledInstruction{fn, index, kernel, "loc_" + fn, sig};
}

TEST(KernelProfileTest, SumsPerKernelSignatureAndInstructionLargestFirst) {
  KernelProfile p;
  p.add(instr("block_0", 0, "matmul", "f32[4,8] -> f32[4,4]"), 1.0);
  p.add(instr("block_1", 0, "matmul", "f32[4,8] -> f32[4,4]"), 2.0);
  p.add(instr("block_1", 1, "softmax", "f32[4,4] -> f32[4,4]"), 4.0);
  p.add(instr("block_0", 0, "matmul", "f32[4,8] -> f32[4,4]"), 0.5);
  EXPECT_DOUBLE_EQ(p.totalSeconds(), 7.5);
  const nlohmann::json doc = nlohmann::json::parse(p.json());
  EXPECT_DOUBLE_EQ(doc["total_s"].get<double>(), 7.5);
  ASSERT_EQ(doc["by_kernel"].size(), 2u);
  EXPECT_EQ(doc["by_kernel"][0]["kernel"], "softmax");
  EXPECT_EQ(doc["by_kernel"][1]["kernel"], "matmul");
  EXPECT_EQ(doc["by_kernel"][1]["count"], 3);
  EXPECT_DOUBLE_EQ(doc["by_kernel"][1]["seconds"].get<double>(), 3.5);
  ASSERT_EQ(doc["by_signature"].size(), 2u); // one matmul signature over both layers
  EXPECT_DOUBLE_EQ(doc["by_signature"][1]["seconds"].get<double>(), 3.5);
  ASSERT_EQ(doc["by_instruction"].size(), 3u);
  EXPECT_EQ(doc["by_instruction"][0]["function"], "block_1");
  EXPECT_EQ(doc["by_instruction"][0]["index"], 1);
  EXPECT_EQ(doc["by_instruction"][1]["function"], "block_1"); // 2.0 before block_0's 1.5
  EXPECT_EQ(doc["by_instruction"][2]["count"], 2);
  EXPECT_DOUBLE_EQ(doc["by_instruction"][2]["seconds"].get<double>(), 1.5);
  EXPECT_EQ(doc["by_instruction"][2]["location"], "loc_block_0");
  EXPECT_NEAR(doc["by_instruction"][0]["fraction"].get<double>(), 4.0 / 7.5, 1e-15);
}

TEST(KernelProfileTest, TableListsTheTopEntries) {
  KernelProfile p;
  p.add(instr("f", 0, "add", "f32[2] -> f32[2]"), 0.25);
  p.add(instr("f", 1, "mul", "f32[2] -> f32[2]"), 0.75);
  const std::string t = p.table(1);
  EXPECT_NE(t.find("kernel profile: 1.000 s in 2 instructions"), std::string::npos) << t;
  EXPECT_NE(t.find("mul"), std::string::npos) << t;
  EXPECT_EQ(t.find("add"), std::string::npos) << "top 1 lists the largest only:\n" << t;
  EXPECT_NE(t.find("75.0%"), std::string::npos) << t;
}

TEST(KernelProfileTest, EmptyProfileIsValidJson) {
  KernelProfile p;
  const nlohmann::json doc = nlohmann::json::parse(p.json());
  EXPECT_EQ(doc["total_s"].get<double>(), 0.0);
  EXPECT_TRUE(doc["by_instruction"].empty());
  EXPECT_NE(p.table(5).find("0 instructions"), std::string::npos);
}

TEST(KernelProfileTest, ConcurrentAddsAreAllCounted) {
  KernelProfile p;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&p, t] {
      for (int i = 0; i < 1000; ++i)
        p.add(instr("f" + std::to_string(t), i % 3, "add", "f32[1] -> f32[1]"), 0.001);
    });
  for (std::thread &t : threads)
    t.join();
  const nlohmann::json doc = nlohmann::json::parse(p.json());
  EXPECT_EQ(doc["by_kernel"][0]["count"], 4000);
  EXPECT_EQ(doc["by_instruction"].size(), 12u);
  EXPECT_NEAR(p.totalSeconds(), 4.0, 1e-9);
}

TEST(KernelProfileTest, WriteNamesAnUnwritablePath) {
  KernelProfile p;
  p.add(instr("f", 0, "add", "f32[1] -> f32[1]"), 1.0);
  const std::string bad = "/nonexistent-dir-for-rp-test/profile.json";
  const Status s = p.write(bad);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(bad), std::string::npos) << s.toString();
  const std::string good = ::testing::TempDir() + "/rp-kernel-profile.json";
  ASSERT_TRUE(p.write(good).ok());
  std::ifstream in(good);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(nlohmann::json::parse(text.str())["total_s"].get<double>(), 1.0);
  std::filesystem::remove(good);
}

} // namespace
} // namespace rp::runtime
