//===- CpuScatterTest.cpp - the scatters ----------------------------------===//
//
// scatter and scatter_elements overwrite: they are checked against a naive reference (the
// updates written in row-major order, so a repeated target keeps the last), on hand-computed
// cases and on their errors. The adding scatters are the transposes of gather,
// gather_elements and slice, so each is checked three ways: against a naive float64 reference (every
// element of a poisoned output), by adjointness on random data,
//   <G(x), u> == <x, S(u)>   (rtol 1e-12 in f64, 1e-5 in f32, relative to
//                             sum |G(x)_i u_i|; f32 rounds each output once),
// and on hand-computed cases with repeated and negative indices. Error paths
// check exact status codes and messages; the last test runs each scatter on
// its parallel path with 1 and 4 OpenMP threads and compares the bytes.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Gather.h"
#include "kernels/cpu/Scatter.h"
#include "kernels/cpu/Shape.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <omp.h>

#include <functional>

namespace rp::kernels::cpu::test {
namespace {

const DType kDTypes[] = {DType::F32, DType::F64, DType::I64, DType::I32, DType::I1};
const DType kIndexDTypes[] = {DType::I64, DType::I32};

/// Expects <a, b> == <c, d> (inner products in double) within rtol of the
/// larger sum of |terms|.
void expectAdjoint(const HostTensor &a, const HostTensor &b, const HostTensor &c,
                   const HostTensor &d, double rtol) {
  ASSERT_EQ(a.numElements(), b.numElements());
  ASSERT_EQ(c.numElements(), d.numElements());
  double lhs = 0, rhs = 0, lhsScale = 0, rhsScale = 0;
  for (int64_t i = 0; i < a.numElements(); ++i) {
    lhs += get(a, i) * get(b, i);
    lhsScale += std::fabs(get(a, i) * get(b, i));
  }
  for (int64_t i = 0; i < c.numElements(); ++i) {
    rhs += get(c, i) * get(d, i);
    rhsScale += std::fabs(get(c, i) * get(d, i));
  }
  ASSERT_GT(lhsScale, 0) << "degenerate case: <G(x), u> has no non-zero term";
  EXPECT_LE(std::fabs(lhs - rhs), rtol * std::max(lhsScale, rhsScale))
      << "<G(x), u> = " << lhs << ", <x, S(u)> = " << rhs;
}

double adjointRtol(DType t) { return t == DType::F32 ? 1e-5 : 1e-12; }

//===--- scatter_add --------------------------------------------------------===//

/// gather's result shape for data of `shape`.
Shape gatherShape(const Shape &shape, const Shape &is, int64_t axis) {
  Shape out(shape.begin(), shape.begin() + axis);
  out.insert(out.end(), is.begin(), is.end());
  out.insert(out.end(), shape.begin() + axis + 1, shape.end());
  return out;
}

/// Runs fn(dtype, index dtype, axis, indices shape) over the scatter_add cases:
/// 0-D, 1-D (7 > every dimension, so indices repeat) and 2-D indices.
void forEachScatterAddCase(const std::function<void(DType, DType, int64_t, const Shape &)> &fn) {
  for (DType t : kFloatDTypes)
    for (DType it : kIndexDTypes)
      for (int64_t axis = 0; axis < 3; ++axis)
        for (const Shape &is : {Shape{}, Shape{7}, Shape{2, 3}}) {
          SCOPED_TRACE(std::string(base::dtypeName(t)) + " indices " + base::dtypeName(it) +
                       base::formatShape(is) + " axis " + std::to_string(axis));
          fn(t, it, axis, is);
        }
}

const Shape kShape{4, 5, 3};

// out[i.., idx[j..], k..] += u[i.., j.., k..] against a float64 accumulation.
TEST(CpuScatterAdd, MatchesReference) {
  std::mt19937 rng(81);
  forEachScatterAddCase([&](DType t, DType it, int64_t axis, const Shape &is) {
    const int64_t s = kShape[axis];
    const Shape us = gatherShape(kShape, is, axis);
    HostTensor idx = randomTensor(it, is, rng, static_cast<double>(-s), s - 1.0);
    HostTensor u = randomTensor(t, us, rng);
    HostTensor out = poisoned(t, kShape);
    ASSERT_OK(scatterAdd(u, idx, axis, out));
    std::vector<double> want(static_cast<size_t>(numElements(kShape)), 0.0);
    for (int64_t i = 0; i < u.numElements(); ++i) {
      const Shape ui = unravel(i, us);
      const Shape ii(ui.begin() + axis, ui.begin() + axis + is.size());
      int64_t v = static_cast<int64_t>(get(idx, is.empty() ? 0 : ravel(ii, is)));
      v = v < 0 ? v + s : v;
      Shape oi(ui.begin(), ui.begin() + axis);
      oi.push_back(v);
      oi.insert(oi.end(), ui.begin() + axis + is.size(), ui.end());
      want[ravel(oi, kShape)] += get(u, i);
    }
    expectClose(out, want, toleranceFor(t));
  });
}

// <gather(x), u> == <x, scatter_add(u)>.
TEST(CpuScatterAdd, AdjointOfGather) {
  std::mt19937 rng(82);
  forEachScatterAddCase([&](DType t, DType it, int64_t axis, const Shape &is) {
    const int64_t s = kShape[axis];
    const Shape us = gatherShape(kShape, is, axis);
    HostTensor x = randomTensor(t, kShape, rng);
    HostTensor idx = randomTensor(it, is, rng, static_cast<double>(-s), s - 1.0);
    HostTensor u = randomTensor(t, us, rng);
    HostTensor gx = poisoned(t, us), su = poisoned(t, kShape);
    ASSERT_OK(gather(x, idx, axis, gx));
    ASSERT_OK(scatterAdd(u, idx, axis, su));
    expectAdjoint(gx, u, x, su, adjointRtol(t));
  });
}

// The embedding gradient: ids with repeats and negatives, row 1 never hit.
TEST(CpuScatterAdd, EmbeddingGradient) {
  HostTensor ids = tensor(DType::I64, {2, 2}, {-1, 0, 2, -3});
  HostTensor dh = tensor(DType::F64, {2, 2, 2}, {1, 2, 10, 20, 100, 200, 1000, 2000});
  HostTensor dtable = poisoned(DType::F64, {3, 2});
  ASSERT_OK(scatterAdd(dh, ids, 0, dtable));
  expectEqual(dtable, {1010, 2020, 0, 0, 101, 202});
}

// Along a middle axis with i32 indices: out[i, idx[j], k] += u[i, j, k].
TEST(CpuScatterAdd, MiddleAxis) {
  HostTensor idx = tensor(DType::I32, {3}, {1, -2, 0});
  HostTensor u = tensor(DType::F32, {2, 3, 1}, {1, 2, 3, 4, 5, 6});
  HostTensor out = poisoned(DType::F32, {2, 2, 1});
  ASSERT_OK(scatterAdd(u, idx, 1, out));
  expectEqual(out, {5, 1, 11, 4});
}

// f32 sums are taken in double and rounded once: 1e8 + 1 - 1e8 is 1 (an f32
// running sum would give 0).
TEST(CpuScatterAdd, AccumulatesInDouble) {
  HostTensor idx = tensor(DType::I64, {3}, {0, 0, 0});
  HostTensor u = tensor(DType::F32, {3}, {1e8, 1, -1e8});
  HostTensor out = poisoned(DType::F32, {2});
  ASSERT_OK(scatterAdd(u, idx, 0, out));
  expectEqual(out, {1, 0});
}

// No indices (or no updates) leave out all zeros; a 0-D index drops a dim.
TEST(CpuScatterAdd, EmptyAndScalarIndices) {
  HostTensor none(DType::I64, {0});
  HostTensor u0(DType::F32, {0, 2});
  HostTensor out = poisoned(DType::F32, {3, 2});
  ASSERT_OK(scatterAdd(u0, none, 0, out));
  expectEqual(out, {0, 0, 0, 0, 0, 0});
  HostTensor scalar = tensor(DType::I32, {}, {-1});
  HostTensor u = tensor(DType::F64, {3}, {1, 2, 3});
  HostTensor out2 = poisoned(DType::F64, {3, 2});
  ASSERT_OK(scatterAdd(u, scalar, 1, out2));
  expectEqual(out2, {0, 1, 0, 2, 0, 3});
}

// Indices outside [-s, s) are OutOfRange errors naming index and position.
TEST(CpuScatterAdd, OutOfRange) {
  HostTensor u(DType::F32, {2, 2, 2});
  HostTensor out(DType::F32, {3, 2});
  HostTensor ids = tensor(DType::I32, {2, 2}, {0, 1, 3, 0});
  EXPECT_ERROR(scatterAdd(u, ids, 0, out), StatusCode::OutOfRange,
               "scatter_add: index 3 at position [1, 0] of indices i32[2, 2] is outside [-3, 3) "
               "(dimension 0 of out f32[3, 2])");
  HostTensor neg = tensor(DType::I64, {2, 2}, {0, -4, 5, 0});
  EXPECT_ERROR(scatterAdd(u, neg, 0, out), StatusCode::OutOfRange,
               "scatter_add: index -4 at position [0, 1] of indices i64[2, 2]");
}

TEST(CpuScatterAdd, Errors) {
  HostTensor ids(DType::I64, {4});
  HostTensor u(DType::F32, {4, 2});
  HostTensor out(DType::F32, {3, 2});
  HostTensor wrongShape(DType::F32, {3, 3});
  EXPECT_ERROR(scatterAdd(u, ids, 0, wrongShape), StatusCode::InvalidArgument,
               "scatter_add: updates is f32[4, 2], expected f32[4, 3] (gather of out f32[3, 3] "
               "along axis 0 by indices of shape [4])");
  HostTensor wrongDType(DType::F64, {3, 2});
  EXPECT_ERROR(scatterAdd(u, ids, 0, wrongDType), StatusCode::InvalidArgument,
               "scatter_add: out has dtype f64, expected f32 (the dtype of updates)");
  HostTensor intU(DType::I64, {4, 2});
  HostTensor intOut(DType::I64, {3, 2});
  EXPECT_ERROR(scatterAdd(intU, ids, 0, intOut), StatusCode::InvalidArgument,
               "scatter_add: updates has dtype i64, expected f32 or f64");
  HostTensor fids(DType::F32, {4});
  EXPECT_ERROR(scatterAdd(u, fids, 0, out), StatusCode::InvalidArgument,
               "scatter_add: indices has dtype f32, expected i64 or i32");
  EXPECT_ERROR(scatterAdd(u, ids, 2, out), StatusCode::InvalidArgument,
               "scatter_add: axis 2 is out of range, expected [0, 2)");
  EXPECT_ERROR(scatterAdd(u, ids, -1, out), StatusCode::InvalidArgument,
               "scatter_add: axis -1 is out of range, expected [0, 2)");
}

//===--- scatter_elements_add -----------------------------------------------===//

/// Runs fn(dtype, index dtype, axis, indices shape) over indices of shape
/// [3, 4, 2] with 6 along `axis` (more than out's dimension: repeats).
void forEachElementsCase(const std::function<void(DType, DType, int64_t, const Shape &)> &fn) {
  for (DType t : kFloatDTypes)
    for (DType it : kIndexDTypes)
      for (int64_t axis = 0; axis < 3; ++axis) {
        SCOPED_TRACE(std::string(base::dtypeName(t)) + " indices " + base::dtypeName(it) +
                     " axis " + std::to_string(axis));
        Shape is{3, 4, 2};
        is[axis] = 6;
        fn(t, it, axis, is);
      }
}

// out[p with p[axis] = idx[p]] += u[p] against a float64 accumulation; out is
// larger than the indices in the non-axis dims (those positions stay 0).
TEST(CpuScatterElementsAdd, MatchesReference) {
  std::mt19937 rng(83);
  forEachElementsCase([&](DType t, DType it, int64_t axis, const Shape &is) {
    const int64_t s = kShape[axis];
    HostTensor idx = randomTensor(it, is, rng, static_cast<double>(-s), s - 1.0);
    HostTensor u = randomTensor(t, is, rng);
    HostTensor out = poisoned(t, kShape);
    ASSERT_OK(scatterElementsAdd(u, idx, axis, out));
    std::vector<double> want(static_cast<size_t>(numElements(kShape)), 0.0);
    for (int64_t i = 0; i < u.numElements(); ++i) {
      Shape oi = unravel(i, is);
      const int64_t v = static_cast<int64_t>(get(idx, i));
      oi[axis] = v < 0 ? v + s : v;
      want[ravel(oi, kShape)] += get(u, i);
    }
    expectClose(out, want, toleranceFor(t));
  });
}

// <gather_elements(x), u> == <x, scatter_elements_add(u)>.
TEST(CpuScatterElementsAdd, AdjointOfGatherElements) {
  std::mt19937 rng(84);
  forEachElementsCase([&](DType t, DType it, int64_t axis, const Shape &is) {
    const int64_t s = kShape[axis];
    HostTensor x = randomTensor(t, kShape, rng);
    HostTensor idx = randomTensor(it, is, rng, static_cast<double>(-s), s - 1.0);
    HostTensor u = randomTensor(t, is, rng);
    HostTensor gx = poisoned(t, is), su = poisoned(t, kShape);
    ASSERT_OK(gatherElements(x, idx, axis, gx));
    ASSERT_OK(scatterElementsAdd(u, idx, axis, su));
    expectAdjoint(gx, u, x, su, adjointRtol(t));
  });
}

// The cross-entropy pattern: each row's label gets its upstream gradient.
TEST(CpuScatterElementsAdd, CrossEntropyGradient) {
  HostTensor labels = tensor(DType::I64, {2, 1}, {2, -3});
  HostTensor dp = tensor(DType::F64, {2, 1}, {0.5, -0.25});
  HostTensor dlogp = poisoned(DType::F64, {2, 3});
  ASSERT_OK(scatterElementsAdd(dp, labels, 1, dlogp));
  expectEqual(dlogp, {0, 0, 0.5, -0.25, 0, 0});
}

// Repeated and negative indices along axis 0 accumulate per column; column 2
// of out is beyond the indices' extent and stays 0.
TEST(CpuScatterElementsAdd, RepeatedIndices) {
  HostTensor idx = tensor(DType::I32, {3, 2}, {0, 1, -3, -1, 1, 1});
  HostTensor u = tensor(DType::F32, {3, 2}, {1, 2, 10, 20, 100, 200});
  HostTensor out = poisoned(DType::F32, {3, 3});
  ASSERT_OK(scatterElementsAdd(u, idx, 0, out));
  expectEqual(out, {11, 0, 0, 100, 202, 0, 0, 20, 0});
}

TEST(CpuScatterElementsAdd, Errors) {
  HostTensor u(DType::F32, {2, 1});
  HostTensor out(DType::F32, {2, 3});
  HostTensor bad = tensor(DType::I64, {2, 1}, {0, 3});
  EXPECT_ERROR(scatterElementsAdd(u, bad, 1, out), StatusCode::OutOfRange,
               "scatter_elements_add: index 3 at position [1, 0] of indices i64[2, 1] is outside "
               "[-3, 3) (dimension 1 of out f32[2, 3])");
  HostTensor neg = tensor(DType::I32, {2, 1}, {-4, 0});
  EXPECT_ERROR(scatterElementsAdd(u, neg, 1, out), StatusCode::OutOfRange,
               "index -4 at position [0, 0]");
  HostTensor idx(DType::I64, {2, 1});
  HostTensor otherShape(DType::I64, {2, 2});
  EXPECT_ERROR(scatterElementsAdd(u, otherShape, 1, out), StatusCode::InvalidArgument,
               "scatter_elements_add: indices have shape [2, 2], expected the shape of updates "
               "[2, 1]");
  HostTensor tooBig(DType::F32, {3, 1}), tooBigIdx(DType::I64, {3, 1});
  EXPECT_ERROR(scatterElementsAdd(tooBig, tooBigIdx, 1, out), StatusCode::InvalidArgument,
               "scatter_elements_add: updates of shape [3, 1] do not fit out f32[2, 3]: expected "
               "rank 2 and every dimension but 1 at most out's");
  HostTensor rank1(DType::F32, {2}), rank1Idx(DType::I64, {2});
  EXPECT_STATUS(scatterElementsAdd(rank1, rank1Idx, 0, out), StatusCode::InvalidArgument);
  HostTensor wrongOut(DType::F64, {2, 3});
  EXPECT_ERROR(scatterElementsAdd(u, idx, 1, wrongOut), StatusCode::InvalidArgument,
               "scatter_elements_add: out has dtype f64, expected f32 (the dtype of updates)");
  HostTensor intU(DType::I32, {2, 1}), intOut(DType::I32, {2, 3});
  EXPECT_ERROR(scatterElementsAdd(intU, idx, 1, intOut), StatusCode::InvalidArgument,
               "scatter_elements_add: updates has dtype i32, expected f32 or f64");
  HostTensor fidx(DType::F64, {2, 1});
  EXPECT_ERROR(scatterElementsAdd(u, fidx, 1, out), StatusCode::InvalidArgument,
               "scatter_elements_add: indices has dtype f64, expected i64 or i32");
  EXPECT_ERROR(scatterElementsAdd(u, idx, 2, out), StatusCode::InvalidArgument,
               "scatter_elements_add: axis 2 is out of range, expected [0, 2)");
}

//===--- slice_scatter ------------------------------------------------------===//

struct SliceCase {
  Shape axes, starts, ends, steps;
};

const Shape kSliceShape{5, 6, 7};
// The cases of CpuSlice.MatchesReference.
const SliceCase kSliceCases[] = {
    {{2}, {0}, {7}, {1}},                             // everything
    {{0, 2}, {1, 2}, {4, 7}, {1, 2}},                 // a window with a stride
    {{1}, {5}, {-1}, {-1}},                           // reversed (end = -1 runs to index 0)
    {{0, 1, 2}, {4, 5, 6}, {-1, 0, 1}, {-2, -3, -4}}, // reversed with strides
    {{1}, {3}, {3}, {1}},                             // empty
    {{2}, {6}, {6}, {-1}},                            // empty, negative step
    {{0}, {0}, {5}, {7}},                             // step beyond the dimension
};

/// Per dimension of kSliceShape, the indices the slice keeps, in order.
std::vector<Shape> keptIndices(const SliceCase &c) {
  std::vector<Shape> kept(kSliceShape.size());
  for (size_t d = 0; d < kSliceShape.size(); ++d)
    for (int64_t i = 0; i < kSliceShape[d]; ++i)
      kept[d].push_back(i);
  for (size_t i = 0; i < c.axes.size(); ++i) {
    Shape k;
    for (int64_t v = c.starts[i]; c.steps[i] > 0 ? v < c.ends[i] : v > c.ends[i]; v += c.steps[i])
      k.push_back(v);
    kept[c.axes[i]] = k;
  }
  return kept;
}

Shape sliceShape(const std::vector<Shape> &kept) {
  Shape shape;
  for (const Shape &k : kept)
    shape.push_back(static_cast<int64_t>(k.size()));
  return shape;
}

std::string describe(const SliceCase &c) {
  return "axes " + base::formatShape(c.axes) + " starts " + base::formatShape(c.starts) +
         " ends " + base::formatShape(c.ends) + " steps " + base::formatShape(c.steps);
}

// Every dtype, exactly: the sliced positions hold update, the rest 0.
TEST(CpuSliceScatter, MatchesReference) {
  std::mt19937 rng(85);
  for (DType t : kDTypes)
    for (const SliceCase &c : kSliceCases) {
      SCOPED_TRACE(std::string(base::dtypeName(t)) + " " + describe(c));
      const std::vector<Shape> kept = keptIndices(c);
      const Shape us = sliceShape(kept);
      HostTensor u = randomTensor(t, us, rng, -9, 9);
      HostTensor out = poisoned(t, kSliceShape);
      ASSERT_OK(sliceScatter(u, c.axes, c.starts, c.ends, c.steps, out));
      std::vector<double> want(static_cast<size_t>(numElements(kSliceShape)), 0.0);
      for (int64_t i = 0; i < u.numElements(); ++i) {
        Shape idx = unravel(i, us);
        for (size_t d = 0; d < idx.size(); ++d)
          idx[d] = kept[d][idx[d]];
        want[ravel(idx, kSliceShape)] = get(u, i);
      }
      expectEqual(out, want);
    }
}

// <slice(x), u> == <x, slice_scatter(u)> (non-empty slices).
TEST(CpuSliceScatter, AdjointOfSlice) {
  std::mt19937 rng(86);
  for (DType t : kFloatDTypes)
    for (const SliceCase &c : kSliceCases) {
      const Shape us = sliceShape(keptIndices(c));
      if (numElements(us) == 0)
        continue;
      SCOPED_TRACE(std::string(base::dtypeName(t)) + " " + describe(c));
      HostTensor x = randomTensor(t, kSliceShape, rng);
      HostTensor u = randomTensor(t, us, rng);
      HostTensor sx = poisoned(t, us), su = poisoned(t, kSliceShape);
      ASSERT_OK(slice(x, c.axes, c.starts, c.ends, c.steps, sx));
      ASSERT_OK(sliceScatter(u, c.axes, c.starts, c.ends, c.steps, su));
      expectAdjoint(sx, u, x, su, adjointRtol(t));
    }
}

// Hand-computed: x[::-1] and x[3:0:-2] of a length-6 vector, transposed.
TEST(CpuSliceScatter, NegativeSteps) {
  HostTensor u = tensor(DType::I64, {6}, {0, 1, 2, 3, 4, 5});
  HostTensor rev = poisoned(DType::I64, {6});
  ASSERT_OK(sliceScatter(u, {0}, {5}, {-1}, {-1}, rev));
  expectEqual(rev, {5, 4, 3, 2, 1, 0});
  HostTensor two = tensor(DType::I32, {2}, {7, 8});
  HostTensor out = poisoned(DType::I32, {6});
  ASSERT_OK(sliceScatter(two, {0}, {3}, {0}, {-2}, out));
  expectEqual(out, {0, 8, 0, 7, 0, 0});
  HostTensor mask = tensor(DType::I1, {2, 1}, {1, 1});
  HostTensor maskOut = poisoned(DType::I1, {2, 3});
  ASSERT_OK(sliceScatter(mask, {1}, {2}, {1}, {-1}, maskOut));
  expectEqual(maskOut, {0, 0, 1, 0, 0, 1});
}

TEST(CpuSliceScatter, Errors) {
  HostTensor u(DType::F32, {4, 3});
  HostTensor out(DType::F32, {4, 6});
  EXPECT_ERROR(sliceScatter(u, {1}, {0}, {6}, {0}, out), StatusCode::InvalidArgument,
               "slice_scatter: expected a non-zero step on axis 1");
  EXPECT_ERROR(sliceScatter(u, {1}, {0}, {7}, {2}, out), StatusCode::InvalidArgument,
               "slice_scatter: expected 0 <= start <= end <= 6 on axis 1 (step 2), got start 0 "
               "and end 7");
  EXPECT_ERROR(sliceScatter(u, {1}, {6}, {-1}, {-2}, out), StatusCode::InvalidArgument,
               "slice_scatter: expected -1 <= end <= start < 6 on axis 1 (step -2), got start 6 "
               "and end -1");
  EXPECT_ERROR(sliceScatter(u, {1}, {0}, {6}, {1}, out), StatusCode::InvalidArgument,
               "slice_scatter: update is f32[4, 3], expected f32[4, 6] (the slice of out "
               "f32[4, 6])");
  HostTensor wrongOut(DType::F32, {4, 5});
  EXPECT_ERROR(sliceScatter(u, {1}, {0}, {6}, {2}, wrongOut), StatusCode::InvalidArgument,
               "slice_scatter: expected 0 <= start <= end <= 5 on axis 1 (step 2), got start 0 "
               "and end 6");
  HostTensor wrongOut2(DType::F32, {4, 7});
  EXPECT_ERROR(sliceScatter(u, {1}, {0}, {7}, {2}, wrongOut2), StatusCode::InvalidArgument,
               "slice_scatter: update is f32[4, 3], expected f32[4, 4] (the slice of out "
               "f32[4, 7])");
  EXPECT_ERROR(sliceScatter(u, {1, 0}, {0, 0}, {6, 4}, {2, 1}, out), StatusCode::InvalidArgument,
               "slice_scatter: expected strictly increasing axes, got [1, 0]");
  EXPECT_ERROR(sliceScatter(u, {1}, {0, 1}, {6}, {2}, out), StatusCode::InvalidArgument,
               "slice_scatter: expected starts, ends and steps with one entry per axis (1), got "
               "2, 1 and 1");
  EXPECT_ERROR(sliceScatter(u, {2}, {0}, {1}, {1}, out), StatusCode::InvalidArgument,
               "slice_scatter: axis 2 is out of range, expected [0, 2)");
  HostTensor f64Out(DType::F64, {4, 6});
  EXPECT_ERROR(sliceScatter(u, {1}, {0}, {6}, {2}, f64Out), StatusCode::InvalidArgument,
               "slice_scatter: out has dtype f64, expected f32 (the dtype of update)");
  HostTensor half(DType::F16, {4, 3}), halfOut(DType::F16, {4, 6});
  EXPECT_ERROR(sliceScatter(half, {1}, {0}, {6}, {2}, halfOut), StatusCode::InvalidArgument,
               "slice_scatter: update has dtype f16, expected f32, f64, i64, i32 or i1");
}

//===--- determinism --------------------------------------------------------===//

//===--- scatter, scatter_elements (overwriting) -------------------------------===//

/// scatter's reference: data, then every update row in row-major order of the indices (a
/// repeated target keeps the last).
std::vector<double> refScatter(const HostTensor &data, const HostTensor &idx,
                               const HostTensor &updates, int64_t axis) {
  std::vector<double> out = values(data);
  const Shape &ds = data.shape(), &us = updates.shape();
  const int64_t size = ds[axis];
  for (int64_t u = 0; u < updates.numElements(); ++u) {
    Shape ui = unravel(u, us), oi(ds.size());
    Shape ji(ui.begin() + axis, ui.begin() + axis + idx.rank());
    int64_t t = static_cast<int64_t>(get(idx, ravel(ji, idx.shape())));
    for (int64_t d = 0; d < axis; ++d)
      oi[d] = ui[d];
    oi[axis] = t < 0 ? t + size : t;
    for (size_t d = axis + 1; d < ds.size(); ++d)
      oi[d] = ui[d + idx.rank() - 1];
    out[ravel(oi, ds)] = get(updates, u);
  }
  return out;
}

/// scatter_elements' reference: data, then updates[p] at p with p[axis] = indices[p], in
/// row-major order of the positions p (the later wins).
std::vector<double> refScatterElements(const HostTensor &data, const HostTensor &idx,
                                       const HostTensor &updates, int64_t axis) {
  std::vector<double> out = values(data);
  for (int64_t p = 0; p < updates.numElements(); ++p) {
    Shape pi = unravel(p, updates.shape());
    int64_t t = static_cast<int64_t>(get(idx, p));
    pi[axis] = t < 0 ? t + data.dim(axis) : t;
    out[ravel(pi, data.shape())] = get(updates, p);
  }
  return out;
}

// Every dtype, both index dtypes, random (repeated, negative) indices on each axis.
TEST(CpuScatterOverwrite, MatchesReference) {
  std::mt19937 rng(41);
  const struct {
    Shape data, indices;
    int64_t axis;
  } cases[] = {{{6, 3}, {4}, 0}, {{2, 5, 3}, {2, 3}, 1}, {{4, 3}, {5}, 1}, {{5}, {}, 0}};
  for (DType t : kDTypes)
    for (DType it : kIndexDTypes)
      for (const auto &c : cases) {
        SCOPED_TRACE(std::string(base::dtypeName(t)) + base::formatShape(c.data));
        HostTensor data = randomTensor(t, c.data, rng);
        const double size = static_cast<double>(c.data[c.axis]);
        HostTensor idx = randomTensor(it, c.indices, rng, -size, size - 1);
        HostTensor updates = randomTensor(t, gatherShape(c.data, c.indices, c.axis), rng);
        HostTensor out = poisoned(t, c.data);
        ASSERT_OK(scatter(data, idx, updates, c.axis, out));
        expectEqual(out, refScatter(data, idx, updates, c.axis));
        // scatter_elements with indices of the data's rank, smaller but along the axis.
        Shape es = c.data;
        es[c.axis] += 2;
        for (size_t d = 0; d < es.size(); ++d)
          if (static_cast<int64_t>(d) != c.axis && es[d] > 1)
            --es[d];
        HostTensor eidx = randomTensor(it, es, rng, -size, size - 1);
        HostTensor eupd = randomTensor(t, es, rng);
        HostTensor eout = poisoned(t, c.data);
        ASSERT_OK(scatterElements(data, eidx, eupd, c.axis, eout));
        expectEqual(eout, refScatterElements(data, eidx, eupd, c.axis));
      }
}

// A router's dense mask: top-k weights scattered into zeros; a repeated target keeps the
// later update; data may be the output's own buffer (in place).
TEST(CpuScatterOverwrite, HandComputed) {
  HostTensor zeros = tensor(DType::F32, {2, 4}, {0, 0, 0, 0, 0, 0, 0, 0});
  HostTensor top = tensor(DType::I64, {2, 2}, {3, 1, 0, -4});
  HostTensor w = tensor(DType::F32, {2, 2}, {0.75, 0.25, 0.5, 0.125});
  HostTensor out = poisoned(DType::F32, {2, 4});
  ASSERT_OK(scatterElements(zeros, top, w, 1, out));
  expectEqual(out, {0, 0.25, 0, 0.75, 0.125, 0, 0, 0});
  HostTensor rows = tensor(DType::I32, {3}, {2, 0, 2});
  HostTensor upd = tensor(DType::I64, {3, 2}, {1, 2, 3, 4, 5, 6});
  HostTensor data = tensor(DType::I64, {4, 2}, {9, 9, 9, 9, 9, 9, 9, 9});
  ASSERT_OK(scatter(data, rows, upd, 0, data));
  expectEqual(data, {3, 4, 9, 9, 5, 6, 9, 9});
}

TEST(CpuScatterOverwrite, Errors) {
  HostTensor data(DType::F32, {3, 2}), out(DType::F32, {3, 2});
  HostTensor idx = tensor(DType::I64, {2}, {0, 3});
  HostTensor upd(DType::F32, {2, 2});
  EXPECT_ERROR(scatter(data, idx, upd, 0, out), StatusCode::OutOfRange,
               "scatter: index 3 at position [1] of indices i64[2] is outside [-3, 3)");
  HostTensor badUpd(DType::F32, {3, 2});
  EXPECT_ERROR(scatter(data, idx, badUpd, 0, out), StatusCode::InvalidArgument,
               "scatter: updates is f32[3, 2], expected f32[2, 2] (gather of data f32[3, 2] "
               "along axis 0 by indices of shape [2])");
  HostTensor intUpd(DType::I64, {2, 2});
  EXPECT_ERROR(scatter(data, idx, intUpd, 0, out), StatusCode::InvalidArgument,
               "scatter: updates has dtype i64, expected f32 (the dtype of data)");
  HostTensor wrongOut(DType::F32, {2, 2});
  EXPECT_ERROR(scatter(data, tensor(DType::I64, {2}, {0, 1}), upd, 0, wrongOut),
               StatusCode::InvalidArgument, "scatter: out is f32[2, 2], expected f32[3, 2]");
  HostTensor eidx = tensor(DType::I64, {3, 1}, {0, 1, 0}), eupd(DType::F32, {2, 1});
  EXPECT_ERROR(scatterElements(data, eidx, eupd, 1, out), StatusCode::InvalidArgument,
               "scatter_elements: indices have shape [3, 1], expected the shape of updates "
               "[2, 1]");
  HostTensor big = tensor(DType::I64, {4, 1}, {0, 1, 0, 1}), bigUpd(DType::F32, {4, 1});
  EXPECT_ERROR(scatterElements(data, big, bigUpd, 1, out), StatusCode::InvalidArgument,
               "scatter_elements: updates of shape [4, 1] do not fit data f32[3, 2]: expected "
               "rank 2 and every dimension but 1 at most data's");
  EXPECT_ERROR(scatterElements(data, eidx, bigUpd, 2, out), StatusCode::InvalidArgument,
               "scatter_elements: axis 2 is out of range, expected [0, 2)");
}

/// Runs `kernel` into a fresh poisoned `out` with 1 and with 4 OpenMP threads
/// and expects identical bytes.
void expectThreadIndependent(const char *what,
                             const std::function<base::Status(HostTensor &)> &kernel,
                             DType dtype, const Shape &shape) {
  SCOPED_TRACE(what);
  const int threads = omp_get_max_threads();
  HostTensor serial = poisoned(dtype, shape), parallel = poisoned(dtype, shape);
  omp_set_num_threads(1);
  const base::Status s1 = kernel(serial);
  omp_set_num_threads(4);
  const base::Status s4 = kernel(parallel);
  omp_set_num_threads(threads);
  ASSERT_TRUE(s1.ok()) << s1.toString();
  ASSERT_TRUE(s4.ok()) << s4.toString();
  ASSERT_EQ(serial.byteSize(), parallel.byteSize());
  EXPECT_EQ(std::memcmp(serial.raw(), parallel.raw(), serial.byteSize()), 0);
}

// Inputs past kParallelMinElements (2^15) with many repeated indices.
TEST(CpuScatter, ThreadCountDoesNotChangeResults) {
  std::mt19937 rng(87);
  for (DType t : kFloatDTypes) {
    SCOPED_TRACE(base::dtypeName(t));
    // Embedding gradient: 8x256 ids into 100 rows of 64.
    HostTensor ids = randomTensor(DType::I64, {8, 256}, rng, -100, 99);
    HostTensor dh = randomTensor(t, {8, 256, 64}, rng);
    expectThreadIndependent("scatter_add axis 0",
                            [&](HostTensor &o) { return scatterAdd(dh, ids, 0, o); }, t, {100, 64});
    // A middle axis: 300 indices into 50 positions, outer 16, inner 8.
    HostTensor mid = randomTensor(DType::I32, {300}, rng, -50, 49);
    HostTensor um = randomTensor(t, {16, 300, 8}, rng);
    expectThreadIndependent("scatter_add axis 1",
                            [&](HostTensor &o) { return scatterAdd(um, mid, 1, o); }, t,
                            {16, 50, 8});
    // gather_elements transposed along each axis of a [64, 700] out.
    for (int64_t axis = 0; axis < 2; ++axis) {
      const Shape is = axis == 0 ? Shape{200, 300} : Shape{60, 900};
      const int64_t s = axis == 0 ? 64 : 700;
      HostTensor idx = randomTensor(DType::I64, is, rng, static_cast<double>(-s), s - 1.0);
      HostTensor ue = randomTensor(t, is, rng);
      expectThreadIndependent("scatter_elements_add",
                              [&](HostTensor &o) { return scatterElementsAdd(ue, idx, axis, o); },
                              t, {64, 700});
    }
    HostTensor rows = randomTensor(DType::I64, {300}, rng, -50, 49);
    HostTensor dataS = randomTensor(t, {16, 50, 64}, rng);
    HostTensor updS = randomTensor(t, {16, 300, 64}, rng);
    expectThreadIndependent("scatter",
                            [&](HostTensor &o) { return scatter(dataS, rows, updS, 1, o); }, t,
                            {16, 50, 64});
    HostTensor eidx = randomTensor(DType::I64, {60, 900}, rng, -700, 699);
    HostTensor edata = randomTensor(t, {64, 700}, rng), eupd = randomTensor(t, {60, 900}, rng);
    expectThreadIndependent(
        "scatter_elements",
        [&](HostTensor &o) { return scatterElements(edata, eidx, eupd, 1, o); }, t, {64, 700});
    HostTensor us = randomTensor(t, {64, 20, 40}, rng);
    expectThreadIndependent("slice_scatter",
                            [&](HostTensor &o) {
                              return sliceScatter(us, {1, 2}, {39, 1}, {-1, 81}, {-2, 2}, o);
                            },
                            t, {64, 40, 81});
  }
}

} // namespace
} // namespace rp::kernels::cpu::test
