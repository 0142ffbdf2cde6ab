//===- Registry.h - The stable kernel ids a plan may name -------*- C++ -*-===//
//
// A plan's instructions (runtime/plan/plan.proto, `Instruction.kernel`) name kernels by a
// stable id. This table lists every id, with the operand and result counts, the dtypes and
// the attributes the kernel accepts. The plan exporter (compiler side) checks the ids it
// writes against it, and the plan validator (runtime/plan/PlanValidator.h) checks every
// instruction of a plan against it before anything runs. Each backend (cpu, cuda) implements
// the kernels by these ids, in one table of its own (runtime/backends/cpu/CpuKernelTable.cpp,
// runtime/backends/cuda/CudaKernelTable.cpp); the implementations are not part of this table.
//
// One entry per `graph` op that can appear in a layer function (dialects/Graph/IR/Ops.td),
// id = the op name without the `graph.` prefix ("add", "rms_norm", "attention"). The ops
// graph.param, graph.load_param and graph.constant have no kernel: they become PARAM and
// CONSTANT buffer references. One extra id, `copy` (1 operand, 1 result of the same type),
// copies a value: a function returning an argument, or one value twice.
//
// Attributes carry the ODS attribute names. Enum attributes (CompareKind, GeluApproximation,
// LossReduction) are strings holding the keyword ("lt", "tanh", "mean"); UnitAttrs (`causal`,
// `keepdims`, `upper`, `smallest`, `fmod`, `exclusive`, `reverse`, matmul's `transpose_a` /
// `transpose_b`) are optional bools (absent =
// false); I64 arrays (`axes`, `permutation`) are Ints; F64 attributes are Float; graph.range's
// bounds, which ODS types as I64 or F64, are IntOrFloat.
//
// Plain C++17: no LLVM/MLIR, no BLAS; linked by both worlds.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_REGISTRY_H
#define RP_KERNELS_REGISTRY_H

#include <string_view>
#include <vector>

namespace rp::kernels {

/// The kind of value an attribute holds (plan.proto `Attribute.value`).
enum class AttrKind {
  Int,        ///< `i`: an int64 (I64Attr).
  Float,      ///< `f`: a double (F64Attr).
  String,     ///< `s`: an enum keyword or a string.
  Ints,       ///< `ints`: an int64 list (DenseI64ArrayAttr).
  Bool,       ///< `b`: a UnitAttr, present = true.
  IntOrFloat, ///< `i` or `f` (graph.range's start, limit, delta).
};

/// "int", "float", "string", "ints", "bool", "int or float".
const char *attrKindName(AttrKind kind);

/// One attribute a kernel takes.
struct AttrSpec {
  std::string_view name; ///< The ODS attribute name.
  AttrKind kind;
  bool required; ///< False: may be absent (UnitAttrs; absent = false).
};

/// The dtypes a kernel takes. Every backend checks them when it decodes an instruction
/// (runtime/exec/InstructionDecoder.h); "float" is f32, and also f16 and bf16 on a backend that
/// computes in them (CUDA). The kernels check shapes when they run.
enum class DTypeRule {
  Same,         ///< every operand and result has one dtype (data movement: any dtype)
  Float,        ///< every operand and result has one float dtype
  Numeric,      ///< every operand and result has one dtype, float, i64 or i32 (not i1)
  Bool,         ///< every operand and result is i1
  Compare,      ///< the operands have one dtype; the result is i1
  Where,        ///< operand 0 is i1; operands 1, 2 and the result have one dtype
  Cast,         ///< any dtypes
  Indexed,      ///< operand 0 and the result have one dtype; operand 1 (indices) is i64 or i32
  FloatIndexed, ///< as Indexed with operand 0 and the result float (scatters, cross_entropy)
  Range,        ///< the result is f32, i64 or i32
  FloatToIndex, ///< operand 0 is float; the result is i64 (top_k)
  IndexOnly,    ///< every operand and result is i64 (moe_sort)
  FloatPairIndexed, ///< operands 0, 1 and the result one float dtype; operand 2 is i64
  LinearLoss,   ///< operand 2 (labels) is i64 or i32; the others and the results one float dtype
  Scatter,      ///< operands 0, 2 and the result have one dtype (any); operand 1 (indices) is
                ///< i64 or i32 (scatter, scatter_elements: data, indices, updates)
  Dequantize,   ///< operand 0 is u8 (quantized storage); the result is float (dequantize)
};

/// Marks an unbounded operand or result count.
inline constexpr int kVariadic = -1;

/// One kernel id and what an instruction naming it must carry.
struct KernelInfo {
  std::string_view id;
  int minOperands;
  int maxOperands; ///< kVariadic: no upper bound.
  int numResults;  ///< kVariadic: one or more results.
  DTypeRule dtypes;
  std::vector<AttrSpec> attrs;
  /// Above numResults: the most results (an optional result, attention_vjp's dsinks); 0 when
  /// the count is exactly numResults.
  int maxResults = 0;

  /// True when `n` operands are accepted.
  bool acceptsOperands(int n) const {
    return n >= minOperands && (maxOperands == kVariadic || n <= maxOperands);
  }
  /// True when `n` results are accepted.
  bool acceptsResults(int n) const {
    if (numResults == kVariadic)
      return n >= 1;
    return n >= numResults && n <= (maxResults > numResults ? maxResults : numResults);
  }
  /// The spec of attribute `name`, or null when the kernel takes no such attribute.
  const AttrSpec *findAttr(std::string_view name) const;
};

/// Every kernel, ordered as Ops.td declares the ops, `copy` last. Ids are unique.
const std::vector<KernelInfo> &allKernels();

/// The kernel with id `id`, or null when there is none.
const KernelInfo *findKernel(std::string_view id);

} // namespace rp::kernels

#endif // RP_KERNELS_REGISTRY_H
