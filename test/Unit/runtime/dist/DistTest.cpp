//===- DistTest.cpp - rp-run's MPI launch detection and launch check ------===//
//
// The parts of data parallelism (runtime/dist, runtime/train/LaunchCheck.h) that need no MPI
// launcher: how rp-run tells it runs under one (the launcher's environment variables), the
// per-rank output names, the fingerprints the ranks compare, and, in a build without MPI, the
// refusal of World::init. The launches themselves: test/Tools/rp-run-mpi*.test.
//
//===----------------------------------------------------------------------===//

#include "runtime/dist/World.h"
#include "runtime/train/LaunchCheck.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace rp::runtime {
namespace {

void unsetLaunchEnv() {
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    unsetenv(v);
}

/// Unsets the launchers' variables for the test's scope, and again at its end (the tests run
/// without a launcher, so there is nothing to restore).
struct CleanLaunchEnv {
  CleanLaunchEnv() { unsetLaunchEnv(); }
  ~CleanLaunchEnv() { unsetLaunchEnv(); }
};

TEST(DistTest, DetectsTheLaunchersWorldSize) {
  CleanLaunchEnv clean;
  EXPECT_FALSE(detectMpiLaunch().has_value());
  setenv("PMI_SIZE", "3", 1);
  ASSERT_TRUE(detectMpiLaunch().has_value());
  EXPECT_EQ(detectMpiLaunch()->size, 3);
  EXPECT_EQ(detectMpiLaunch()->variable, "PMI_SIZE");
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1); // Open MPI's comes first
  EXPECT_EQ(detectMpiLaunch()->size, 2);
  EXPECT_EQ(detectMpiLaunch()->variable, "OMPI_COMM_WORLD_SIZE");
  for (const char *bad : {"", "x", "-4", "0", "2x"}) {
    setenv("OMPI_COMM_WORLD_SIZE", bad, 1);
    ASSERT_TRUE(detectMpiLaunch().has_value()) << bad;
    EXPECT_EQ(detectMpiLaunch()->size, 1) << bad;
  }
}

TEST(DistTest, RankPathsKeepRankZerosName) {
  EXPECT_EQ(rankPath("trace.json", 0), "trace.json");
  EXPECT_EQ(rankPath("trace.json", 3), "trace.json.rank3");
  EXPECT_EQ(rankPath("", 2), "");
}

TEST(DistTest, FingerprintsSeeEveryByte) {
  const std::string a = "the quick brown fox jumps over the lazy dog";
  const uint64_t h = fingerprintBytes(a.data(), a.size(), 0);
  EXPECT_EQ(fingerprintBytes(a.data(), a.size(), 0), h);
  for (size_t i = 0; i < a.size(); ++i) {
    std::string b = a;
    b[i] ^= 1;
    EXPECT_NE(fingerprintBytes(b.data(), b.size(), 0), h) << "byte " << i;
  }
  EXPECT_NE(fingerprintBytes(a.data(), a.size() - 1, 0), h);
  EXPECT_NE(fingerprintBytes(a.data(), a.size(), 1), h);
  // A file hashes as its bytes do, whatever the read size.
  const std::string path = ::testing::TempDir() + "/dist-test-fingerprint.bin";
  std::FILE *f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(a.data(), 1, a.size(), f);
  std::fclose(f);
  StatusOr<uint64_t> file = fingerprintFile(path);
  ASSERT_TRUE(file.ok()) << file.status().toString();
  EXPECT_EQ(file.value(), h);
  EXPECT_FALSE(fingerprintFile(path + ".missing").ok());
}

TEST(DistTest, InitNeedsABuildWithMpi) {
  EXPECT_EQ(mpiBuilt(), RP_TEST_HAVE_MPI != 0);
  if (mpiBuilt())
    return; // initialising MPI is the launches' part (test/Tools/rp-run-mpi*.test)
  StatusOr<std::unique_ptr<World>> world = World::init();
  ASSERT_FALSE(world.ok());
  EXPECT_NE(world.status().message().find("built without MPI"), std::string::npos)
      << world.status().message();
}

} // namespace
} // namespace rp::runtime
