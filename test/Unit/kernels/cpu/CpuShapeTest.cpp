//===- CpuShapeTest.cpp - transpose, expand, concat, slice, split, reshape ===//
//
// Data movement is exact: every element is compared with a naive index
// reference, in every kernel dtype (f32, f64, i64, i32, i1).
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Shape.h"
#include "test/Unit/kernels/KernelTestUtil.h"

namespace rp::kernels::cpu::test {
namespace {

const DType kDTypes[] = {DType::F32, DType::F64, DType::I64, DType::I32, DType::I1};

// Transposes of a rank-4 tensor, every dtype, plus a large one.
TEST(CpuTranspose, MatchesReference) {
  std::mt19937 rng(61);
  const std::vector<Shape> perms = {{0, 1, 2, 3}, {0, 2, 1, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}};
  for (DType t : kDTypes)
    for (const Shape &shape : {Shape{2, 3, 4, 5}, Shape{8, 64, 4, 32}})
      for (const Shape &perm : perms) {
        SCOPED_TRACE(std::string(base::dtypeName(t)) + " perm " + base::formatShape(perm));
        HostTensor x = randomTensor(t, shape, rng, -100, 100);
        Shape outShape;
        for (int64_t p : perm)
          outShape.push_back(shape[p]);
        HostTensor out = poisoned(t, outShape);
        ASSERT_OK(transpose(x, perm, out));
        std::vector<double> want;
        for (int64_t i = 0; i < out.numElements(); ++i) {
          const Shape oi = unravel(i, outShape);
          Shape xi(shape.size());
          for (size_t d = 0; d < perm.size(); ++d)
            xi[perm[d]] = oi[d];
          want.push_back(get(x, ravel(xi, shape)));
        }
        expectEqual(out, want);
      }
}

TEST(CpuTranspose, Errors) {
  HostTensor x(DType::F32, {2, 3});
  HostTensor out(DType::F32, {3, 2});
  EXPECT_ERROR(transpose(x, {0, 0}, out), StatusCode::InvalidArgument,
               "transpose: expected a permutation of [0, 2), got [0, 0]");
  EXPECT_ERROR(transpose(x, {1, 0, 2}, out), StatusCode::InvalidArgument,
               "transpose: expected a permutation of [0, 2), got [1, 0, 2]");
  EXPECT_ERROR(transpose(x, {0, 1}, out), StatusCode::InvalidArgument,
               "transpose: out is f32[3, 2], expected f32[2, 3]");
}

// expand broadcasts like numpy.broadcast_to.
TEST(CpuExpand, MatchesReference) {
  std::mt19937 rng(62);
  const std::pair<Shape, Shape> cases[] = {
      {{1, 1, 8, 8}, {2, 4, 8, 8}}, {{3}, {2, 3}},    {{}, {4}},
      {{4, 1}, {2, 4, 5}},          {{2, 3}, {2, 3}}, {{1, 64}, {1024, 64}}};
  for (DType t : kDTypes)
    for (const auto &[in, to] : cases) {
      HostTensor x = randomTensor(t, in, rng, -9, 9);
      HostTensor out = poisoned(t, to);
      ASSERT_OK(expand(x, out));
      std::vector<double> want;
      for (int64_t i = 0; i < out.numElements(); ++i)
        want.push_back(get(x, broadcastSource(unravel(i, to), in)));
      expectEqual(out, want);
    }
  HostTensor x(DType::F32, {3});
  HostTensor bad(DType::F32, {2, 4});
  EXPECT_ERROR(expand(x, bad), StatusCode::InvalidArgument,
               "expand: x of shape [3] does not broadcast to [2, 4]");
  HostTensor wrongType(DType::I32, {2, 3});
  EXPECT_ERROR(expand(x, wrongType), StatusCode::InvalidArgument,
               "expand: out is i32[2, 3], expected f32[2, 3]");
}

// concat along each axis of three inputs of different sizes.
TEST(CpuConcat, MatchesReference) {
  std::mt19937 rng(63);
  for (DType t : kDTypes)
    for (int64_t axis = 0; axis < 3; ++axis) {
      Shape base{2, 3, 4};
      std::vector<HostTensor> ins;
      Shape outShape = base;
      outShape[axis] = 0;
      for (int64_t size : {1, 3, 2}) {
        Shape s = base;
        s[axis] = size;
        ins.push_back(randomTensor(t, s, rng, -9, 9));
        outShape[axis] += size;
      }
      HostTensor out = poisoned(t, outShape);
      ASSERT_OK(concat({&ins[0], &ins[1], &ins[2]}, axis, out));
      std::vector<double> want;
      for (int64_t i = 0; i < out.numElements(); ++i) {
        Shape idx = unravel(i, outShape);
        size_t k = 0;
        while (idx[axis] >= ins[k].dim(axis))
          idx[axis] -= ins[k++].dim(axis);
        want.push_back(get(ins[k], ravel(idx, ins[k].shape())));
      }
      expectEqual(out, want);
    }
  // Hand-computed, with an empty piece.
  HostTensor a = tensor(DType::I64, {2, 1}, {1, 2});
  HostTensor e(DType::I64, {2, 0});
  HostTensor b = tensor(DType::I64, {2, 2}, {3, 4, 5, 6});
  HostTensor out = poisoned(DType::I64, {2, 3});
  ASSERT_OK(concat({&a, &e, &b}, 1, out));
  expectEqual(out, {1, 3, 4, 2, 5, 6});
}

TEST(CpuConcat, Errors) {
  HostTensor a(DType::F32, {2, 3});
  HostTensor b(DType::F32, {3, 3});
  HostTensor out(DType::F32, {2, 6});
  EXPECT_ERROR(concat({&a, &b}, 1, out), StatusCode::InvalidArgument,
               "concat: input 1 has shape [3, 3], expected [2, 3] except in dimension 1");
  HostTensor c(DType::I32, {2, 3});
  EXPECT_ERROR(concat({&a, &c}, 1, out), StatusCode::InvalidArgument,
               "concat: input 1 has dtype i32, expected f32 (the dtype of input 0)");
  EXPECT_ERROR(concat({&a, &a}, 0, out), StatusCode::InvalidArgument,
               "concat: out is f32[2, 6], expected f32[4, 3]");
  EXPECT_ERROR(concat({&a}, 2, out), StatusCode::InvalidArgument,
               "concat: axis 2 is out of range, expected [0, 2)");
  EXPECT_ERROR(concat({}, 0, out), StatusCode::InvalidArgument,
               "concat: expected at least one input");
}

// Strided slices with positive and negative steps on several axes.
TEST(CpuSlice, MatchesReference) {
  std::mt19937 rng(64);
  struct Case {
    Shape axes, starts, ends, steps;
  };
  const Shape shape{5, 6, 7};
  const Case cases[] = {
      {{2}, {0}, {7}, {1}},                             // everything
      {{0, 2}, {1, 2}, {4, 7}, {1, 2}},                 // a window with a stride
      {{1}, {5}, {-1}, {-1}},                           // reversed (end = -1 runs to index 0)
      {{0, 1, 2}, {4, 5, 6}, {-1, 0, 1}, {-2, -3, -4}}, // reversed with strides
      {{1}, {3}, {3}, {1}},                             // empty
      {{2}, {6}, {6}, {-1}},                            // empty, negative step
      {{0}, {0}, {5}, {7}},                             // step beyond the dimension
  };
  for (DType t : kDTypes)
    for (const Case &c : cases) {
      SCOPED_TRACE(std::string(base::dtypeName(t)) + " axes " + base::formatShape(c.axes) +
                   " starts " + base::formatShape(c.starts) + " steps " +
                   base::formatShape(c.steps));
      HostTensor x = randomTensor(t, shape, rng, -9, 9);
      // Reference: per dimension, the list of kept indices.
      std::vector<Shape> kept(shape.size());
      for (size_t d = 0; d < shape.size(); ++d)
        for (int64_t i = 0; i < shape[d]; ++i)
          kept[d].push_back(i);
      for (size_t i = 0; i < c.axes.size(); ++i) {
        Shape k;
        for (int64_t v = c.starts[i]; c.steps[i] > 0 ? v < c.ends[i] : v > c.ends[i];
             v += c.steps[i])
          k.push_back(v);
        kept[c.axes[i]] = k;
      }
      Shape outShape;
      for (const Shape &k : kept)
        outShape.push_back(static_cast<int64_t>(k.size()));
      HostTensor out = poisoned(t, outShape);
      ASSERT_OK(slice(x, c.axes, c.starts, c.ends, c.steps, out));
      std::vector<double> want;
      for (int64_t i = 0; i < out.numElements(); ++i) {
        Shape idx = unravel(i, outShape);
        for (size_t d = 0; d < idx.size(); ++d)
          idx[d] = kept[d][idx[d]];
        want.push_back(get(x, ravel(idx, shape)));
      }
      expectEqual(out, want);
    }
}

// Hand-computed negative steps: x[::-1] and x[3:0:-2] of [0..5].
TEST(CpuSlice, NegativeSteps) {
  HostTensor x = tensor(DType::I32, {6}, {0, 1, 2, 3, 4, 5});
  HostTensor rev = poisoned(DType::I32, {6});
  ASSERT_OK(slice(x, {0}, {5}, {-1}, {-1}, rev));
  expectEqual(rev, {5, 4, 3, 2, 1, 0});
  HostTensor two = poisoned(DType::I32, {2});
  ASSERT_OK(slice(x, {0}, {3}, {0}, {-2}, two));
  expectEqual(two, {3, 1});
}

TEST(CpuSlice, Errors) {
  HostTensor x(DType::F32, {4, 6});
  HostTensor out(DType::F32, {4, 3});
  EXPECT_ERROR(slice(x, {1}, {0}, {6}, {0}, out), StatusCode::InvalidArgument,
               "slice: expected a non-zero step on axis 1");
  EXPECT_ERROR(slice(x, {1}, {0}, {7}, {2}, out), StatusCode::InvalidArgument,
               "slice: expected 0 <= start <= end <= 6 on axis 1 (step 2), got start 0 and end 7");
  EXPECT_ERROR(
      slice(x, {1}, {6}, {-1}, {-2}, out), StatusCode::InvalidArgument,
      "slice: expected -1 <= end <= start < 6 on axis 1 (step -2), got start 6 and end -1");
  EXPECT_ERROR(slice(x, {1}, {0}, {6}, {1}, out), StatusCode::InvalidArgument,
               "slice: out is f32[4, 3], expected f32[4, 6]");
  EXPECT_ERROR(slice(x, {1, 0}, {0, 0}, {6, 4}, {2, 1}, out), StatusCode::InvalidArgument,
               "slice: expected strictly increasing axes, got [1, 0]");
  EXPECT_ERROR(
      slice(x, {1}, {0, 1}, {6}, {2}, out), StatusCode::InvalidArgument,
      "slice: expected starts, ends and steps with one entry per axis (1), got 2, 1 and 1");
}

// split into uneven pieces along each axis; errors for bad pieces.
TEST(CpuSplit, MatchesReferenceAndChecks) {
  std::mt19937 rng(65);
  for (DType t : kDTypes)
    for (int64_t axis = 0; axis < 3; ++axis) {
      const Shape shape{4, 6, 5};
      HostTensor x = randomTensor(t, shape, rng, -9, 9);
      const Shape sizes = axis == 0 ? Shape{1, 3} : axis == 1 ? Shape{2, 1, 3} : Shape{5};
      std::vector<HostTensor> outs;
      for (int64_t s : sizes) {
        Shape os = shape;
        os[axis] = s;
        outs.push_back(poisoned(t, os));
      }
      std::vector<HostTensor *> ptrs;
      for (HostTensor &o : outs)
        ptrs.push_back(&o);
      ASSERT_OK(split(x, axis, ptrs));
      int64_t at = 0;
      for (HostTensor &o : outs) {
        std::vector<double> want;
        for (int64_t i = 0; i < o.numElements(); ++i) {
          Shape idx = unravel(i, o.shape());
          idx[axis] += at;
          want.push_back(get(x, ravel(idx, shape)));
        }
        expectEqual(o, want);
        at += o.dim(axis);
      }
    }
  HostTensor x(DType::F32, {4, 6});
  HostTensor a(DType::F32, {4, 2}), b(DType::F32, {4, 3}), c(DType::F32, {3, 4});
  HostTensor z(DType::F32, {4, 0}), d(DType::F64, {4, 4});
  EXPECT_ERROR(split(x, 1, {&a, &b}), StatusCode::InvalidArgument,
               "split: the outputs' sizes along axis 1 (2, 3) sum to 5, expected 6");
  EXPECT_ERROR(split(x, 1, {&a, &c}), StatusCode::InvalidArgument,
               "split: out 1 is f32[3, 4], expected f32[4, 4]");
  EXPECT_ERROR(split(x, 1, {&a, &d}), StatusCode::InvalidArgument,
               "split: out 1 is f64[4, 4], expected f32[4, 4]");
  EXPECT_ERROR(split(x, 1, {&z, &a}), StatusCode::InvalidArgument,
               "split: out 0 is f32[4, 0], expected a positive size along axis 1");
  EXPECT_ERROR(split(x, 2, {&a}), StatusCode::InvalidArgument,
               "split: axis 2 is out of range, expected [0, 2)");
}

// copyInto (graph.reshape) copies bytes between equal element counts.
TEST(CpuCopyInto, Reshape) {
  std::mt19937 rng(66);
  for (DType t : kDTypes) {
    HostTensor x = randomTensor(t, {2, 3, 4}, rng, -9, 9);
    HostTensor out = poisoned(t, {6, 4});
    ASSERT_OK(copyInto(x, out));
    expectEqual(out, values(x));
  }
  HostTensor x(DType::F32, {2, 3});
  HostTensor bad(DType::F32, {7});
  EXPECT_ERROR(
      copyInto(x, bad), StatusCode::InvalidArgument,
      "reshape: out is f32[7] (7 elements), expected f32 with 6 elements (x is f32[2, 3])");
  HostTensor badType(DType::I32, {6});
  EXPECT_STATUS(copyInto(x, badType), StatusCode::InvalidArgument);
}

} // namespace
} // namespace rp::kernels::cpu::test
