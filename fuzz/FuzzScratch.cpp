//===- FuzzScratch.cpp - A scratch directory for file-reading fuzz targets ===//

#include "fuzz/FuzzScratch.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include <stdlib.h>

namespace rp::fuzz {

Scratch::Scratch() {
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/rp-fuzz-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (!::mkdtemp(name.data())) {
    std::perror("rp-fuzz: cannot create the scratch directory");
    std::abort();
  }
  dir_ = name.data();
}

Scratch::~Scratch() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string Scratch::write(const std::string &name, const uint8_t *data, size_t size) const {
  const std::string path = dir_ + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (size)
    out.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "rp-fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

Scratch &scratch() {
  static Scratch instance;
  return instance;
}

} // namespace rp::fuzz
