//===- rp-bench-optimizer.cpp - Host AdamW against the memory's speed -----===//
//
// Measures the host optimizer's passes (runtime/optim/AdamW.h) in GB/s against a STREAM-style
// triad run in the same process on the same threads, so that the ratio says how close AdamW
// is to the machine's memory bandwidth (docs/PERFORMANCE.md, "Host optimizer").
//
//   rp-bench-optimizer [--threads T] [--params N] [--reps R] [--json FILE] [--markdown FILE]
//                      [--serial-init]
//
// Every variant runs on arrays of N fp32 elements (default 2^27: 512 MiB each, several times
// any last-level cache), R times after one untimed run; the best and the median time of the R
// are reported. Bytes are counted as STREAM counts them: each array element the pass reads
// once plus each it writes once, per element (a write-only array's write-allocate read is not
// counted):
//
//   triad                 a = b + s c                                   4 + 4 read, 4 written: 12
//   adamw                 adamwStep: grad, master, m, v read; master, m, v written        28
//   adamw + bf16 copy     adamwStepWritingWeights (sync's fused pass): + 2 written         30
//   adamw + f32 copy      the same with f32 compute weights: + 4 written                   32
//   adamw, then writer    adamwStep, then writeComputeWeights bf16 (two passes)      28 + 6 = 34
//   bf16 writer           writeComputeWeights (async's weights writer): 4 read, 2 written   6
//   sum of squares        sumOfSquares (the norm's own pass before)                         4
//   shared sum + squares  addCheckingFinite with squares: acc, g read; acc written         12
//   download + squares    copyCheckingFinite with squares, one thread (the CPU backend)     8
//
// The arrays are first touched in parallel with the schedule of the pass that streams them
// (firstTouch), unless --serial-init (one thread touches all: their pages then sit on its
// memory node). Thread placement follows OpenMP's environment (OMP_PLACES, OMP_PROC_BIND); the
// passes ask for proc_bind(spread), which libgomp applies only when a place list is set.
//
//===----------------------------------------------------------------------===//

#include "runtime/optim/AdamW.h"

#include <CLI/CLI.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace rt = rp::runtime;

namespace {

struct Free {
  void operator()(void *p) const { std::free(p); }
};
using Buffer = std::unique_ptr<void, Free>;

/// n elements of `size` bytes, page-aligned and not yet touched.
Buffer allocate(int64_t n, size_t size) {
  const size_t bytes = (static_cast<size_t>(n) * size + 4095) / 4096 * 4096;
  void *p = std::aligned_alloc(4096, bytes);
  if (!p) {
    std::fprintf(stderr, "rp-bench-optimizer: cannot allocate %zu bytes\n", bytes);
    std::exit(1);
  }
  return Buffer(p);
}

/// A value in [-scale, scale) from the element's index (splitmix64), so that filling is
/// parallel and the same on every run.
float valueAt(uint64_t i, uint64_t seed, float scale) {
  uint64_t z = i + seed * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return scale * (static_cast<float>(z >> 40) * 0x1p-23f - 1.0f);
}

/// Touches and fills x: in parallel with the passes' schedule (firstTouch), or on one thread.
void fill(float *x, int64_t n, uint64_t seed, float scale, bool serialInit) {
  if (serialInit)
    std::memset(x, 0, static_cast<size_t>(n) * sizeof(float));
  else
    rt::firstTouch(x, n);
  if (scale == 0)
    return;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    x[i] = valueAt(static_cast<uint64_t>(i), seed, scale);
}

#if defined(__clang__) // clang refuses noinline beside target_clones (and does not inline clones)
__attribute__((target_clones("avx512f", "avx2", "default")))
#else
__attribute__((target_clones("avx512f", "avx2", "default"), noinline))
#endif
void
triadRange(float *a, const float *b, const float *c, float s, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    a[i] = b[i] + s * c[i];
}

/// STREAM's triad over the blocks adamwStep uses, with the same static schedule.
void triad(float *a, const float *b, const float *c, float s, int64_t n) {
  constexpr int64_t kBlock = 16384;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) proc_bind(spread)
  for (int64_t k = 0; k < blocks; ++k)
    triadRange(a, b, c, s, k * kBlock, std::min(n, (k + 1) * kBlock));
}

struct Result {
  std::string name;
  double bytesPerElement;
  int threads;
  double best = 0, median = 0; // seconds
};

double seconds(const std::function<void()> &fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Result measure(const std::string &name, double bytesPerElement, int threads, int reps,
               const std::function<void()> &fn) {
  fn(); // untimed: page faults, clone resolution, the OpenMP pool
  std::vector<double> t;
  for (int r = 0; r < reps; ++r)
    t.push_back(seconds(fn));
  std::sort(t.begin(), t.end());
  Result out{name, bytesPerElement, threads};
  out.best = t.front();
  out.median = t[t.size() / 2];
  return out;
}

std::string loadAverage() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string cpuModel() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown";
}

double gbps(const Result &r, int64_t n, double time) {
  return r.bytesPerElement * static_cast<double>(n) / time / 1e9;
}

std::string jsonEscape(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"Host AdamW (runtime/optim) in GB/s against a STREAM triad in the same run"};
  int threads = omp_get_max_threads();
  int64_t params = int64_t{1} << 27;
  int reps = 5;
  std::string jsonPath, markdownPath;
  bool serialInit = false;
  app.add_option("--threads", threads, "OpenMP threads (default: OMP_NUM_THREADS or the cores)")
      ->check(CLI::PositiveNumber);
  app.add_option("--params", params, "fp32 elements per array (default 2^27)")
      ->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "timed runs per variant (default 5)")->check(CLI::PositiveNumber);
  app.add_option("--json", jsonPath, "write the results as JSON to this file");
  app.add_option("--markdown", markdownPath, "write the results as a markdown table to this file");
  app.add_flag("--serial-init", serialInit,
               "first-touch every array from one thread instead of the passes' schedule");
  CLI11_PARSE(app, argc, argv);
  omp_set_num_threads(threads);
  const int64_t n = params;
  const std::string loadBefore = loadAverage();

  std::vector<Result> results;
  {
    Buffer a = allocate(n, 4), b = allocate(n, 4), c = allocate(n, 4);
    float *fa = static_cast<float *>(a.get()), *fb = static_cast<float *>(b.get()),
          *fc = static_cast<float *>(c.get());
    fill(fa, n, 1, 0, serialInit);
    fill(fb, n, 2, 1, serialInit);
    fill(fc, n, 3, 1, serialInit);
    results.push_back(measure("triad", 12, threads, reps, [&] { triad(fa, fb, fc, 3.0f, n); }));
  }
  Buffer gradBuf = allocate(n, 4), masterBuf = allocate(n, 4), mBuf = allocate(n, 4),
         vBuf = allocate(n, 4), copyBuf = allocate(n, 4), otherBuf = allocate(n, 4);
  float *grad = static_cast<float *>(gradBuf.get()), *master = static_cast<float *>(masterBuf.get()),
        *m = static_cast<float *>(mBuf.get()), *v = static_cast<float *>(vBuf.get()),
        *copy = static_cast<float *>(copyBuf.get()), *other = static_cast<float *>(otherBuf.get());
  fill(grad, n, 4, 1e-3f, serialInit);
  fill(master, n, 5, 2e-2f, serialInit);
  fill(m, n, 0, 0, serialInit);
  fill(v, n, 0, 0, serialInit);
  fill(copy, n, 0, 0, serialInit);
  fill(other, n, 6, 1e-3f, serialInit);
  const rt::AdamWConfig config{1e-4, 0.9, 0.95, 1e-8, 0.1};
  int64_t step = 0;
  results.push_back(measure("adamw", 28, threads, reps, [&] {
    rt::adamwStep(master, m, v, grad, n, config, ++step, 0.25f);
  }));
  results.push_back(measure("adamw + bf16 copy (fused)", 30, threads, reps, [&] {
    (void)rt::adamwStepWritingWeights(master, m, v, grad, n, config, ++step, 0.25f,
                                      rp::DType::BF16, copy);
  }));
  results.push_back(measure("adamw + f32 copy (fused)", 32, threads, reps, [&] {
    (void)rt::adamwStepWritingWeights(master, m, v, grad, n, config, ++step, 0.25f,
                                      rp::DType::F32, copy);
  }));
  results.push_back(measure("adamw, then bf16 writer", 34, threads, reps, [&] {
    rt::adamwStep(master, m, v, grad, n, config, ++step, 0.25f);
    (void)rt::writeComputeWeights(master, rp::DType::BF16, copy, n);
  }));
  results.push_back(measure("bf16 writer", 6, threads, reps, [&] {
    (void)rt::writeComputeWeights(master, rp::DType::BF16, copy, n);
  }));
  double sink = 0;
  results.push_back(measure("sum of squares", 4, threads, reps,
                            [&] { sink += rt::sumOfSquares(grad, n, 0.25f); }));
  results.push_back(measure("shared sum + squares", 12, threads, reps, [&] {
    double squares = 0;
    rt::addCheckingFinite(other, grad, n, 0.25f, &squares);
    sink += squares;
  }));
  results.push_back(measure("download copy + squares", 8, 1, reps, [&] {
    double squares = 0;
    rt::copyCheckingFinite(copy, grad, n, 0.25f, &squares);
    sink += squares;
  }));
  const std::string loadAfter = loadAverage();

  const Result &tri = results.front();
  auto ratio = [&](const Result &r) { return gbps(r, n, r.best) / gbps(tri, n, tri.best); };
  std::ostringstream md;
  md << "| pass | bytes / element | threads | best GB/s | median GB/s | best / triad |\n"
     << "| --- | --- | --- | --- | --- | --- |\n";
  for (const Result &r : results) {
    char line[256];
    std::snprintf(line, sizeof line, "| %s | %.0f | %d | %.2f | %.2f | %.2f |\n", r.name.c_str(),
                  r.bytesPerElement, r.threads, gbps(r, n, r.best), gbps(r, n, r.median),
                  ratio(r));
    md << line;
  }
  char summary[512];
  std::snprintf(summary, sizeof summary,
                "%s; %d threads, %lld params (%.0f MiB per array), %d runs per pass; "
                "load average %s before, %s after%s\n",
                cpuModel().c_str(), threads, static_cast<long long>(n),
                static_cast<double>(n) * 4 / (1 << 20), reps, loadBefore.c_str(),
                loadAfter.c_str(), serialInit ? "; serial first touch" : "");
  std::printf("%s\n%s", md.str().c_str(), summary);
  if (!markdownPath.empty()) {
    std::ofstream f(markdownPath);
    f << md.str() << "\n" << summary;
  }
  if (!jsonPath.empty()) {
    std::ofstream f(jsonPath);
    f << "{\n  \"cpu\": \"" << jsonEscape(cpuModel()) << "\",\n  \"threads\": " << threads
      << ",\n  \"params\": " << n << ",\n  \"reps\": " << reps << ",\n  \"serial_init\": "
      << (serialInit ? "true" : "false") << ",\n  \"load_before\": \"" << loadBefore
      << "\",\n  \"load_after\": \"" << loadAfter << "\",\n  \"passes\": [\n";
    for (size_t i = 0; i < results.size(); ++i) {
      const Result &r = results[i];
      char line[512];
      std::snprintf(line, sizeof line,
                    "    {\"name\": \"%s\", \"bytes_per_element\": %.0f, \"threads\": %d, "
                    "\"best_s\": %.6f, \"median_s\": %.6f, \"best_gbps\": %.3f, "
                    "\"median_gbps\": %.3f, \"best_over_triad\": %.4f}%s\n",
                    r.name.c_str(), r.bytesPerElement, r.threads, r.best, r.median,
                    gbps(r, n, r.best), gbps(r, n, r.median), ratio(r),
                    i + 1 < results.size() ? "," : "");
      f << line;
    }
    f << "  ]\n}\n";
  }
  return sink == 12345.0 ? 2 : 0; // keeps the sums alive
}
