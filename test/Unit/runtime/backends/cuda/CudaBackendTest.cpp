//===- CudaBackendTest.cpp - The executor on the CUDA backend --------------===//
//
// Runs the hand-written plan of PlanTestUtil.h (forward stage, fused tail, backward stage;
// M = 2; fp32) through the executor on the CUDA backend and on the CPU backend, and checks:
//   - CUDA losses and fp32 master weights equal the CPU backend's within 1e-5 relative
//     (+ 1e-7 absolute): the GPU computes f32 elementwise ops in double like the CPU, but the
//     GEMMs (cuBLASLt vs OpenBLAS) sum in a different order;
//   - logical pools of 1, 2 and 4 workers on the visible GPU(s) give bit-identical losses and
//     master weights (the determinism rule: each value is computed by the same kernels in the
//     same order whatever the pool);
//   - async mode runs and differs from sync from step 1 on (stale weights), as on the CPU;
//   - CUDA graphs (--cuda-graphs) give bit-identical losses and master weights.
// Without a GPU every test calls GTEST_SKIP(); the decode tests at the end need none.
//
//===----------------------------------------------------------------------===//

#include "test/Unit/support/ExecutorTestUtil.h"
#include "test/Unit/support/PlanTestUtil.h"

#include "runtime/backends/cpu/CpuBackend.h"
#include "runtime/backends/cuda/CudaBackend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

namespace rp::runtime {
namespace {

namespace pb = rp::plan;

bool haveGpu() { return queryCudaDevices().ok(); }

using rp::testing::RunResult;

RunResult trainOnCpu(const pb::Plan &plan, int workers, int64_t steps) {
  CpuBackend backend(workers);
  return rp::testing::trainTestPlan(plan, backend, steps);
}

/// Trains on the GPU; `graphs` (when given) receives the backend's captured-graph and replay
/// counts.
RunResult trainOnGpu(const pb::Plan &plan, int workers, int64_t steps,
                     CudaBackendOptions options = {},
                     std::pair<size_t, int64_t> *graphs = nullptr) {
  StatusOr<std::unique_ptr<CudaBackend>> backend = CudaBackend::create(workers, options);
  EXPECT_TRUE(backend.ok()) << backend.status().toString();
  if (!backend.ok())
    return {};
  RunResult r = rp::testing::trainTestPlan(plan, *backend.value(), steps);
  if (graphs)
    *graphs = {backend.value()->capturedGraphs(), backend.value()->graphReplays()};
  return r;
}

void expectClose(const std::vector<float> &got, const std::vector<float> &want, const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::fabs(want[i]) + 1e-7) << what << " [" << i << "]";
}

class CudaBackendTest : public ::testing::TestWithParam<pb::UpdateMode> {
protected:
  void SetUp() override {
    if (!haveGpu())
      GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(CudaBackendTest, MatchesTheCpuBackend) {
  pb::Plan plan = rp::testing::makeValidPlan();
  plan.mutable_config()->set_update(GetParam());
  const RunResult cpu = trainOnCpu(plan, 1, 4);
  const RunResult gpu = trainOnGpu(plan, 1, 4);
  expectClose(gpu.losses, cpu.losses, "losses");
  expectClose(gpu.masterValues(), cpu.masterValues(), "master weights");
}

TEST_P(CudaBackendTest, LogicalPoolsGiveIdenticalResults) {
  pb::Plan plan = rp::testing::makeValidPlan();
  plan.mutable_config()->set_update(GetParam());
  const RunResult one = trainOnGpu(plan, 1, 4);
  ASSERT_EQ(one.losses.size(), 8u);
  for (int workers : {2, 4}) {
    const RunResult n = trainOnGpu(plan, workers, 4);
    ASSERT_EQ(n.losses.size(), one.losses.size());
    EXPECT_EQ(std::memcmp(n.losses.data(), one.losses.data(), one.losses.size() * 4), 0)
        << workers << " workers";
    EXPECT_EQ(n.master, one.master) << workers << " workers";
  }
}

// --cuda-graphs replays captured calls: the same kernels on the same addresses in the same
// order, so losses and master weights are bit-identical to plain launches, at pools of 1 and 2.
TEST_P(CudaBackendTest, GraphsGiveIdenticalResults) {
  pb::Plan plan = rp::testing::makeValidPlan();
  plan.mutable_config()->set_update(GetParam());
  // 8 steps: at a pool of 2 a worker runs a given stage only every other step (3 stages
  // dispatched round-robin), 2 micro-batches each time, over 2 slots x 2 activation sets: 4
  // steps give each (worker, function) 4 calls in up to 4 distinct frames, 8 steps force repeats.
  for (int workers : {1, 2}) {
    const RunResult plain = trainOnGpu(plan, workers, 8);
    std::pair<size_t, int64_t> graphs{0, 0};
    CudaBackendOptions options;
    options.graphs = true;
    const RunResult replayed = trainOnGpu(plan, workers, 8, options, &graphs);
    ASSERT_EQ(replayed.losses.size(), plain.losses.size());
    ASSERT_FALSE(plain.losses.empty());
    EXPECT_EQ(std::memcmp(replayed.losses.data(), plain.losses.data(), plain.losses.size() * 4),
              0)
        << workers << " workers";
    EXPECT_EQ(replayed.master, plain.master) << workers << " workers";
    // Some function has two or more instructions, and frames repeat: more replays than
    // captures.
    EXPECT_GT(graphs.first, 0u) << workers << " workers";
    EXPECT_GT(graphs.second, static_cast<int64_t>(graphs.first)) << workers << " workers";
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, CudaBackendTest, ::testing::Values(pb::SYNC, pb::ASYNC),
                         [](const auto &info) {
                           return std::string(info.param == pb::SYNC ? "Sync" : "Async");
                         });

// The decoder needs no GPU: every instruction of the test plan decodes for the GPU kernels.
TEST(CudaKernelDecode, TheTestPlanDecodes) {
  pb::Plan plan = rp::testing::makeValidPlan();
  for (const pb::Function &f : plan.functions()) {
    StatusOr<std::vector<CudaInstr>> body = decodeCudaFunction(f);
    ASSERT_TRUE(body.ok()) << body.status().toString();
    EXPECT_EQ(static_cast<int>(body.value().size()), f.body_size());
  }
}

// A shape the kernel's planner rejects is reported with the instruction's kernel and location.
TEST(CudaKernelDecode, BadShapesNameTheInstruction) {
  pb::Instruction ins;
  ins.set_kernel("add");
  ins.set_location("model.onnx:node_7");
  *ins.add_operands()->mutable_type() = rp::testing::tensorType(pb::F32, {2, 3});
  *ins.add_operands()->mutable_type() = rp::testing::tensorType(pb::F32, {4});
  *ins.add_results()->mutable_type() = rp::testing::tensorType(pb::F32, {2, 3});
  StatusOr<CudaKernel> k = CudaKernel::decode(ins);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().message(),
            "kernel 'add' at model.onnx:node_7: add: shapes [2, 3] and [4] do not broadcast");
}

// bf16 tensors are accepted (the CPU backend refuses them); an i1 matmul is not.
TEST(CudaKernelDecode, HalfFloatsAcceptedIntegersRefusedForMatmul) {
  pb::Instruction ins;
  ins.set_kernel("mul");
  *ins.add_operands()->mutable_type() = rp::testing::tensorType(pb::BF16, {2, 3});
  *ins.add_operands()->mutable_type() = rp::testing::tensorType(pb::BF16, {3});
  *ins.add_results()->mutable_type() = rp::testing::tensorType(pb::BF16, {2, 3});
  EXPECT_TRUE(CudaKernel::decode(ins).ok());
  pb::Instruction mm;
  mm.set_kernel("matmul");
  *mm.add_operands()->mutable_type() = rp::testing::tensorType(pb::I32, {2, 3});
  *mm.add_operands()->mutable_type() = rp::testing::tensorType(pb::I32, {3, 2});
  *mm.add_results()->mutable_type() = rp::testing::tensorType(pb::I32, {2, 2});
  StatusOr<CudaKernel> k = CudaKernel::decode(mm);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("matmul on the GPU takes f32, f16 or bf16"),
            std::string::npos)
      << k.status().message();
}

} // namespace
} // namespace rp::runtime
