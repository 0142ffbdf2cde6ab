//===- CheckpointTest.cpp - crash-safe training checkpoint directories ----===//
//
// saveCheckpoint / loadCheckpoint / checkCheckpointDir (runtime/train/Checkpoint.h): a round
// trip, byte-reproducible files, removal of older steps, an interrupted save, every rejection
// of the loader, and a directory check that leaves nothing behind.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Checkpoint.h"

#include "base/Checksum.h"
#include "test/Unit/support/TempDirTest.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace rp::runtime {
namespace {

namespace fs = std::filesystem;

class CheckpointTest : public rp::testing::TempDirTest {
protected:
  /// The names in directory `p`, sorted (empty when it does not exist).
  static std::vector<std::string> listDir(const std::string &p) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(p, ec))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  /// A checkpoint of a two-param model with AdamW moments, values depending on `step`.
  CheckpointData makeData(int64_t step) {
    float s = static_cast<float>(step);
    w_ = {1 + s, 2, 3, 4, 5, 6};
    b_ = {-1, s};
    mw_ = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
    vw_ = {1e-3f, 2e-3f, 3e-3f, 4e-3f, 5e-3f, 6e-3f};
    mb_ = {7, 8};
    vb_ = {9, 10};
    CheckpointData d;
    d.step = step;
    d.metadata = {{"plan_hash", "abc123"}, {"seed", "42"}, {"update", "pipelined"}};
    // Deliberately not sorted by name: the writer sorts.
    d.model = {{"w", SafetensorsDType::F32, {2, 3}, w_.data(), w_.size() * 4},
               {"b", SafetensorsDType::F32, {2}, b_.data(), b_.size() * 4}};
    d.optimizer = {{"v.w", SafetensorsDType::F32, {2, 3}, vw_.data(), vw_.size() * 4},
                   {"m.w", SafetensorsDType::F32, {2, 3}, mw_.data(), mw_.size() * 4},
                   {"v.b", SafetensorsDType::F32, {2}, vb_.data(), vb_.size() * 4},
                   {"m.b", SafetensorsDType::F32, {2}, mb_.data(), mb_.size() * 4}};
    return d;
  }

  static std::vector<float> floats(const SafetensorsTensorView *t) {
    EXPECT_NE(t, nullptr);
    if (!t)
      return {};
    std::vector<float> v(t->size / 4);
    if (t->size)
      std::memcpy(v.data(), t->data, t->size);
    return v;
  }

  /// Writes `dir`/checkpoint.json with `text` (and creates `dir`).
  void writeManifest(const std::string &dir, const std::string &text) {
    fs::create_directories(dir);
    writeBytes(dir + "/checkpoint.json", text);
  }

  /// Writes `j` as `dir`/checkpoint.json with a valid manifest checksum (an edited manifest
  /// that is whole, so that the field checks behind the checksum are reached).
  void writeSealedManifest(const std::string &dir, nlohmann::json j) {
    j.erase("manifest_checksum");
    writeManifest(dir, sealCheckpointManifest(j.dump(2)));
  }

  void expectLoadError(const std::string &dir, StatusCode code, const std::string &message) {
    StatusOr<LoadedCheckpoint> ckpt = loadCheckpoint(dir);
    ASSERT_FALSE(ckpt.ok());
    EXPECT_EQ(ckpt.status().code(), code) << ckpt.status().toString();
    EXPECT_NE(ckpt.status().message().find(message), std::string::npos)
        << "expected: " << message << "\nactual:   " << ckpt.status().message();
  }

  fs::path dir_;
  std::vector<float> w_, b_, mw_, vw_, mb_, vb_;
};

TEST_F(CheckpointTest, FileNames) {
  EXPECT_EQ(checkpointModelFileName(12), "model-step12.safetensors");
  EXPECT_EQ(checkpointOptimizerFileName(0), "optimizer-step0.safetensors");
}

TEST_F(CheckpointTest, RoundTrip) {
  // A missing directory (two levels) is created.
  const std::string dir = path("run/ckpt");
  ASSERT_TRUE(saveCheckpoint(dir, makeData(7)).ok());
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"checkpoint.json", "model-step7.safetensors",
                                                    "optimizer-step7.safetensors"}));

  nlohmann::json manifest = nlohmann::json::parse(readBytes(dir + "/checkpoint.json"));
  EXPECT_EQ(manifest["format"], "rpc-checkpoint");
  EXPECT_EQ(manifest["version"], 2);
  EXPECT_EQ(manifest["step"], 7);
  const std::string modelSum = manifest["checksums"]["model-step7.safetensors"];
  const std::string optimizerSum = manifest["checksums"]["optimizer-step7.safetensors"];
  EXPECT_EQ(modelSum, formatChecksum(checksumFile(dir + "/model-step7.safetensors").value()));
  EXPECT_EQ(optimizerSum,
            formatChecksum(checksumFile(dir + "/optimizer-step7.safetensors").value()));
  EXPECT_EQ(manifest["model"], "model-step7.safetensors");
  EXPECT_EQ(manifest["optimizer"], "optimizer-step7.safetensors");
  EXPECT_EQ(manifest["metadata"]["plan_hash"], "abc123");

  StatusOr<LoadedCheckpoint> ckpt = loadCheckpoint(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().toString();
  EXPECT_EQ(ckpt->step, 7);
  EXPECT_EQ(ckpt->metadata, (std::map<std::string, std::string>{
                                {"plan_hash", "abc123"}, {"seed", "42"}, {"update", "pipelined"}}));
  EXPECT_EQ(floats(ckpt->model.find("w")), w_);
  EXPECT_EQ(floats(ckpt->model.find("b")), b_);
  EXPECT_EQ(ckpt->model.find("w")->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ckpt->model.tensors().size(), 2u);
  EXPECT_EQ(floats(ckpt->optimizer.find("m.w")), mw_);
  EXPECT_EQ(floats(ckpt->optimizer.find("v.w")), vw_);
  EXPECT_EQ(floats(ckpt->optimizer.find("m.b")), mb_);
  EXPECT_EQ(floats(ckpt->optimizer.find("v.b")), vb_);
  EXPECT_EQ(ckpt->model.metadata().at("format"), "pt");
  EXPECT_EQ(ckpt->model.metadata().at("step"), "7");

  // Written sorted by name: data-buffer order is name order.
  std::vector<std::string> order;
  for (const SafetensorsTensorView &t : ckpt->optimizer.tensors())
    order.push_back(t.name);
  EXPECT_EQ(order, (std::vector<std::string>{"m.b", "m.w", "v.b", "v.w"}));
}

TEST_F(CheckpointTest, EmptyTensorListsAndMetadata) {
  CheckpointData d;
  d.step = 0;
  ASSERT_TRUE(saveCheckpoint(path("c"), d).ok());
  StatusOr<LoadedCheckpoint> ckpt = loadCheckpoint(path("c"));
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().toString();
  EXPECT_EQ(ckpt->step, 0);
  EXPECT_TRUE(ckpt->metadata.empty());
  EXPECT_TRUE(ckpt->model.tensors().empty());
  EXPECT_TRUE(ckpt->optimizer.tensors().empty());
}

TEST_F(CheckpointTest, ByteReproducible) {
  CheckpointData d = makeData(3);
  ASSERT_TRUE(saveCheckpoint(path("a"), d).ok());
  // The same tensors in another order give the same bytes.
  std::reverse(d.model.begin(), d.model.end());
  std::reverse(d.optimizer.begin(), d.optimizer.end());
  ASSERT_TRUE(saveCheckpoint(path("b"), d).ok());
  for (const char *name :
       {"model-step3.safetensors", "optimizer-step3.safetensors", "checkpoint.json"}) {
    std::string a = readBytes(path("a/") + name), b = readBytes(path("b/") + name);
    EXPECT_FALSE(a.empty()) << name;
    EXPECT_EQ(a, b) << name;
  }
}

TEST_F(CheckpointTest, SecondSaveRemovesFirstSaveFiles) {
  const std::string dir = path("ckpt");
  ASSERT_TRUE(saveCheckpoint(dir, makeData(1)).ok());
  // Files a save does not own survive.
  writeBytes(dir + "/notes.txt", "keep me");
  writeBytes(dir + "/model-step-final.safetensors", "keep me too");
  ASSERT_TRUE(saveCheckpoint(dir, makeData(2)).ok());
  EXPECT_EQ(listDir(dir),
            (std::vector<std::string>{"checkpoint.json", "model-step-final.safetensors",
                                      "model-step2.safetensors", "notes.txt",
                                      "optimizer-step2.safetensors"}));
  StatusOr<LoadedCheckpoint> ckpt = loadCheckpoint(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().toString();
  EXPECT_EQ(ckpt->step, 2);
  EXPECT_EQ(floats(ckpt->model.find("b")), (std::vector<float>{-1, 2}));

  // Saving the same step again replaces its files.
  CheckpointData again = makeData(2);
  again.metadata["note"] = "again";
  ASSERT_TRUE(saveCheckpoint(dir, again).ok());
  ckpt = loadCheckpoint(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().toString();
  EXPECT_EQ(ckpt->metadata.at("note"), "again");
}

TEST_F(CheckpointTest, InterruptedSaveKeepsPreviousCheckpoint) {
  const std::string dir = path("ckpt");
  ASSERT_TRUE(saveCheckpoint(dir, makeData(5)).ok());
  const std::string manifestBefore = readBytes(dir + "/checkpoint.json");
  // A save of step 6 that died after writing its model file (and a temporary of the optimizer
  // file), before checkpoint.json.
  writeBytes(dir + "/model-step6.safetensors", "garbage: half of a newer save");
  writeBytes(dir + "/optimizer-step6.safetensors.tmp.Ab12Cd", "partial");
  writeBytes(dir + "/checkpoint.json.tmp.Xy34Zw", "{\"format\": \"rpc-ch");

  StatusOr<LoadedCheckpoint> ckpt = loadCheckpoint(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().toString();
  EXPECT_EQ(ckpt->step, 5);
  EXPECT_EQ(floats(ckpt->model.find("w")), (std::vector<float>{6, 2, 3, 4, 5, 6}));
  EXPECT_EQ(readBytes(dir + "/checkpoint.json"), manifestBefore);

  // The next save cleans up the leftovers.
  ASSERT_TRUE(saveCheckpoint(dir, makeData(7)).ok());
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"checkpoint.json", "model-step7.safetensors",
                                                    "optimizer-step7.safetensors"}));
}

TEST_F(CheckpointTest, FailedSaveKeepsPreviousCheckpoint) {
  const std::string dir = path("ckpt");
  ASSERT_TRUE(saveCheckpoint(dir, makeData(1)).ok());
  // A duplicate optimizer tensor name fails after the model file was written.
  CheckpointData bad = makeData(2);
  bad.optimizer.push_back(bad.optimizer.front());
  Status s = saveCheckpoint(dir, bad);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument) << s.toString();
  EXPECT_NE(s.message().find("v.w"), std::string::npos) << s.message();
  StatusOr<LoadedCheckpoint> ckpt = loadCheckpoint(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().toString();
  EXPECT_EQ(ckpt->step, 1);

  // Bad metadata fails before anything is written.
  CheckpointData badMeta = makeData(3);
  badMeta.metadata["bad"] = "\xff\xfe";
  s = saveCheckpoint(dir, badMeta);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument) << s.toString();
  EXPECT_FALSE(fs::exists(dir + "/model-step3.safetensors"));

  CheckpointData negative = makeData(1);
  negative.step = -1;
  s = saveCheckpoint(dir, negative);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument) << s.toString();
  EXPECT_NE(s.message().find("negative"), std::string::npos) << s.message();
}

// A second save of the step the directory holds (e.g. the same run repeated) must not write
// over the committed checkpoint's files: a failure mid-save would leave a checkpoint.json
// naming a new model file beside the old optimizer file. It alternates two generations of
// names, and each committed save removes the other generation's files.
TEST_F(CheckpointTest, ResavingTheSameStepKeepsTheCommittedFilesUntilItCommits) {
  const std::string dir = path("ckpt");
  ASSERT_TRUE(saveCheckpoint(dir, makeData(3)).ok());
  const std::string model = readBytes(dir + "/model-step3.safetensors");
  const std::string optimizer = readBytes(dir + "/optimizer-step3.safetensors");

  // Fails after writing its model file (duplicate optimizer tensor name).
  CheckpointData bad = makeData(3);
  bad.optimizer.push_back(bad.optimizer.front());
  b_ = {-1, 99}; // other values for the model file the failing save writes
  ASSERT_FALSE(saveCheckpoint(dir, bad).ok());
  EXPECT_EQ(readBytes(dir + "/model-step3.safetensors"), model);
  EXPECT_EQ(readBytes(dir + "/optimizer-step3.safetensors"), optimizer);
  StatusOr<LoadedCheckpoint> ckpt = loadCheckpoint(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().toString();
  EXPECT_EQ(floats(ckpt->model.find("b")), (std::vector<float>{-1, 3}));

  // A save that succeeds uses the -1 names and removes the others; the next goes back.
  CheckpointData again = makeData(3);
  b_ = {-1, 42};
  ASSERT_TRUE(saveCheckpoint(dir, again).ok());
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"checkpoint.json", "model-step3-1.safetensors",
                                                    "optimizer-step3-1.safetensors"}));
  ckpt = loadCheckpoint(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().toString();
  EXPECT_EQ(floats(ckpt->model.find("b")), (std::vector<float>{-1, 42}));
  ASSERT_TRUE(saveCheckpoint(dir, makeData(3)).ok());
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"checkpoint.json", "model-step3.safetensors",
                                                    "optimizer-step3.safetensors"}));
  EXPECT_EQ(readBytes(dir + "/model-step3.safetensors"), model);
  ASSERT_TRUE(saveCheckpoint(dir, makeData(4)).ok());
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"checkpoint.json", "model-step4.safetensors",
                                                    "optimizer-step4.safetensors"}));
}

TEST_F(CheckpointTest, SaveIntoUnwritableLocation) {
  writeBytes(path("file"), "a regular file");
  Status s = saveCheckpoint(path("file/sub"), makeData(1));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::Unavailable) << s.toString();
  EXPECT_NE(s.message().find(path("file")), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("Not a directory"), std::string::npos) << s.message();
}

TEST_F(CheckpointTest, LoadNoCheckpoint) {
  fs::create_directories(path("empty"));
  expectLoadError(path("empty"), StatusCode::NotFound,
                  path("empty") + " holds no checkpoint (checkpoint.json missing)");
  expectLoadError(path("nonexistent"), StatusCode::NotFound, "checkpoint.json missing");
}

TEST_F(CheckpointTest, LoadMalformedJson) {
  writeManifest(path("c"), "{\"format\": \"rpc-checkpoint\", \"version\": ");
  expectLoadError(path("c"), StatusCode::DataLoss, "is not valid JSON");
  writeManifest(path("c"), "[1, 2]");
  expectLoadError(path("c"), StatusCode::InvalidArgument, "is not a JSON object");
}

TEST_F(CheckpointTest, LoadWrongFormatOrVersion) {
  const std::string dir = path("c");
  ASSERT_TRUE(saveCheckpoint(dir, makeData(1)).ok());
  nlohmann::json good = nlohmann::json::parse(readBytes(dir + "/checkpoint.json"));

  nlohmann::json j = good;
  j["format"] = "pytorch-lightning";
  writeManifest(dir, j.dump());
  expectLoadError(dir, StatusCode::InvalidArgument,
                  "\"format\" is \"pytorch-lightning\", expected \"rpc-checkpoint\"");

  j = good;
  j["version"] = 3;
  writeManifest(dir, j.dump());
  expectLoadError(dir, StatusCode::InvalidArgument, "\"version\" is 3, expected 2");

  j = good;
  j.erase("step");
  writeSealedManifest(dir, j);
  expectLoadError(dir, StatusCode::InvalidArgument, "\"step\" is missing");

  j = good;
  j["step"] = -3;
  writeSealedManifest(dir, j);
  expectLoadError(dir, StatusCode::InvalidArgument, "\"step\" is -3");

  j = good;
  j["metadata"]["seed"] = 42;
  writeSealedManifest(dir, j);
  expectLoadError(dir, StatusCode::InvalidArgument, "\"metadata\" entry 'seed' is 42");

  j = good;
  j["optimizer"] = 7;
  writeSealedManifest(dir, j);
  expectLoadError(dir, StatusCode::InvalidArgument, "\"optimizer\" is 7");

  writeSealedManifest(dir, good);
  EXPECT_TRUE(loadCheckpoint(dir).ok());
}

// Every file of a checkpoint proves it is whole: one byte changed anywhere in any of the three
// files is refused (never loaded), naming the damaged file.
TEST_F(CheckpointTest, LoadRefusesAnyChangedByte) {
  const std::string dir = path("c");
  ASSERT_TRUE(saveCheckpoint(dir, makeData(3)).ok());
  for (const char *name :
       {"model-step3.safetensors", "optimizer-step3.safetensors", "checkpoint.json"}) {
    const std::string file = dir + "/" + name;
    const std::string good = readBytes(file);
    for (size_t at = 0; at < good.size(); ++at) {
      std::string bad = good;
      bad[at] = static_cast<char>(bad[at] ^ 0x01);
      writeBytes(file, bad);
      StatusOr<LoadedCheckpoint> ckpt = loadCheckpoint(dir);
      ASSERT_FALSE(ckpt.ok()) << name << " byte " << at;
      const StatusCode code = ckpt.status().code();
      EXPECT_TRUE(code == StatusCode::DataLoss || code == StatusCode::InvalidArgument)
          << name << " byte " << at << ": " << ckpt.status().toString();
      if (std::string(name) != "checkpoint.json")
        EXPECT_NE(ckpt.status().message().find(std::string(name) + "' is damaged"),
                  std::string::npos)
            << ckpt.status().message();
    }
    writeBytes(file, good);
  }
  EXPECT_TRUE(loadCheckpoint(dir).ok());
}

// A version 1 checkpoint (written before checksums) still loads; one that claims version 1
// but carries checksums is a damaged version 2.
TEST_F(CheckpointTest, LoadsVersionOneWithoutChecksums) {
  const std::string dir = path("c");
  ASSERT_TRUE(saveCheckpoint(dir, makeData(2)).ok());
  nlohmann::json j = nlohmann::json::parse(readBytes(dir + "/checkpoint.json"));
  j["version"] = 1;
  writeManifest(dir, j.dump());
  expectLoadError(dir, StatusCode::DataLoss, "a version 1 checkpoint has no checksums");
  j.erase("checksums");
  j.erase("manifest_checksum");
  writeManifest(dir, j.dump());
  StatusOr<LoadedCheckpoint> ckpt = loadCheckpoint(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().toString();
  EXPECT_EQ(ckpt->step, 2);
}

// A save that fails after writing its model file removes it: nothing of the failed generation
// stays beside the committed checkpoint.
TEST_F(CheckpointTest, FailedSaveLeavesNothingOfItsGeneration) {
  const std::string dir = path("ckpt");
  ASSERT_TRUE(saveCheckpoint(dir, makeData(1)).ok());
  CheckpointData bad = makeData(2);
  bad.optimizer.push_back(bad.optimizer.front()); // fails after the model file is written
  ASSERT_FALSE(saveCheckpoint(dir, bad).ok());
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"checkpoint.json", "model-step1.safetensors",
                                                    "optimizer-step1.safetensors"}));
}

TEST_F(CheckpointTest, LoadRefusesPathTraversal) {
  // A real tensor file outside the checkpoint directory that a traversal would reach.
  ASSERT_TRUE(saveCheckpoint(path("other"), makeData(1)).ok());
  const std::string dir = path("c");
  ASSERT_TRUE(saveCheckpoint(dir, makeData(1)).ok());
  nlohmann::json good = nlohmann::json::parse(readBytes(dir + "/checkpoint.json"));
  for (const char *name : {"../other/model-step1.safetensors", "..", "sub/model.safetensors",
                           "/etc/passwd", ".", ""}) {
    nlohmann::json j = good;
    j["model"] = name;
    writeSealedManifest(dir, j);
    expectLoadError(dir, StatusCode::InvalidArgument, "expected a plain file name");
  }
}

TEST_F(CheckpointTest, LoadMissingTensorFile) {
  const std::string dir = path("c");
  ASSERT_TRUE(saveCheckpoint(dir, makeData(4)).ok());
  fs::remove(dir + "/optimizer-step4.safetensors");
  expectLoadError(dir, StatusCode::DataLoss,
                  "names optimizer file 'optimizer-step4.safetensors', which is missing");

  // A truncated tensor file is data loss too, naming the file.
  ASSERT_TRUE(saveCheckpoint(dir, makeData(5)).ok());
  std::string bytes = readBytes(dir + "/model-step5.safetensors");
  writeBytes(dir + "/model-step5.safetensors", bytes.substr(0, bytes.size() - 4));
  expectLoadError(dir, StatusCode::DataLoss, "model-step5.safetensors");
}

TEST_F(CheckpointTest, CheckDirCreatesAndLeavesNothing) {
  // A missing nested directory is created, and left empty.
  const std::string dir = path("a/b/c");
  Status s = checkCheckpointDir(dir);
  ASSERT_TRUE(s.ok()) << s.toString();
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_TRUE(listDir(dir).empty());
  // An existing directory with a checkpoint stays as it was.
  ASSERT_TRUE(saveCheckpoint(dir, makeData(1)).ok());
  std::vector<std::string> before = listDir(dir);
  ASSERT_TRUE(checkCheckpointDir(dir).ok());
  EXPECT_EQ(listDir(dir), before);
  // A trailing slash is fine.
  EXPECT_TRUE(checkCheckpointDir(dir + "/").ok());
}

TEST_F(CheckpointTest, CheckDirUnwritableLeavesNothing) {
  // Tests run as root, so permissions do not stop writes: go through a regular file instead.
  writeBytes(path("file"), "a regular file");
  const std::vector<std::string> before = listDir(dir_.string());
  for (const std::string &dir : {path("file/sub"), path("file/sub/deeper"), path("file")}) {
    Status s = checkCheckpointDir(dir);
    ASSERT_FALSE(s.ok()) << dir;
    EXPECT_EQ(s.code(), StatusCode::InvalidArgument) << s.toString();
    EXPECT_EQ(s.message().rfind("cannot write checkpoints to " + dir + ": ", 0), 0u) << s.message();
    EXPECT_EQ(listDir(dir_.string()), before);
    EXPECT_EQ(readBytes(path("file")), "a regular file");
  }
  Status s = checkCheckpointDir("");
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument) << s.toString();
}

TEST_F(CheckpointTest, CheckDirProbeFailureRemovesCreatedDirs) {
  // Directories whose path fits PATH_MAX (4096) but whose probe file's path does not: mkdir
  // succeeds at every level, then creating the probe fails with ENAMETOOLONG. Every directory
  // the check created must be gone again.
  std::string dir = path("top");
  const std::string component(200, 'd');
  while (dir.size() + 1 + component.size() < 4080)
    dir += "/" + component;
  while (dir.size() < 4080)
    dir += "x";
  ASSERT_LT(dir.size(), 4095u);
  Status s = checkCheckpointDir(dir);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument) << s.toString();
  EXPECT_NE(s.message().find("cannot create a file in it"), std::string::npos) << s.message();
  EXPECT_TRUE(listDir(dir_.string()).empty());
}

} // namespace
} // namespace rp::runtime
