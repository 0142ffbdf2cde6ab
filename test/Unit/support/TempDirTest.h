//===- TempDirTest.h - A GoogleTest fixture with a scratch directory --*- C++ -*-===//
//
// TempDirTest: a fresh directory under the system temp dir for each test, removed (with
// everything in it) at the end; helpers to read, write and list files. Plain C++17 and
// GoogleTest: usable by every unit test of the runtime world.
//
//===----------------------------------------------------------------------===//
#ifndef RP_TEST_UNIT_TEMPDIRTEST_H
#define RP_TEST_UNIT_TEMPDIRTEST_H

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace rp::testing {

/// A fresh directory under the test temp dir, removed at the end of the test.
class TempDirTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "rp-unit-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string &name) const { return (dir_ / name).string(); }

  static void writeBytes(const std::string &path, const std::string &bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  static std::string readBytes(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  /// The names of the files in the directory, sorted.
  std::vector<std::string> listDir() const {
    std::vector<std::string> names;
    for (const auto &e : std::filesystem::directory_iterator(dir_))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  std::filesystem::path dir_;
};

} // namespace rp::testing

#endif // RP_TEST_UNIT_TEMPDIRTEST_H
