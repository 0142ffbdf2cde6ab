//===- CpuGatherTest.cpp - gather and gather_elements ---------------------===//
//
// Gathers are exact: every element is compared with a naive index reference,
// for every data dtype, i64 and i32 indices, and negative indices.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Gather.h"
#include "test/Unit/kernels/KernelTestUtil.h"

namespace rp::kernels::cpu::test {
namespace {

const DType kDTypes[] = {DType::F32, DType::F64, DType::I64, DType::I32, DType::I1};

// ONNX Gather along each axis with 0-D, 1-D and 2-D indices in [-s, s).
TEST(CpuGather, MatchesReference) {
  std::mt19937 rng(71);
  const Shape shape{4, 5, 3};
  for (DType t : kDTypes)
    for (DType it : {DType::I64, DType::I32})
      for (int64_t axis = 0; axis < 3; ++axis)
        for (const Shape &is : {Shape{}, Shape{7}, Shape{2, 3}}) {
          SCOPED_TRACE(std::string(base::dtypeName(t)) + " indices " + base::dtypeName(it) +
                       base::formatShape(is) + " axis " + std::to_string(axis));
          const int64_t s = shape[axis];
          HostTensor x = randomTensor(t, shape, rng, -9, 9);
          HostTensor idx = randomTensor(it, is, rng, static_cast<double>(-s), s - 1.0);
          Shape outShape(shape.begin(), shape.begin() + axis);
          outShape.insert(outShape.end(), is.begin(), is.end());
          outShape.insert(outShape.end(), shape.begin() + axis + 1, shape.end());
          HostTensor out = poisoned(t, outShape);
          ASSERT_OK(gather(x, idx, axis, out));
          std::vector<double> want;
          for (int64_t i = 0; i < out.numElements(); ++i) {
            const Shape oi = unravel(i, outShape);
            const Shape ii(oi.begin() + axis, oi.begin() + axis + is.size());
            int64_t v = static_cast<int64_t>(get(idx, is.empty() ? 0 : ravel(ii, is)));
            v = v < 0 ? v + s : v;
            Shape xi(oi.begin(), oi.begin() + axis);
            xi.push_back(v);
            xi.insert(xi.end(), oi.begin() + axis + is.size(), oi.end());
            want.push_back(get(x, ravel(xi, shape)));
          }
          expectEqual(out, want);
        }
}

// An embedding lookup with negative ids, hand-computed.
TEST(CpuGather, NegativeIndices) {
  HostTensor table = tensor(DType::F32, {3, 2}, {0, 1, 10, 11, 20, 21});
  HostTensor ids = tensor(DType::I64, {2, 2}, {-1, 0, 1, -3});
  HostTensor out = poisoned(DType::F32, {2, 2, 2});
  ASSERT_OK(gather(table, ids, 0, out));
  expectEqual(out, {20, 21, 0, 1, 10, 11, 0, 1});
}

// Indices outside [-s, s) are OutOfRange errors naming index and position.
TEST(CpuGather, OutOfRange) {
  HostTensor table(DType::F32, {3, 2});
  HostTensor ids = tensor(DType::I32, {2, 2}, {0, 1, 3, 0});
  HostTensor out(DType::F32, {2, 2, 2});
  EXPECT_ERROR(gather(table, ids, 0, out), StatusCode::OutOfRange,
               "gather: index 3 at position [1, 0] of indices i32[2, 2] is outside [-3, 3) "
               "(dimension 0 of data f32[3, 2])");
  HostTensor neg = tensor(DType::I64, {2, 2}, {0, -4, 0, 0});
  EXPECT_ERROR(gather(table, neg, 0, out), StatusCode::OutOfRange, "index -4 at position [0, 1]");
}

TEST(CpuGather, Errors) {
  HostTensor table(DType::F32, {3, 2});
  HostTensor ids(DType::I64, {4});
  HostTensor out(DType::F32, {4, 3});
  EXPECT_ERROR(gather(table, ids, 0, out), StatusCode::InvalidArgument,
               "gather: out is f32[4, 3], expected f32[4, 2]");
  HostTensor fids(DType::F32, {4});
  EXPECT_ERROR(gather(table, fids, 0, out), StatusCode::InvalidArgument,
               "gather: indices has dtype f32, expected i64 or i32");
  EXPECT_ERROR(gather(table, ids, 2, out), StatusCode::InvalidArgument,
               "gather: axis 2 is out of range, expected [0, 2)");
}

// ONNX GatherElements along each axis, indices smaller than data in the
// other dims, negative indices included.
TEST(CpuGatherElements, MatchesReference) {
  std::mt19937 rng(72);
  const Shape shape{4, 5, 3};
  for (DType t : kDTypes)
    for (DType it : {DType::I64, DType::I32})
      for (int64_t axis = 0; axis < 3; ++axis) {
        SCOPED_TRACE(std::string(base::dtypeName(t)) + " axis " + std::to_string(axis));
        const int64_t s = shape[axis];
        Shape is{3, 4, 2};
        is[axis] = 6; // the axis dimension may exceed data's
        HostTensor x = randomTensor(t, shape, rng, -9, 9);
        HostTensor idx = randomTensor(it, is, rng, static_cast<double>(-s), s - 1.0);
        HostTensor out = poisoned(t, is);
        ASSERT_OK(gatherElements(x, idx, axis, out));
        std::vector<double> want;
        for (int64_t i = 0; i < out.numElements(); ++i) {
          Shape xi = unravel(i, is);
          const int64_t v = static_cast<int64_t>(get(idx, i));
          xi[axis] = v < 0 ? v + s : v;
          want.push_back(get(x, ravel(xi, shape)));
        }
        expectEqual(out, want);
      }
}

// Picking each row's label logit (the cross-entropy pattern), hand-computed.
TEST(CpuGatherElements, HandComputed) {
  HostTensor logp = tensor(DType::F64, {2, 3}, {0.1, 0.2, 0.3, 1.1, 1.2, 1.3});
  HostTensor labels = tensor(DType::I64, {2, 1}, {2, -3});
  HostTensor out = poisoned(DType::F64, {2, 1});
  ASSERT_OK(gatherElements(logp, labels, 1, out));
  expectEqual(out, {0.3, 1.1});
}

TEST(CpuGatherElements, Errors) {
  HostTensor data(DType::F32, {2, 3});
  HostTensor idx = tensor(DType::I64, {2, 1}, {0, 3});
  HostTensor out(DType::F32, {2, 1});
  EXPECT_ERROR(gatherElements(data, idx, 1, out), StatusCode::OutOfRange,
               "gather_elements: index 3 at position [1, 0] of indices i64[2, 1] is outside "
               "[-3, 3)");
  HostTensor tooBig(DType::I64, {3, 1});
  HostTensor out3(DType::F32, {3, 1});
  EXPECT_ERROR(gatherElements(data, tooBig, 1, out3), StatusCode::InvalidArgument,
               "gather_elements: indices of shape [3, 1] do not fit data f32[2, 3]");
  HostTensor rank1(DType::I64, {2});
  EXPECT_STATUS(gatherElements(data, rank1, 0, out), StatusCode::InvalidArgument);
  HostTensor ok(DType::I64, {2, 1});
  HostTensor wrongOut(DType::F64, {2, 1});
  EXPECT_ERROR(gatherElements(data, ok, 1, wrongOut), StatusCode::InvalidArgument,
               "gather_elements: out is f64[2, 1], expected f32[2, 1]");
}

} // namespace
} // namespace rp::kernels::cpu::test
