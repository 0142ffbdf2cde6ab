//===- PlanFileTest.cpp - The .rpplan envelope: round trip and damage ------===//
//
// writePlanFile / readPlanFile (runtime/plan/PlanFile.h): a round trip, deterministic bytes,
// and the messages for every kind of damage: every truncation length, a flipped byte, a wrong
// magic, another schema version, a missing file.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanFile.h"

#include "runtime/plan/PlanValidator.h"

#include "test/Unit/support/PlanTestUtil.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>

namespace rp::runtime {
namespace {

using rp::testing::makeValidPlan;

class PlanFileTest : public rp::testing::TempDirTest {};

TEST_F(PlanFileTest, ContentHashIsFnv1a64) {
  EXPECT_EQ(planContentHash(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(planContentHash("a"), 0xaf63dc4c8601ec8cull);
}

TEST_F(PlanFileTest, RoundTrip) {
  rp::plan::Plan plan = makeValidPlan();
  ASSERT_TRUE(validatePlan(plan).ok()) << validatePlan(plan).message();
  const std::string file = path("model.rpplan");
  ASSERT_TRUE(writePlanFile(file, plan).ok());
  StatusOr<rp::plan::Plan> read = readPlanFile(file);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(plan, *read));
  EXPECT_TRUE(validatePlan(*read).ok());
  // Nothing but the plan is left in the directory (no temporary files).
  EXPECT_EQ(listDir(), std::vector<std::string>{"model.rpplan"});
}

TEST_F(PlanFileTest, EnvelopeFields) {
  const std::string file = path("model.rpplan");
  ASSERT_TRUE(writePlanFile(file, makeValidPlan()).ok());
  rp::plan::PlanFile envelope;
  ASSERT_TRUE(envelope.ParseFromString(readBytes(file)));
  EXPECT_EQ(envelope.magic(), kPlanMagic);
  EXPECT_EQ(envelope.schema_version(), kSchemaVersion);
  EXPECT_EQ(envelope.content_hash(), planContentHash(envelope.plan()));
  // The file starts with the magic's tag and "RPLN".
  EXPECT_EQ(readBytes(file).substr(0, 5), std::string("\x0dRPLN"));
}

TEST_F(PlanFileTest, SamePlanSameBytes) {
  // The attribute maps are serialized in key order, so the bytes (and hash) are stable.
  ASSERT_TRUE(writePlanFile(path("a.rpplan"), makeValidPlan()).ok());
  ASSERT_TRUE(writePlanFile(path("b.rpplan"), makeValidPlan()).ok());
  EXPECT_EQ(readBytes(path("a.rpplan")), readBytes(path("b.rpplan")));
}

TEST_F(PlanFileTest, EveryTruncationFailsCleanly) {
  const std::string file = path("model.rpplan");
  ASSERT_TRUE(writePlanFile(file, makeValidPlan()).ok());
  const std::string bytes = readBytes(file);
  const std::string cut = path("cut.rpplan");
  for (size_t n = 0; n < bytes.size(); ++n) {
    writeBytes(cut, bytes.substr(0, n));
    StatusOr<rp::plan::Plan> read = readPlanFile(cut);
    ASSERT_FALSE(read.ok()) << "truncated to " << n << " bytes";
    EXPECT_EQ(read.status().code(), StatusCode::DataLoss) << n << ": " << read.status().message();
    EXPECT_NE(read.status().message().find("corrupted or truncated"), std::string::npos)
        << n << ": " << read.status().message();
    EXPECT_NE(read.status().message().find(cut), std::string::npos) << n;
  }
}

TEST_F(PlanFileTest, FlippedByteIsAHashMismatch) {
  const std::string file = path("model.rpplan");
  ASSERT_TRUE(writePlanFile(file, makeValidPlan()).ok());
  std::string bytes = readBytes(file);
  bytes[bytes.size() - 3] ^= 0x20; // inside the plan payload
  writeBytes(file, bytes);
  StatusOr<rp::plan::Plan> read = readPlanFile(file);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::DataLoss);
  EXPECT_NE(read.status().message().find(
                "content hash mismatch: the plan file is corrupted or truncated"),
            std::string::npos)
      << read.status().message();
}

TEST_F(PlanFileTest, WrongMagic) {
  const std::string file = path("model.rpplan");
  ASSERT_TRUE(writePlanFile(file, makeValidPlan()).ok());
  std::string bytes = readBytes(file);
  bytes[1] = 'X';
  writeBytes(file, bytes);
  StatusOr<rp::plan::Plan> read = readPlanFile(file);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("not an rpc plan file"), std::string::npos)
      << read.status().message();

  // Any other file: an ONNX model, a text file.
  writeBytes(file, "ir_version: 8\n");
  read = readPlanFile(file);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("not an rpc plan file"), std::string::npos)
      << read.status().message();
}

TEST_F(PlanFileTest, OtherSchemaVersion) {
  // An envelope a future rpc-compile would write: a valid hash, the next schema version.
  rp::plan::PlanFile envelope;
  std::string planBytes = makeValidPlan().SerializeAsString();
  envelope.set_magic(kPlanMagic);
  envelope.set_schema_version(kSchemaVersion + 1);
  envelope.set_content_hash(planContentHash(planBytes));
  envelope.set_plan(planBytes);
  const std::string file = path("future.rpplan");
  writeBytes(file, envelope.SerializeAsString());
  StatusOr<rp::plan::Plan> read = readPlanFile(file);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::InvalidArgument);
  const std::string expected = "plan schema version " + std::to_string(kSchemaVersion + 1) +
                               ", this rp-run reads version " + std::to_string(kSchemaVersion) +
                               ": recompile the model with this rpc-compile";
  EXPECT_NE(read.status().message().find(expected),
            std::string::npos)
      << read.status().message();
}

TEST_F(PlanFileTest, MissingFileNamesThePath) {
  const std::string file = path("no-such.rpplan");
  StatusOr<rp::plan::Plan> read = readPlanFile(file);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::NotFound);
  EXPECT_NE(read.status().message().find(file), std::string::npos) << read.status().message();
}

TEST_F(PlanFileTest, UnwritableTargetLeavesNothing) {
  // A missing directory: the write fails and names the path.
  Status s = writePlanFile(path("missing-dir/model.rpplan"), makeValidPlan());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("missing-dir/model.rpplan"), std::string::npos) << s.message();
  EXPECT_TRUE(listDir().empty());
}

TEST_F(PlanFileTest, TextFormat) {
  std::string text = planToText(makeValidPlan());
  EXPECT_NE(text.find("kernel: \"cross_entropy\""), std::string::npos);
  EXPECT_NE(text.find("name: \"lm_head\""), std::string::npos);
  // Map entries are printed in key order: ignore_index before reduction.
  EXPECT_LT(text.find("key: \"ignore_index\""), text.find("key: \"reduction\""));
}

} // namespace
} // namespace rp::runtime
