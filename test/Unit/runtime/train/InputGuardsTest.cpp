//===- InputGuardsTest.cpp - placeholder weights and exports over inputs --===//
//
// runtime/train/InputGuards.h: the note and refusal for a plan whose weights are placeholders
// (zeros always refused without weights, random ones allowed with the from-scratch flag), and
// an export directory that is, lies inside or contains an input checkpoint directory, or holds
// an input file (symbolic links and "." segments resolved).
//
//===----------------------------------------------------------------------===//

#include "runtime/train/InputGuards.h"

#include "test/Unit/support/TempDirTest.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace rp::runtime {
namespace {

namespace fs = std::filesystem;

rp::plan::Plan planWith(const std::string &placeholders, const std::string &checkpoint) {
  rp::plan::Plan plan;
  plan.set_placeholder_weights(placeholders);
  plan.set_checkpoint_dir(checkpoint);
  return plan;
}

bool contains(const Status &s, const std::string &text) {
  return s.message().find(text) != std::string::npos;
}

TEST(InputGuardsTest, ModelsOwnWeightsNeedNothing) {
  const rp::plan::Plan plan = planWith("", "");
  EXPECT_FALSE(placeholderWeightsNote(plan, "m.rpplan").has_value());
  EXPECT_TRUE(checkInitialWeights(plan, "m.rpplan", false, false, "--from-scratch").ok());
}

TEST(InputGuardsTest, ZerosAreRefusedWithoutWeights) {
  const rp::plan::Plan plan = planWith("zeros", "/models/qwen");
  EXPECT_EQ(placeholderWeightsNote(plan, "m.rpplan").value(),
            "m.rpplan holds placeholder weights (zeros) of the model in /models/qwen, not its "
            "weights");
  Status s = checkInitialWeights(plan, "m.rpplan", false, /*fromScratch=*/true, "--from-scratch");
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(contains(s, ": pass --weights /models/qwen to start from its weights"))
      << s.message();
  EXPECT_FALSE(contains(s, "--from-scratch")) << s.message(); // zeros never train
  EXPECT_TRUE(checkInitialWeights(plan, "m.rpplan", /*weightsGiven=*/true, false, "").ok());
}

TEST(InputGuardsTest, RandomPlaceholdersTrainFromScratch) {
  const rp::plan::Plan plan = planWith("random", "");
  Status s = checkInitialWeights(plan, "m.rpplan", false, false, "--from-scratch");
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(contains(s, "(random) of the model, not its weights: pass --weights DIR"))
      << s.message();
  EXPECT_TRUE(contains(s, ", or --from-scratch to train from the random initial weights"))
      << s.message();
  EXPECT_TRUE(checkInitialWeights(plan, "m.rpplan", false, true, "--from-scratch").ok());
  // Without a flag to name (an export), the refusal names none.
  EXPECT_FALSE(contains(checkInitialWeights(plan, "m.rpplan", false, false, ""), "--from-"));
}

class ExportOutsideInputsTest : public rp::testing::TempDirTest {
protected:
  void SetUp() override {
    rp::testing::TempDirTest::SetUp();
    fs::create_directories(path("model"));
    fs::create_directories(path("ckpt"));
    writeBytes(path("model/model.safetensors.index.json"), "{}");
    writeBytes(path("data.bin"), "x");
  }
};

TEST_F(ExportOutsideInputsTest, OverIntoOrAroundACheckpointIsRefused) {
  const RunInputs weightsDir{path("model"), "", {}};
  Status over = checkExportOutsideInputs(path("model") + "/", "--export-hf", weightsDir);
  EXPECT_TRUE(contains(over, "would write over the --weights checkpoint directory"))
      << over.message();
  Status into = checkExportOutsideInputs(path("model/./out"), "--export-hf", weightsDir);
  EXPECT_TRUE(contains(into, "would write into")) << into.message();
  Status around = checkExportOutsideInputs(path(""), "--export-hf", weightsDir);
  EXPECT_TRUE(contains(around, "would write around")) << around.message();
  // The directory of an index counts as the checkpoint directory; a link to it too.
  const RunInputs index{path("model/model.safetensors.index.json"), "", {}};
  EXPECT_FALSE(checkExportOutsideInputs(path("model"), "--export-hf", index).ok());
  fs::create_directory_symlink(path("model"), path("link"));
  EXPECT_FALSE(checkExportOutsideInputs(path("link"), "--export-hf", weightsDir).ok());
  const RunInputs resume{"", path("ckpt"), {}};
  Status r = checkExportOutsideInputs(path("ckpt"), "--export-hf", resume);
  EXPECT_TRUE(contains(r, "the --resume checkpoint directory")) << r.message();
}

TEST_F(ExportOutsideInputsTest, InputFilesAndSeparateDirectories) {
  const RunInputs files{path("weights.safetensors"), "", {path("data.bin"), ""}};
  Status s = checkExportOutsideInputs(path(""), "--export-hf", files);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(contains(s, "holds the input file " + path("data.bin"))) << s.message();
  // Apart from every input (a sibling whose name starts alike too): fine; no export: fine.
  const RunInputs all{path("model"), path("ckpt"), {path("data.bin")}};
  EXPECT_TRUE(checkExportOutsideInputs(path("model-ft"), "--export-hf", all).ok());
  EXPECT_TRUE(checkExportOutsideInputs(path("out"), "--export-hf", all).ok());
  EXPECT_TRUE(checkExportOutsideInputs("", "--export-hf", all).ok());
}

} // namespace
} // namespace rp::runtime
