//===- DistChainCheck.cpp - World::sumInRankOrder under mpirun, several chunks ------===//
//
// Run by ctest under mpirun with 2 and 3 ranks (test/Unit/CMakeLists.txt): every rank fills
// gradients whose association matters (values of spread exponents), sums them with a chunk of
// a few floats (World::setChunkFloatsForTests), so that the pipelined chain runs several chunks
// with a shorter last one, and compares every rank's result bit for bit with the rank-order
// sum ((x_0 + x_1) + x_2) + ... it computes itself. It also checks that the values make a
// different association visible (R > 2), so the comparison could fail. Exit status 0 when all
// match; otherwise 1 with the first mismatch on stderr.
//
//===----------------------------------------------------------------------===//

#include "runtime/dist/World.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

/// Rank r's value at index i: a deterministic float in [-1000, 1000] x 2^[-20, 19].
float value(int rank, int64_t i) {
  uint64_t h = (static_cast<uint64_t>(rank) + 1) * 0x9E3779B97F4A7C15ull ^
               (static_cast<uint64_t>(i) + 7) * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  const int mantissa = static_cast<int>(h % 2001) - 1000;
  const int exponent = static_cast<int>((h >> 16) % 40) - 20;
  return std::ldexp(static_cast<float>(mantissa), exponent);
}

bool sameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// One reduction of `count` floats in chunks of `chunk`; false (and a message) on a mismatch.
bool checkSum(rp::runtime::World &world, int64_t count, int64_t chunk, int64_t &reordered) {
  const int rank = world.rank(), ranks = world.ranks();
  std::vector<float> data(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    data[static_cast<size_t>(i)] = value(rank, i);
  world.setChunkFloatsForTests(chunk);
  if (rp::base::Status s = world.sumInRankOrder(data.data(), count); !s.ok()) {
    std::fprintf(stderr, "rank %d: sumInRankOrder failed: %s\n", rank, s.toString().c_str());
    return false;
  }
  for (int64_t i = 0; i < count; ++i) {
    float expected = value(0, i);
    for (int r = 1; r < ranks; ++r)
      expected = expected + value(r, i);
    float other = value(ranks - 1, i); // the reverse association, R > 2
    for (int r = ranks - 2; r >= 0; --r)
      other = value(r, i) + other;
    reordered += sameBits(other, expected) ? 0 : 1;
    if (!sameBits(data[static_cast<size_t>(i)], expected)) {
      std::fprintf(stderr, "rank %d of %d: count %lld chunk %lld: element %lld is %.9g, the "
                   "rank-order sum is %.9g\n", rank, ranks, static_cast<long long>(count),
                   static_cast<long long>(chunk), static_cast<long long>(i),
                   static_cast<double>(data[static_cast<size_t>(i)]),
                   static_cast<double>(expected));
      return false;
    }
  }
  return true;
}

} // namespace

int main() {
  rp::base::StatusOr<std::unique_ptr<rp::runtime::World>> world = rp::runtime::World::init();
  if (!world.ok()) {
    std::fprintf(stderr, "World::init failed: %s\n", world.status().toString().c_str());
    return 1;
  }
  rp::runtime::World &w = *world.value();
  if (w.ranks() < 2) {
    std::fprintf(stderr, "run under mpirun with at least 2 ranks\n");
    return 1;
  }
  // {count, chunk}: one short chunk, exact chunks, an odd remainder, a remainder of 1, many
  // chunks, the default chunk (once below it, once 2.5 chunks of 4 MiB messages, beyond MPI's
  // eager limits); twice each, so consecutive reductions do not mix messages.
  const int64_t full = rp::runtime::World::kChainChunkFloats;
  const int64_t cases[][2] = {{5, 7},    {21, 7},   {23, 7},  {50, 7},      {1, 4},
                              {1001, 3}, {999, 64}, {37, 1},  {4099, full}, {full * 5 / 2, full}};
  int64_t reordered = 0;
  bool ok = true;
  for (int round = 0; round < 2 && ok; ++round)
    for (const auto &c : cases)
      ok = ok && checkSum(w, c[0], c[1], reordered);
  if (ok && w.ranks() > 2 && reordered == 0) {
    std::fprintf(stderr, "the values do not tell the association apart\n");
    ok = false;
  }
  if (ok && w.rank() == 0)
    std::printf("sumInRankOrder: %d ranks, every chunking bit-identical to the rank-order sum "
                "(%lld elements differ in another association)\n",
                w.ranks(), static_cast<long long>(reordered));
  if (!ok)
    w.abort("DistChainCheck failed", 1);
  return 0;
}
