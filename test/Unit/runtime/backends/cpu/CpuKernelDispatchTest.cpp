//===- CpuKernelDispatchTest.cpp - Plan instructions onto the CPU kernels -===//
//
// CpuKernel (runtime/backends/cpu/KernelDispatch.h): hand-built instructions, decoded and run
// on HostTensor views into one byte arena (as the CPU backend runs them), must give results
// bitwise equal to calling the cpu:: kernel directly on the same inputs with the attributes
// spelled out. Then the decode errors (full messages), the run-time errors, and a check that
// every id of the kernel registry decodes or is listed as deliberately not on the CPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/KernelDispatch.h"

#include "kernels/Quantization.h"
#include "kernels/Registry.h"
#include "kernels/cpu/Kernels.h"
#include "runtime/plan/PlanValidator.h"
#include "runtime/plan/plan.pb.h"
#include "test/Unit/kernels/KernelTestUtil.h"
#include "test/Unit/support/PlanTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace rp::runtime {
namespace {

namespace cpu = rp::kernels::cpu;
namespace kt = rp::kernels::cpu::test;
namespace pb = rp::plan;
using rp::testing::setFloat;
using rp::testing::setInt;
using rp::testing::setInts;
using rp::testing::setString;
using Shape = std::vector<int64_t>;

pb::DType planDType(DType t) {
  switch (t) {
  case DType::F32:
    return pb::F32;
  case DType::F16:
    return pb::F16;
  case DType::BF16:
    return pb::BF16;
  case DType::I64:
    return pb::I64;
  case DType::I32:
    return pb::I32;
  case DType::I1:
    return pb::I1;
  case DType::U8:
    return pb::U8;
  case DType::F64:
    break;
  }
  ADD_FAILURE() << "no plan dtype for " << dtypeName(t);
  return pb::DTYPE_UNSPECIFIED;
}

struct Ty {
  DType dtype;
  Shape shape;
};

/// An instruction `kernel` with WORKSPACE buffer references of the given types (decoding looks
/// at the types only) at location "test.onnx:<kernel>".
pb::Instruction instr(const std::string &kernel, const std::vector<Ty> &operands,
                      const std::vector<Ty> &results) {
  pb::Instruction ins;
  ins.set_kernel(kernel);
  ins.set_location("test.onnx:" + kernel);
  int64_t offset = 0;
  auto add = [&](pb::BufferRef *ref, const Ty &t) {
    ref->set_space(pb::BufferRef::WORKSPACE);
    ref->set_offset(offset);
    offset += 256;
    *ref->mutable_type() = rp::testing::tensorType(planDType(t.dtype), t.shape);
  };
  for (const Ty &t : operands)
    add(ins.add_operands(), t);
  for (const Ty &t : results)
    add(ins.add_results(), t);
  return ins;
}

void setBool(pb::Instruction *ins, const std::string &name, bool v) {
  (*ins->mutable_attrs())[name].set_b(v);
}

/// The same kernel called directly: inputs, preallocated outputs.
using Direct = std::function<Status(const std::vector<const HostTensor *> &,
                                    const std::vector<HostTensor *> &)>;

/// Decodes `ins`, runs it on views into one arena holding copies of `inputs` (each buffer
/// aligned to its element size only, results poisoned with 0xAB), runs `direct` on owning
/// tensors (poisoned the same way), and expects every result bitwise equal.
void expectMatchesDirect(const pb::Instruction &ins, const std::vector<HostTensor> &inputs,
                         const Direct &direct) {
  SCOPED_TRACE("kernel " + ins.kernel());
  StatusOr<CpuKernel> kernel = CpuKernel::decode(ins);
  ASSERT_TRUE(kernel.ok()) << kernel.status().toString();
  EXPECT_EQ(kernel->id(), ins.kernel());
  ASSERT_EQ(inputs.size(), static_cast<size_t>(ins.operands_size()));

  std::vector<Ty> resultTypes;
  for (const pb::BufferRef &r : ins.results()) {
    std::optional<DType> dtype = fromPlanDType(r.type().dtype());
    ASSERT_TRUE(dtype.has_value());
    resultTypes.push_back({*dtype, Shape(r.type().shape().begin(), r.type().shape().end())});
  }

  // Lay the buffers out back to back, 4 bytes past a 64-byte boundary to start with.
  std::vector<size_t> offsets;
  size_t end = 4;
  auto place = [&](DType dtype, size_t bytes) {
    const size_t align = dtypeSize(dtype);
    end = (end + align - 1) / align * align;
    offsets.push_back(end);
    end += bytes;
  };
  for (const HostTensor &t : inputs)
    place(t.dtype(), t.byteSize());
  std::vector<HostTensor> expected;
  for (const Ty &t : resultTypes) {
    expected.emplace_back(t.dtype, t.shape);
    std::memset(expected.back().raw(), 0xAB, expected.back().byteSize());
    place(t.dtype, expected.back().byteSize());
  }
  std::vector<uint64_t> storage((end + 64 + 7) / 8);
  unsigned char *arena = reinterpret_cast<unsigned char *>(storage.data());
  arena += (64 - reinterpret_cast<uintptr_t>(arena) % 64) % 64;

  std::vector<HostTensor> views;
  for (size_t j = 0; j < inputs.size(); ++j) {
    std::memcpy(arena + offsets[j], inputs[j].raw(), inputs[j].byteSize());
    views.push_back(HostTensor::view(inputs[j].dtype(), inputs[j].shape(), arena + offsets[j]));
  }
  for (size_t j = 0; j < resultTypes.size(); ++j) {
    unsigned char *at = arena + offsets[inputs.size() + j];
    std::memset(at, 0xAB, expected[j].byteSize());
    views.push_back(HostTensor::view(resultTypes[j].dtype, resultTypes[j].shape, at));
  }
  std::vector<const HostTensor *> operands;
  for (size_t j = 0; j < inputs.size(); ++j)
    operands.push_back(&views[j]);
  std::vector<HostTensor *> results;
  for (size_t j = 0; j < resultTypes.size(); ++j)
    results.push_back(&views[inputs.size() + j]);
  ASSERT_OK(kernel->run(operands, results));

  std::vector<const HostTensor *> directIn;
  for (const HostTensor &t : inputs)
    directIn.push_back(&t);
  std::vector<HostTensor *> directOut;
  for (HostTensor &t : expected)
    directOut.push_back(&t);
  ASSERT_OK(direct(directIn, directOut));

  for (size_t j = 0; j < expected.size(); ++j) {
    SCOPED_TRACE("result " + std::to_string(j));
    ASSERT_EQ(results[j]->raw(), arena + offsets[inputs.size() + j]) << "result reallocated";
    EXPECT_EQ(std::memcmp(results[j]->raw(), expected[j].raw(), expected[j].byteSize()), 0)
        << "got " << ::testing::PrintToString(kt::values(*results[j])) << ", direct call gave "
        << ::testing::PrintToString(kt::values(expected[j]));
    // Both calls wrote every byte (nothing is left of the 0xAB poison).
    const auto *bytes = static_cast<const unsigned char *>(results[j]->raw());
    EXPECT_FALSE(expected[j].byteSize() > 0 &&
                 std::all_of(bytes, bytes + expected[j].byteSize(),
                             [](unsigned char b) { return b == 0xAB; }))
        << "result left unwritten";
  }
  // The operands are left alone.
  for (size_t j = 0; j < inputs.size(); ++j)
    EXPECT_EQ(std::memcmp(arena + offsets[j], inputs[j].raw(), inputs[j].byteSize()), 0)
        << "operand " << j << " was written";
}

/// Random operands of the instruction's types (floats in [-2, 2), integers in [0, 3]).
std::vector<HostTensor> randomInputs(const std::vector<Ty> &types, std::mt19937 &rng) {
  std::vector<HostTensor> out;
  for (const Ty &t : types)
    out.push_back(kt::randomTensor(t.dtype, t.shape, rng, t.dtype == DType::F32 ? -2.0 : 0.0,
                                   t.dtype == DType::F32 ? 2.0 : 3.0));
  return out;
}

constexpr DType F32 = DType::F32, I64 = DType::I64, I32 = DType::I32, I1 = DType::I1;

//===--- decoded instructions give the direct call's bits --------------------===//

// matmul with a batched lhs and an unbatched rhs.
TEST(CpuKernelDispatch, MatMul) {
  std::mt19937 rng(1);
  std::vector<Ty> in = {{F32, {2, 3, 4}}, {F32, {4, 5}}};
  expectMatchesDirect(instr("matmul", in, {{F32, {2, 3, 5}}}), randomInputs(in, rng),
                      [](auto &i, auto &o) { return cpu::matmul(*i[0], *i[1], *o[0]); });
}

// matmul's transpose_a / transpose_b attributes reach the kernel: a [2, 4, 3] read as
// [2, 3, 4], b [5, 4] read as [4, 5].
TEST(CpuKernelDispatch, MatMulTransposedOperands) {
  std::mt19937 rng(3);
  std::vector<Ty> in = {{F32, {2, 4, 3}}, {F32, {5, 4}}};
  pb::Instruction ins = instr("matmul", in, {{F32, {2, 3, 5}}});
  setBool(&ins, "transpose_a", true);
  setBool(&ins, "transpose_b", true);
  expectMatchesDirect(ins, randomInputs(in, rng), [](auto &i, auto &o) {
    return cpu::matmul(*i[0], *i[1], true, true, *o[0]);
  });
}

// add broadcasting [2, 1, 4] with [3, 1].
TEST(CpuKernelDispatch, AddBroadcasts) {
  std::mt19937 rng(2);
  std::vector<Ty> in = {{F32, {2, 1, 4}}, {F32, {3, 1}}};
  expectMatchesDirect(
      instr("add", in, {{F32, {2, 3, 4}}}), randomInputs(in, rng),
      [](auto &i, auto &o) { return cpu::binary(cpu::BinaryKind::Add, *i[0], *i[1], *o[0]); });
}

// Integer arithmetic and the unary ops go through the same tables.
TEST(CpuKernelDispatch, IntegerMulAndUnary) {
  std::mt19937 rng(3);
  std::vector<Ty> in = {{I64, {3, 2}}, {I64, {2}}};
  expectMatchesDirect(
      instr("mul", in, {{I64, {3, 2}}}), randomInputs(in, rng),
      [](auto &i, auto &o) { return cpu::binary(cpu::BinaryKind::Mul, *i[0], *i[1], *o[0]); });
  std::vector<Ty> x = {{F32, {7}}};
  expectMatchesDirect(instr("silu", x, {{F32, {7}}}), randomInputs(x, rng), [](auto &i, auto &o) {
    return cpu::unary(cpu::UnaryKind::Silu, *i[0], *o[0]);
  });
  pb::Instruction gelu = instr("gelu", x, {{F32, {7}}});
  setString(&gelu, "approximate", "tanh");
  expectMatchesDirect(gelu, randomInputs(x, rng), [](auto &i, auto &o) {
    return cpu::unary(cpu::UnaryKind::GeluTanh, *i[0], *o[0]);
  });
  setString(&gelu, "approximate", "exact");
  expectMatchesDirect(gelu, randomInputs(x, rng), [](auto &i, auto &o) {
    return cpu::unary(cpu::UnaryKind::GeluExact, *i[0], *o[0]);
  });
}

// softplus and floor (float unary) and mod, whose `fmod` flag picks the remainder's sign.
TEST(CpuKernelDispatch, SoftplusFloorMod) {
  std::mt19937 rng(31);
  std::vector<Ty> x = {{F32, {2, 5}}};
  expectMatchesDirect(instr("softplus", x, {{F32, {2, 5}}}), randomInputs(x, rng),
                      [](auto &i, auto &o) {
                        return cpu::unary(cpu::UnaryKind::Softplus, *i[0], *o[0]);
                      });
  expectMatchesDirect(instr("floor", x, {{F32, {2, 5}}}), randomInputs(x, rng),
                      [](auto &i, auto &o) {
                        return cpu::unary(cpu::UnaryKind::Floor, *i[0], *o[0]);
                      });
  std::vector<HostTensor> ints;
  ints.push_back(kt::tensor(I64, {4}, {7, -7, 7, -7}));
  ints.push_back(kt::tensor(I64, {}, {-3}));
  for (bool fmod : {false, true}) {
    pb::Instruction mod = instr("mod", {{I64, {4}}, {I64, {}}}, {{I64, {4}}});
    if (fmod)
      setBool(&mod, "fmod", true);
    expectMatchesDirect(mod, ints, [fmod](auto &i, auto &o) {
      return cpu::binary(fmod ? cpu::BinaryKind::Fmod : cpu::BinaryKind::Mod, *i[0], *i[1],
                         *o[0]);
    });
  }
}

// cumsum with its attributes.
TEST(CpuKernelDispatch, CumSum) {
  std::mt19937 rng(32);
  std::vector<Ty> x = {{F32, {3, 4}}};
  pb::Instruction ins = instr("cumsum", x, {{F32, {3, 4}}});
  setInt(&ins, "axis", 1);
  setBool(&ins, "exclusive", true);
  setBool(&ins, "reverse", true);
  expectMatchesDirect(ins, randomInputs(x, rng), [](auto &i, auto &o) {
    return cpu::cumsum(*i[0], 1, true, true, *o[0]);
  });
}

// rms_norm over the last axis; layer_norm with and without its optional bias.
TEST(CpuKernelDispatch, Norms) {
  std::mt19937 rng(4);
  std::vector<Ty> in = {{F32, {2, 3, 8}}, {F32, {8}}};
  pb::Instruction rms = instr("rms_norm", in, {{F32, {2, 3, 8}}});
  setInt(&rms, "axis", 2);
  setFloat(&rms, "epsilon", 1e-6);
  expectMatchesDirect(rms, randomInputs(in, rng),
                      [](auto &i, auto &o) { return cpu::rmsNorm(*i[0], *i[1], 2, 1e-6, *o[0]); });
  // Its fused VJP: x, scale, the cotangent -> dx and the per-row scale products.
  std::vector<Ty> vin = {{F32, {2, 3, 8}}, {F32, {8}}, {F32, {2, 3, 8}}};
  pb::Instruction vjp = instr("rms_norm_vjp", vin, {{F32, {2, 3, 8}}, {F32, {2, 3, 8}}});
  setInt(&vjp, "axis", 2);
  setFloat(&vjp, "epsilon", 1e-6);
  expectMatchesDirect(vjp, randomInputs(vin, rng), [](auto &i, auto &o) {
    return cpu::rmsNormVjp(*i[0], *i[1], *i[2], 2, 1e-6, *o[0], *o[1]);
  });
  pb::Instruction ln = instr("layer_norm", in, {{F32, {2, 3, 8}}});
  setInt(&ln, "axis", 2);
  setFloat(&ln, "epsilon", 1e-5);
  expectMatchesDirect(ln, randomInputs(in, rng), [](auto &i, auto &o) {
    return cpu::layerNorm(*i[0], *i[1], nullptr, 2, 1e-5, *o[0]);
  });
  std::vector<Ty> withBias = {{F32, {2, 3, 8}}, {F32, {3, 8}}, {F32, {3, 8}}};
  pb::Instruction lnb = instr("layer_norm", withBias, {{F32, {2, 3, 8}}});
  setInt(&lnb, "axis", 1);
  setFloat(&lnb, "epsilon", 1e-5);
  expectMatchesDirect(lnb, randomInputs(withBias, rng), [](auto &i, auto &o) {
    return cpu::layerNorm(*i[0], *i[1], i[2], 1, 1e-5, *o[0]);
  });
}

// softmax and log_softmax along axis 1.
TEST(CpuKernelDispatch, Softmax) {
  std::mt19937 rng(5);
  std::vector<Ty> in = {{F32, {3, 5, 2}}};
  for (bool log : {false, true}) {
    pb::Instruction ins = instr(log ? "log_softmax" : "softmax", in, {{F32, {3, 5, 2}}});
    setInt(&ins, "axis", 1);
    expectMatchesDirect(ins, randomInputs(in, rng),
                        [log](auto &i, auto &o) { return cpu::softmax(*i[0], 1, log, *o[0]); });
  }
}

// cross_entropy with an ignored label, both reductions.
TEST(CpuKernelDispatch, CrossEntropyWithIgnoreIndex) {
  std::mt19937 rng(6);
  std::vector<HostTensor> inputs;
  inputs.push_back(kt::randomTensor(F32, {4, 6}, rng));
  inputs.push_back(kt::tensor(I64, {4}, {1, -100, 5, 0}));
  for (auto [keyword, reduction] :
       {std::pair{"mean", cpu::LossReduction::Mean}, std::pair{"sum", cpu::LossReduction::Sum}}) {
    pb::Instruction ins = instr("cross_entropy", {{F32, {4, 6}}, {I64, {4}}}, {{F32, {}}});
    setString(&ins, "reduction", keyword);
    setInt(&ins, "ignore_index", -100);
    expectMatchesDirect(ins, inputs, [reduction = reduction](auto &i, auto &o) {
      return cpu::crossEntropy(*i[0], *i[1], -100, reduction, *o[0]);
    });
  }
}

// gather on axis 0 (an embedding lookup) with i64 and i32 ids.
TEST(CpuKernelDispatch, Gather) {
  std::mt19937 rng(7);
  for (DType ids : {I64, I32}) {
    std::vector<HostTensor> inputs;
    inputs.push_back(kt::randomTensor(F32, {10, 4}, rng));
    inputs.push_back(kt::tensor(ids, {2, 3}, {0, 9, 3, 3, -1, 5}));
    pb::Instruction ins = instr("gather", {{F32, {10, 4}}, {ids, {2, 3}}}, {{F32, {2, 3, 4}}});
    setInt(&ins, "axis", 0);
    expectMatchesDirect(ins, inputs,
                        [](auto &i, auto &o) { return cpu::gather(*i[0], *i[1], 0, *o[0]); });
  }
}

// Causal grouped-query attention; non-causal with `causal` written as false.
TEST(CpuKernelDispatch, Attention) {
  std::mt19937 rng(8);
  std::vector<Ty> in = {{F32, {1, 4, 5, 8}}, {F32, {1, 2, 5, 8}}, {F32, {1, 2, 5, 8}}};
  const double scale = 1.0 / std::sqrt(8.0);
  for (bool causal : {true, false}) {
    pb::Instruction ins = instr("attention", in, {{F32, {1, 4, 5, 8}}});
    setFloat(&ins, "scale", scale);
    setBool(&ins, "causal", causal);
    expectMatchesDirect(ins, randomInputs(in, rng), [scale, causal](auto &i, auto &o) {
      return cpu::attention(*i[0], *i[1], *i[2], scale, causal, *o[0]);
    });
  }
  // An absent `causal` is false.
  pb::Instruction ins = instr("attention", in, {{F32, {1, 4, 5, 8}}});
  setFloat(&ins, "scale", scale);
  expectMatchesDirect(ins, randomInputs(in, rng), [scale](auto &i, auto &o) {
    return cpu::attention(*i[0], *i[1], *i[2], scale, false, *o[0]);
  });
}

// The fused attention backward: q, k, v, out, dout -> dq, dk, dv (grouped-query, causal and
// not).
TEST(CpuKernelDispatch, AttentionVjp) {
  std::mt19937 rng(18);
  const Ty q{F32, {1, 4, 5, 8}}, kv{F32, {1, 2, 5, 8}};
  std::vector<Ty> in = {q, kv, kv, q, q};
  const double scale = 1.0 / std::sqrt(8.0);
  for (bool causal : {true, false}) {
    pb::Instruction ins = instr("attention_vjp", in, {q, kv, kv});
    setFloat(&ins, "scale", scale);
    setBool(&ins, "causal", causal);
    expectMatchesDirect(ins, randomInputs(in, rng), [scale, causal](auto &i, auto &o) {
      return cpu::attentionVjp(*i[0], *i[1], *i[2], *i[3], *i[4], scale, causal, *o[0], *o[1],
                               *o[2]);
    });
  }
}

// Attention sinks: a fourth operand of attention; attention_vjp's sixth operand and fourth
// result (dsinks).
TEST(CpuKernelDispatch, AttentionSinks) {
  std::mt19937 rng(19);
  const Ty q{F32, {1, 4, 5, 8}}, kv{F32, {1, 2, 5, 8}}, sinks{F32, {4}};
  const double scale = 1.0 / std::sqrt(8.0);
  pb::Instruction fwd = instr("attention", {q, kv, kv, sinks}, {q});
  setFloat(&fwd, "scale", scale);
  setBool(&fwd, "causal", true);
  expectMatchesDirect(fwd, randomInputs({q, kv, kv, sinks}, rng), [scale](auto &i, auto &o) {
    return cpu::attention(*i[0], *i[1], *i[2], scale, true, *o[0], i[3]);
  });
  std::vector<Ty> in = {q, kv, kv, q, q, sinks};
  pb::Instruction vjp = instr("attention_vjp", in, {q, kv, kv, sinks});
  setFloat(&vjp, "scale", scale);
  expectMatchesDirect(vjp, randomInputs(in, rng), [scale](auto &i, auto &o) {
    return cpu::attentionVjp(*i[0], *i[1], *i[2], *i[3], *i[4], scale, false, *o[0], *o[1],
                             *o[2], i[5], o[3]);
  });
}

// A sliding window and a logit soft-cap: attention's and attention_vjp's optional int
// attribute `window` and float attribute `softcap`; a value head size (4) other than the
// query's (8).
TEST(CpuKernelDispatch, AttentionWindowSoftcapAndValueDim) {
  std::mt19937 rng(23);
  const Ty q{F32, {1, 4, 70, 8}}, kv{F32, {1, 2, 70, 8}}, v{F32, {1, 2, 70, 4}},
      y{F32, {1, 4, 70, 4}};
  const double scale = 1.0 / std::sqrt(8.0);
  pb::Instruction fwd = instr("attention", {q, kv, v}, {y});
  setFloat(&fwd, "scale", scale);
  setBool(&fwd, "causal", true);
  setInt(&fwd, "window", 5);
  setFloat(&fwd, "softcap", 1.5);
  expectMatchesDirect(fwd, randomInputs({q, kv, v}, rng), [scale](auto &i, auto &o) {
    return cpu::attention(*i[0], *i[1], *i[2], scale, true, *o[0], nullptr, 5, 1.5);
  });
  std::vector<Ty> in = {q, kv, v, y, y};
  pb::Instruction vjp = instr("attention_vjp", in, {q, kv, v});
  setFloat(&vjp, "scale", scale);
  setBool(&vjp, "causal", true);
  setInt(&vjp, "window", 5);
  setFloat(&vjp, "softcap", 1.5);
  expectMatchesDirect(vjp, randomInputs(in, rng), [scale](auto &i, auto &o) {
    return cpu::attentionVjp(*i[0], *i[1], *i[2], *i[3], *i[4], scale, true, *o[0], *o[1],
                             *o[2], nullptr, nullptr, 5, 1.5);
  });
}

// swiglu and rope (cos/sin broadcast over batch and heads), rope's bool attribute
// `interleaved` (GPT-J's rotation of adjacent pairs).
TEST(CpuKernelDispatch, SwigluAndRope) {
  std::mt19937 rng(9);
  std::vector<Ty> gu = {{F32, {2, 6}}, {F32, {2, 6}}};
  expectMatchesDirect(instr("swiglu", gu, {{F32, {2, 6}}}), randomInputs(gu, rng),
                      [](auto &i, auto &o) { return cpu::swiglu(*i[0], *i[1], *o[0]); });
  std::vector<Ty> r = {{F32, {1, 2, 4, 8}}, {F32, {4, 8}}, {F32, {4, 8}}};
  expectMatchesDirect(instr("rope", r, {{F32, {1, 2, 4, 8}}}), randomInputs(r, rng),
                      [](auto &i, auto &o) { return cpu::rope(*i[0], *i[1], *i[2], *o[0]); });
  pb::Instruction pairs = instr("rope", r, {{F32, {1, 2, 4, 8}}});
  setBool(&pairs, "interleaved", true);
  expectMatchesDirect(pairs, randomInputs(r, rng), [](auto &i, auto &o) {
    return cpu::rope(*i[0], *i[1], *i[2], *o[0], /*interleaved=*/true);
  });
  // The fused VJPs.
  std::vector<Ty> gug = {{F32, {2, 6}}, {F32, {2, 6}}, {F32, {2, 6}}};
  expectMatchesDirect(instr("swiglu_vjp", gug, {{F32, {2, 6}}, {F32, {2, 6}}}),
                      randomInputs(gug, rng), [](auto &i, auto &o) {
                        return cpu::swigluVjp(*i[0], *i[1], *i[2], *o[0], *o[1]);
                      });
  pb::Instruction rv = instr("rope_vjp", r, {{F32, {1, 2, 4, 8}}});
  setBool(&rv, "interleaved", true);
  expectMatchesDirect(rv, randomInputs(r, rng), [](auto &i, auto &o) {
    return cpu::ropeVjp(*i[0], *i[1], *i[2], *o[0], /*interleaved=*/true);
  });
}

// transpose, slice (strided), reshape and expand move the bits the direct calls move.
TEST(CpuKernelDispatch, TransposeSliceReshapeExpand) {
  std::mt19937 rng(10);
  std::vector<Ty> x = {{F32, {2, 3, 4}}};
  pb::Instruction t = instr("transpose", x, {{F32, {4, 2, 3}}});
  setInts(&t, "permutation", {2, 0, 1});
  expectMatchesDirect(t, randomInputs(x, rng), [](auto &i, auto &o) {
    return cpu::transpose(*i[0], {2, 0, 1}, *o[0]);
  });
  std::vector<Ty> m = {{I32, {4, 6}}};
  pb::Instruction s = instr("slice", m, {{I32, {2, 2}}});
  setInts(&s, "axes", {0, 1});
  setInts(&s, "starts", {1, 0});
  setInts(&s, "ends", {4, 6});
  setInts(&s, "steps", {2, 3});
  expectMatchesDirect(s, randomInputs(m, rng), [](auto &i, auto &o) {
    return cpu::slice(*i[0], {0, 1}, {1, 0}, {4, 6}, {2, 3}, *o[0]);
  });
  expectMatchesDirect(instr("reshape", x, {{F32, {6, 4}}}), randomInputs(x, rng),
                      [](auto &i, auto &o) { return cpu::copyInto(*i[0], *o[0]); });
  std::vector<Ty> b = {{I1, {3, 1}}};
  expectMatchesDirect(instr("expand", b, {{I1, {2, 3, 4}}}), randomInputs(b, rng),
                      [](auto &i, auto &o) { return cpu::expand(*i[0], *o[0]); });
}

// concat of three operands (variadic) along axis 1.
TEST(CpuKernelDispatch, ConcatVariadic) {
  std::mt19937 rng(11);
  std::vector<Ty> in = {{F32, {2, 1}}, {F32, {2, 3}}, {F32, {2, 2}}};
  pb::Instruction ins = instr("concat", in, {{F32, {2, 6}}});
  setInt(&ins, "axis", 1);
  expectMatchesDirect(ins, randomInputs(in, rng),
                      [](auto &i, auto &o) { return cpu::concat(i, 1, *o[0]); });
}

// split into three results.
TEST(CpuKernelDispatch, SplitMultipleResults) {
  std::mt19937 rng(12);
  std::vector<Ty> in = {{F32, {2, 7}}};
  pb::Instruction ins = instr("split", in, {{F32, {2, 2}}, {F32, {2, 4}}, {F32, {2, 1}}});
  setInt(&ins, "axis", 1);
  setInts(&ins, "sizes", {2, 4, 1});
  expectMatchesDirect(ins, randomInputs(in, rng),
                      [](auto &i, auto &o) { return cpu::split(*i[0], 1, o); });
}

// range: exact integer ranges (i64, i32, negative delta) and f32 ranges with mixed int and
// float bounds.
TEST(CpuKernelDispatch, Range) {
  pb::Instruction i64 = instr("range", {}, {{I64, {3}}});
  setInt(&i64, "start", 2);
  setInt(&i64, "limit", 11);
  setInt(&i64, "delta", 3);
  expectMatchesDirect(i64, {}, [](auto &, auto &o) { return cpu::rangeInt(2, 11, 3, *o[0]); });
  pb::Instruction i32 = instr("range", {}, {{I32, {4}}});
  setInt(&i32, "start", 5);
  setInt(&i32, "limit", -3);
  setInt(&i32, "delta", -2);
  expectMatchesDirect(i32, {}, [](auto &, auto &o) { return cpu::rangeInt(5, -3, -2, *o[0]); });
  pb::Instruction f = instr("range", {}, {{F32, {4}}});
  setFloat(&f, "start", 0.5);
  setInt(&f, "limit", 3);
  setFloat(&f, "delta", 0.75);
  expectMatchesDirect(f, {}, [](auto &, auto &o) { return cpu::range(0.5, 3.0, 0.75, *o[0]); });
  pb::Instruction fi = instr("range", {}, {{F32, {5}}});
  setInt(&fi, "start", 0);
  setInt(&fi, "limit", 5);
  setInt(&fi, "delta", 1);
  expectMatchesDirect(fi, {}, [](auto &, auto &o) { return cpu::range(0, 5, 1, *o[0]); });
}

// compare `lt` with broadcasting makes i1; where selects with it; trilu keeps a triangle.
TEST(CpuKernelDispatch, CompareWhereTrilu) {
  std::mt19937 rng(13);
  std::vector<Ty> in = {{F32, {2, 3}}, {F32, {3}}};
  pb::Instruction lt = instr("compare", in, {{I1, {2, 3}}});
  setString(&lt, "predicate", "lt");
  expectMatchesDirect(lt, randomInputs(in, rng), [](auto &i, auto &o) {
    return cpu::binary(cpu::BinaryKind::Lt, *i[0], *i[1], *o[0]);
  });
  std::vector<Ty> w = {{I1, {2, 3}}, {F32, {2, 3}}, {F32, {1}}};
  expectMatchesDirect(instr("where", w, {{F32, {2, 3}}}), randomInputs(w, rng),
                      [](auto &i, auto &o) { return cpu::where(*i[0], *i[1], *i[2], *o[0]); });
  std::vector<Ty> m = {{I1, {4, 4}}};
  pb::Instruction tri = instr("trilu", m, {{I1, {4, 4}}});
  setInt(&tri, "k", 1);
  setBool(&tri, "upper", true);
  expectMatchesDirect(tri, randomInputs(m, rng),
                      [](auto &i, auto &o) { return cpu::trilu(*i[0], 1, true, *o[0]); });
}

// cast f32 -> i64 (truncation) and i1 -> f32; copy of an i32 tensor.
TEST(CpuKernelDispatch, CastAndCopy) {
  std::vector<HostTensor> f;
  f.push_back(kt::tensor(F32, {5}, {-2.5, -0.5, 0, 1.75, 3e9}));
  expectMatchesDirect(instr("cast", {{F32, {5}}}, {{I64, {5}}}), f,
                      [](auto &i, auto &o) { return cpu::cast(*i[0], *o[0]); });
  std::mt19937 rng(14);
  std::vector<Ty> b = {{I1, {2, 2}}};
  expectMatchesDirect(instr("cast", b, {{F32, {2, 2}}}), randomInputs(b, rng),
                      [](auto &i, auto &o) { return cpu::cast(*i[0], *o[0]); });
  std::vector<Ty> c = {{I32, {3, 2}}};
  expectMatchesDirect(instr("copy", c, {{I32, {3, 2}}}), randomInputs(c, rng),
                      [](auto &i, auto &o) { return cpu::copyInto(*i[0], *o[0]); });
}

// reduce_sum with and without keepdims; reduce_max over two axes.
TEST(CpuKernelDispatch, Reductions) {
  std::mt19937 rng(15);
  std::vector<Ty> in = {{F32, {2, 3, 4}}};
  pb::Instruction keep = instr("reduce_sum", in, {{F32, {2, 1, 4}}});
  setInts(&keep, "axes", {1});
  setBool(&keep, "keepdims", true);
  expectMatchesDirect(keep, randomInputs(in, rng), [](auto &i, auto &o) {
    return cpu::reduce(cpu::ReduceKind::Sum, *i[0], {1}, true, *o[0]);
  });
  pb::Instruction drop = instr("reduce_sum", in, {{F32, {2, 4}}});
  setInts(&drop, "axes", {1});
  expectMatchesDirect(drop, randomInputs(in, rng), [](auto &i, auto &o) {
    return cpu::reduce(cpu::ReduceKind::Sum, *i[0], {1}, false, *o[0]);
  });
  pb::Instruction max = instr("reduce_max", in, {{F32, {3}}});
  setInts(&max, "axes", {0, 2});
  expectMatchesDirect(max, randomInputs(in, rng), [](auto &i, auto &o) {
    return cpu::reduce(cpu::ReduceKind::Max, *i[0], {0, 2}, false, *o[0]);
  });
}

// The scatters (VJPs of gather and slice; the overwriting scatters).
TEST(CpuKernelDispatch, Scatters) {
  std::mt19937 rng(16);
  std::vector<HostTensor> inputs;
  inputs.push_back(kt::randomTensor(F32, {2, 3, 4}, rng));
  inputs.push_back(kt::tensor(I64, {2, 3}, {0, 9, 3, 3, -1, 5}));
  pb::Instruction sa = instr("scatter_add", {{F32, {2, 3, 4}}, {I64, {2, 3}}}, {{F32, {10, 4}}});
  setInt(&sa, "axis", 0);
  expectMatchesDirect(sa, inputs,
                      [](auto &i, auto &o) { return cpu::scatterAdd(*i[0], *i[1], 0, *o[0]); });
  // The overwriting scatters: data, indices, updates.
  std::vector<HostTensor> over;
  over.push_back(kt::randomTensor(F32, {4, 3}, rng));
  over.push_back(kt::tensor(I64, {2}, {3, -4}));
  over.push_back(kt::randomTensor(F32, {2, 3}, rng));
  pb::Instruction sc =
      instr("scatter", {{F32, {4, 3}}, {I64, {2}}, {F32, {2, 3}}}, {{F32, {4, 3}}});
  setInt(&sc, "axis", 0);
  expectMatchesDirect(sc, over, [](auto &i, auto &o) {
    return cpu::scatter(*i[0], *i[1], *i[2], 0, *o[0]);
  });
  over[1] = kt::tensor(I64, {4, 1}, {2, 0, -1, 1});
  over[2] = kt::randomTensor(F32, {4, 1}, rng);
  pb::Instruction se =
      instr("scatter_elements", {{F32, {4, 3}}, {I64, {4, 1}}, {F32, {4, 1}}}, {{F32, {4, 3}}});
  setInt(&se, "axis", 1);
  expectMatchesDirect(se, over, [](auto &i, auto &o) {
    return cpu::scatterElements(*i[0], *i[1], *i[2], 1, *o[0]);
  });
  std::vector<Ty> u = {{F32, {2, 2}}};
  pb::Instruction ss = instr("slice_scatter", u, {{F32, {4, 6}}});
  setInts(&ss, "axes", {0, 1});
  setInts(&ss, "starts", {1, 0});
  setInts(&ss, "ends", {4, 6});
  setInts(&ss, "steps", {2, 3});
  expectMatchesDirect(ss, randomInputs(u, rng), [](auto &i, auto &o) {
    return cpu::sliceScatter(*i[0], {0, 1}, {1, 0}, {4, 6}, {2, 3}, *o[0]);
  });
}

//===--- decode errors ---------------------------------------------------------===//

/// The InvalidArgument message decoding `ins` gives ("" when it decodes).
std::string decodeError(const pb::Instruction &ins) {
  StatusOr<CpuKernel> k = CpuKernel::decode(ins);
  if (k.ok())
    return "";
  EXPECT_EQ(k.status().code(), StatusCode::InvalidArgument) << k.status().toString();
  return k.status().message();
}

// An id outside the registry.
TEST(CpuKernelDispatchErrors, UnknownId) {
  EXPECT_EQ(decodeError(instr("frobnicate", {{F32, {2}}}, {{F32, {2}}})),
            "kernel 'frobnicate' at test.onnx:frobnicate: unknown kernel id (not in the kernel "
            "registry, kernels/Registry.h)");
}

// A required attribute is missing; an empty location reads "<unknown location>".
TEST(CpuKernelDispatchErrors, MissingAttribute) {
  pb::Instruction ins = instr("softmax", {{F32, {2, 3}}}, {{F32, {2, 3}}});
  ins.clear_location();
  EXPECT_EQ(decodeError(ins), "kernel 'softmax' at <unknown location>: missing required "
                              "attribute 'axis' (int)");
}

// attention_vjp without its scale, or with the forward's three operands.
TEST(CpuKernelDispatchErrors, AttentionVjpAttributesAndCounts) {
  const Ty q{F32, {1, 2, 3, 4}};
  pb::Instruction ins = instr("attention_vjp", {q, q, q, q, q}, {q, q, q});
  EXPECT_EQ(decodeError(ins), "kernel 'attention_vjp' at test.onnx:attention_vjp: missing "
                              "required attribute 'scale' (float)");
  pb::Instruction three = instr("attention_vjp", {q, q, q}, {q, q, q});
  setFloat(&three, "scale", 0.5);
  EXPECT_NE(decodeError(three).find("kernel 'attention_vjp' at test.onnx:attention_vjp: "),
            std::string::npos)
      << decodeError(three);
}

// An attribute of the wrong kind, and one the kernel does not take.
TEST(CpuKernelDispatchErrors, WrongAttributeKind) {
  pb::Instruction ins = instr("softmax", {{F32, {2, 3}}}, {{F32, {2, 3}}});
  setFloat(&ins, "axis", 1.0);
  EXPECT_EQ(decodeError(ins),
            "kernel 'softmax' at test.onnx:softmax: attribute 'axis' holds a float, expected int");
  setInt(&ins, "axis", 1);
  setBool(&ins, "stable", true);
  EXPECT_EQ(decodeError(ins),
            "kernel 'softmax' at test.onnx:softmax: unknown attribute 'stable' (the kernel takes "
            "axis)");
}

// Enum keywords the kernels do not know.
TEST(CpuKernelDispatchErrors, UnknownEnumKeyword) {
  pb::Instruction cmp = instr("compare", {{F32, {2}}, {F32, {2}}}, {{I1, {2}}});
  setString(&cmp, "predicate", "lte");
  EXPECT_EQ(decodeError(cmp), "kernel 'compare' at test.onnx:compare: attribute 'predicate' is "
                              "'lte'; expected one of eq, lt, le, gt, ge");
  pb::Instruction gelu = instr("gelu", {{F32, {2}}}, {{F32, {2}}});
  setString(&gelu, "approximate", "none");
  EXPECT_EQ(decodeError(gelu), "kernel 'gelu' at test.onnx:gelu: attribute 'approximate' is "
                               "'none'; expected one of exact, tanh");
  pb::Instruction ce = instr("cross_entropy", {{F32, {2, 3}}, {I64, {2}}}, {{F32, {}}});
  setString(&ce, "reduction", "none");
  setInt(&ce, "ignore_index", -100);
  EXPECT_EQ(decodeError(ce), "kernel 'cross_entropy' at test.onnx:cross_entropy: attribute "
                             "'reduction' is 'none'; expected one of mean, sum");
}

// bf16 and f16 tensors: the CPU backend runs fp32 plans.
TEST(CpuKernelDispatchErrors, HalfPrecisionRejected) {
  EXPECT_EQ(decodeError(instr("matmul", {{DType::BF16, {2, 3}}, {DType::BF16, {3, 4}}},
                              {{DType::BF16, {2, 4}}})),
            "kernel 'matmul' at test.onnx:matmul: operand 0 is bf16[2, 3]: the CPU backend runs "
            "fp32 plans; compile with --dtype fp32");
  EXPECT_EQ(decodeError(instr("cast", {{F32, {2}}}, {{DType::F16, {2}}})),
            "kernel 'cast' at test.onnx:cast: result 0 is f16[2]: the CPU backend runs fp32 "
            "plans; compile with --dtype fp32");
}

// Dtypes a kernel does not take, and counts the registry does not accept.
TEST(CpuKernelDispatchErrors, DTypesAndCounts) {
  EXPECT_EQ(decodeError(instr("exp", {{I64, {2}}}, {{I64, {2}}})),
            "kernel 'exp' at test.onnx:exp: operand 0 is i64[2]; the kernel takes f32 (the CPU "
            "backend runs fp32 plans)");
  EXPECT_EQ(decodeError(instr("add", {{F32, {2}}, {I32, {2}}}, {{F32, {2}}})),
            "kernel 'add' at test.onnx:add: operand 1 is i32[2]; expected f32 like operand 0");
  pb::Instruction g = instr("gather", {{F32, {4, 2}}, {F32, {3}}}, {{F32, {3, 2}}});
  setInt(&g, "axis", 0);
  EXPECT_EQ(decodeError(g), "kernel 'gather' at test.onnx:gather: operand 1 is f32[3]; the "
                            "kernel takes i64 or i32 indices");
  pb::Instruction cmp = instr("compare", {{F32, {2}}, {F32, {2}}}, {{F32, {2}}});
  setString(&cmp, "predicate", "eq");
  EXPECT_EQ(decodeError(cmp),
            "kernel 'compare' at test.onnx:compare: result 0 is f32[2]; a comparison makes i1");
  pb::Instruction topK = instr("top_k", {{F32, {3, 4}}}, {{I32, {3, 2}}});
  setInt(&topK, "k", 2);
  setInt(&topK, "axis", 1);
  EXPECT_EQ(decodeError(topK),
            "kernel 'top_k' at test.onnx:top_k: result 0 is i32[3, 2]; the kernel makes i64 "
            "indices");
  pb::Instruction topKInt = instr("top_k", {{I64, {3, 4}}}, {{I64, {3, 2}}});
  setInt(&topKInt, "k", 2);
  setInt(&topKInt, "axis", 1);
  EXPECT_EQ(decodeError(topKInt),
            "kernel 'top_k' at test.onnx:top_k: operand 0 is i64[3, 4]; the kernel takes f32 (the "
            "CPU backend runs fp32 plans)");
  EXPECT_EQ(decodeError(instr("add", {{F32, {2}}}, {{F32, {2}}})),
            "kernel 'add' at test.onnx:add: has 1 operands and 1 results, which the kernel "
            "registry does not accept");
  EXPECT_EQ(decodeError(instr("copy", {{F32, {2, 3}}}, {{F32, {6}}})),
            "kernel 'copy' at test.onnx:copy: result 0 is f32[6]; a copy has its operand's type "
            "(f32[2, 3])");
}

// Attribute consistency the kernels cannot see: integer ranges need int bounds, split's
// sizes match its results, slice's lists have one length.
TEST(CpuKernelDispatchErrors, AttributeConsistency) {
  pb::Instruction r = instr("range", {}, {{I64, {3}}});
  setInt(&r, "start", 0);
  setFloat(&r, "limit", 3.0);
  setInt(&r, "delta", 1);
  EXPECT_EQ(decodeError(r), "kernel 'range' at test.onnx:range: attribute 'limit' holds a "
                            "float; an integer result (i64[3]) needs int start, limit and delta");
  pb::Instruction s = instr("split", {{F32, {2, 6}}}, {{F32, {2, 2}}, {F32, {2, 4}}});
  setInt(&s, "axis", 1);
  setInts(&s, "sizes", {3, 3});
  EXPECT_EQ(decodeError(s), "kernel 'split' at test.onnx:split: result 0 is f32[2, 2]; "
                            "attribute 'sizes' gives 3 along axis 1");
  (*s.mutable_attrs())["sizes"].mutable_ints()->clear_values();
  (*s.mutable_attrs())["sizes"].mutable_ints()->add_values(6);
  EXPECT_EQ(decodeError(s), "kernel 'split' at test.onnx:split: attribute 'sizes' has 1 "
                            "entries; expected one per result (2)");
  pb::Instruction sl = instr("slice", {{F32, {4}}}, {{F32, {2}}});
  setInts(&sl, "axes", {0});
  setInts(&sl, "starts", {0, 1});
  setInts(&sl, "ends", {2});
  setInts(&sl, "steps", {1});
  EXPECT_EQ(decodeError(sl), "kernel 'slice' at test.onnx:slice: attributes 'axes', 'starts', "
                             "'ends' and 'steps' have 1, 2, 1 and 1 entries; expected one length");
}

// decodeFunction names the function and the instruction index.
TEST(CpuKernelDispatchErrors, DecodeFunctionNamesTheInstruction) {
  pb::Function fn;
  fn.set_name("block_0");
  *fn.add_body() = instr("add", {{F32, {2}}, {F32, {2}}}, {{F32, {2}}});
  *fn.add_body() = instr("softmax", {{F32, {2}}}, {{F32, {2}}});
  StatusOr<std::vector<CpuKernel>> body = decodeFunction(fn);
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(body.status().message(),
            "function 'block_0' instruction 1: kernel 'softmax' at test.onnx:softmax: missing "
            "required attribute 'axis' (int)");
  setInt(fn.mutable_body(1), "axis", 0);
  body = decodeFunction(fn);
  ASSERT_TRUE(body.ok()) << body.status().toString();
  ASSERT_EQ(body->size(), 2u);
  EXPECT_EQ((*body)[0].id(), "add");
  EXPECT_EQ((*body)[1].id(), "softmax");
  EXPECT_EQ((*body)[1].location(), "test.onnx:softmax");
}

// The test plan of PlanTestUtil decodes whole.
TEST(CpuKernelDispatchErrors, ValidPlanDecodes) {
  pb::Plan plan = rp::testing::makeValidPlan();
  for (const pb::Function &fn : plan.functions()) {
    StatusOr<std::vector<CpuKernel>> body = decodeFunction(fn);
    EXPECT_TRUE(body.ok()) << body.status().toString();
  }
}

//===--- run-time errors ------------------------------------------------------===//

// A kernel's own error keeps its code and gains the instruction's prefix; tensors that do not
// match the instruction's types are refused before the kernel runs.
TEST(CpuKernelDispatchErrors, RunErrors) {
  pb::Instruction ins = instr("gather", {{F32, {4, 2}}, {I64, {3}}}, {{F32, {3, 2}}});
  setInt(&ins, "axis", 0);
  StatusOr<CpuKernel> k = CpuKernel::decode(ins);
  ASSERT_TRUE(k.ok()) << k.status().toString();
  HostTensor data(F32, {4, 2});
  HostTensor ids = kt::tensor(I64, {3}, {0, 7, 1});
  HostTensor out(F32, {3, 2});
  Status s = k->run({&data, &ids}, {&out});
  EXPECT_EQ(s.code(), StatusCode::OutOfRange);
  HostTensor direct(F32, {3, 2});
  Status d = cpu::gather(data, ids, 0, direct);
  EXPECT_EQ(s.message(), "kernel 'gather' at test.onnx:gather: " + d.message());

  HostTensor wrong(F32, {3, 3});
  s = k->run({&data, &ids}, {&wrong});
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.message(), "kernel 'gather' at test.onnx:gather: result 0 is f32[3, 3]; the "
                         "instruction's buffer is f32[3, 2]");
  s = k->run({&data}, {&out});
  EXPECT_EQ(s.message(), "kernel 'gather' at test.onnx:gather: called with 1 operands and 1 "
                         "results; the instruction has 2 and 1");
  s = k->run({&data, nullptr}, {&out});
  EXPECT_EQ(s.message(), "kernel 'gather' at test.onnx:gather: operand 1 is null; the "
                         "instruction's buffer is i64[3]");
}

//===--- every registry id has a CPU path ---------------------------------------===//

// Kernel ids of the registry that the CPU backend deliberately does not implement, each with
// the reason. Empty: every graph op that can reach a plan has a CPU reference kernel (the same
// set dialects/Graph/Eval/Evaluator.cpp evaluates). A new registry id must be implemented in
// KernelDispatch.cpp or listed here with its reason.
const std::set<std::string_view> kNotOnCpu = {};

/// A plausible instruction for `k`: f32[2, 4] operands and results, attributes of their kinds,
/// with the dtypes and keywords each kernel needs.
pb::Instruction plausible(const kernels::KernelInfo &k) {
  const std::string id(k.id);
  const int results = k.numResults == kernels::kVariadic ? 2 : k.numResults;
  std::vector<Ty> ops(static_cast<size_t>(k.minOperands), Ty{F32, {2, 4}});
  std::vector<Ty> res(static_cast<size_t>(results), Ty{F32, {2, 4}});
  if (id == "logical_not" || id == "logical_and" || id == "logical_or") {
    for (Ty &t : ops)
      t.dtype = I1;
    res[0].dtype = I1;
  } else if (id == "compare") {
    res[0].dtype = I1;
  } else if (id == "where") {
    ops[0].dtype = I1;
  } else if (id == "cross_entropy") {
    ops[1] = {I64, {2}};
    res[0] = {F32, {}};
  } else if (id == "linear_cross_entropy" || id == "linear_cross_entropy_vjp") {
    ops[1] = {F32, {3, 4}}; // weight [V, H]
    ops[2] = {I64, {2}};
    res[0] = {F32, {}};
    if (id == "linear_cross_entropy_vjp") {
      ops[3] = {F32, {}};
      res[2] = {F32, {3, 4}};
    }
  } else if (id == "gather" || id == "gather_elements" || id == "scatter_add" ||
             id == "scatter_elements_add" || id == "scatter" || id == "scatter_elements") {
    ops[1].dtype = I64;
  } else if (id == "top_k") {
    res[0].dtype = I64;
  } else if (id == "moe_sort") {
    ops[0].dtype = I64;
    res = {{I64, {2, 4}}, {I64, {3}}};
  } else if (id == "moe_dispatch") {
    ops[1].dtype = I64;
  } else if (id == "moe_combine" || id == "grouped_matmul" || id == "grouped_matmul_wgrad") {
    ops[2].dtype = I64;
  } else if (id == "range") {
    res[0] = {I64, {4}};
  } else if (id == "split") {
    res = {{F32, {1, 4}}, {F32, {1, 4}}};
  } else if (id == "dequantize") {
    // An int8 weight [2, 4] with input axis 0 (the attributes below: format int8, axis 0).
    auto layout = kernels::quantLayout(kernels::QuantFormat::Int8, {2, 4}, 0, "w");
    ops[0] = {DType::U8, {layout.ok() ? layout->bytes : 0}};
  }
  pb::Instruction ins = instr(id, ops, res);
  for (const kernels::AttrSpec &a : k.attrs) {
    const std::string name(a.name);
    switch (a.kind) {
    case kernels::AttrKind::Int:
    case kernels::AttrKind::IntOrFloat:
      setInt(&ins, name, name == "limit" ? 4 : name == "delta" ? 1 : 0);
      break;
    case kernels::AttrKind::Float:
      setFloat(&ins, name, 1.0);
      break;
    case kernels::AttrKind::String:
      setString(&ins, name,
                name == "predicate"     ? "lt"
                : name == "approximate" ? "tanh"
                : name == "format"      ? "int8"
                                        : "mean");
      break;
    case kernels::AttrKind::Ints:
      setInts(&ins, name, name == "sizes" ? std::vector<int64_t>{1, 1} : std::vector<int64_t>{0});
      break;
    case kernels::AttrKind::Bool:
      setBool(&ins, name, true);
      break;
    }
  }
  return ins;
}

// Every registry id decodes (given a plausible instruction) or is listed in kNotOnCpu, whose
// ids are registry ids that decode to a clear "no implementation" error.
TEST(CpuKernelDispatchCoverage, EveryRegistryIdHasACpuPath) {
  for (const kernels::KernelInfo &k : kernels::allKernels()) {
    SCOPED_TRACE(std::string(k.id));
    StatusOr<CpuKernel> decoded = CpuKernel::decode(plausible(k));
    if (kNotOnCpu.count(k.id)) {
      ASSERT_FALSE(decoded.ok()) << "listed as not on CPU but decodes: remove it from kNotOnCpu";
      EXPECT_NE(decoded.status().message().find("the CPU backend has no implementation"),
                std::string::npos)
          << decoded.status().toString();
    } else {
      EXPECT_TRUE(decoded.ok()) << decoded.status().toString();
    }
  }
  for (std::string_view id : kNotOnCpu)
    EXPECT_NE(kernels::findKernel(id), nullptr) << id << " is not a registry id";
}

} // namespace
} // namespace rp::runtime
