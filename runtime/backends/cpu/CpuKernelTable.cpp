//===- CpuKernelTable.cpp - Kernel ids onto the CPU reference kernels -----===//
//
// One function per kernel family (kernels/cpu/*.h) adds the family's ids. A kernel taking its
// operands in order, then result 0, and no attribute is bound by inOrder(kernel); the others
// read their attributes here.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernelTable.h"

#include "kernels/cpu/Kernels.h"

#include <utility>
#include <vector>

namespace rp::runtime {
namespace {

namespace cpu = ::rp::kernels::cpu;
namespace pb = ::rp::plan;
using decode::Decoder;
using decode::typeText;
using Body = CpuKernel::Body;
using Operands = std::vector<const HostTensor *>;
using Results = std::vector<HostTensor *>;

using Table = decode::KernelTable<CpuBuilder>::Entries;

template <typename Kernel, size_t... I>
CpuBuilder bindInOrder(Kernel kernel, std::index_sequence<I...>) {
  return [kernel](const Decoder &) -> StatusOr<Body> {
    return Body(
        [kernel](const Operands &in, const Results &out) { return kernel(*in[I]..., *out[0]); });
  };
}

/// kernel(*in[0], ..., *out[0]): a kernel of its operands in order, then result 0.
CpuBuilder inOrder(Status (*kernel)(const HostTensor &, HostTensor &)) {
  return bindInOrder(kernel, std::make_index_sequence<1>{});
}
CpuBuilder inOrder(Status (*kernel)(const HostTensor &, const HostTensor &, HostTensor &)) {
  return bindInOrder(kernel, std::make_index_sequence<2>{});
}
CpuBuilder inOrder(Status (*kernel)(const HostTensor &, const HostTensor &, const HostTensor &,
                                    HostTensor &)) {
  return bindInOrder(kernel, std::make_index_sequence<3>{});
}

/// A kernel taking (operand 0, operand 1, axis, result 0): gathers and scatters.
template <Status (*Kernel)(const HostTensor &, const HostTensor &, int64_t, HostTensor &)>
StatusOr<Body> axisPairBody(const Decoder &d) {
  int64_t axis = d.i64("axis");
  return Body([axis](const Operands &in, const Results &out) {
    return Kernel(*in[0], *in[1], axis, *out[0]);
  });
}

/// A kernel taking (operands 0, 1, 2, axis, result 0): the overwriting scatters.
template <Status (*Kernel)(const HostTensor &, const HostTensor &, const HostTensor &, int64_t,
                           HostTensor &)>
StatusOr<Body> axisTripleBody(const Decoder &d) {
  int64_t axis = d.i64("axis");
  return Body([axis](const Operands &in, const Results &out) {
    return Kernel(*in[0], *in[1], *in[2], axis, *out[0]);
  });
}

// Elementwise (Evaluator: unaryKind, binaryKind), where, cast.
void addElementwise(Table &t) {
  auto unary = [](cpu::UnaryKind kind) -> CpuBuilder {
    return [kind](const Decoder &) -> StatusOr<Body> {
      return Body([kind](const Operands &in, const Results &out) {
        return cpu::unary(kind, *in[0], *out[0]);
      });
    };
  };
  auto binary = [](cpu::BinaryKind kind) -> CpuBuilder {
    return [kind](const Decoder &) -> StatusOr<Body> {
      return Body([kind](const Operands &in, const Results &out) {
        return cpu::binary(kind, *in[0], *in[1], *out[0]);
      });
    };
  };
  decode::addElementwiseIds(t, unary, binary);
  t.push_back({"where", inOrder(cpu::where)});
  t.push_back({"dequantize", [](const Decoder &d) -> StatusOr<Body> {
                 RP_ASSIGN_OR_RETURN(kernels::QuantFormat format, decode::quantFormat(d));
                 const int64_t axis = d.i64Or("axis", 0);
                 return Body([format, axis](const Operands &in, const Results &out) {
                   return cpu::dequantize(*in[0], format, axis, *out[0]);
                 });
               }});
  t.push_back({"cast", inOrder(cpu::cast)});
}

// Contractions, reductions, normalisations, the loss.
void addRowOps(Table &t) {
  t.push_back({"matmul", [](const Decoder &d) -> StatusOr<Body> {
                 bool ta = d.flag("transpose_a"), tb = d.flag("transpose_b");
                 return Body([ta, tb](const Operands &in, const Results &out) {
                   return cpu::matmul(*in[0], *in[1], ta, tb, *out[0]);
                 });
               }});
  for (auto [id, kind] : {std::pair{"reduce_sum", cpu::ReduceKind::Sum},
                          std::pair{"reduce_mean", cpu::ReduceKind::Mean},
                          std::pair{"reduce_max", cpu::ReduceKind::Max}})
    t.push_back({id, [kind = kind](const Decoder &d) -> StatusOr<Body> {
                   std::vector<int64_t> axes = d.ints("axes");
                   bool keepdims = d.flag("keepdims");
                   return Body([kind, axes = std::move(axes), keepdims](const Operands &in,
                                                                        const Results &out) {
                     return cpu::reduce(kind, *in[0], axes, keepdims, *out[0]);
                   });
                 }});
  for (auto [id, log] : {std::pair{"softmax", false}, std::pair{"log_softmax", true}})
    t.push_back({id, [log = log](const Decoder &d) -> StatusOr<Body> {
                   int64_t axis = d.i64("axis");
                   return Body([axis, log](const Operands &in, const Results &out) {
                     return cpu::softmax(*in[0], axis, log, *out[0]);
                   });
                 }});
  t.push_back({"cumsum", [](const Decoder &d) -> StatusOr<Body> {
                 int64_t axis = d.i64("axis");
                 bool exclusive = d.flag("exclusive"), reverse = d.flag("reverse");
                 return Body([=](const Operands &in, const Results &out) {
                   return cpu::cumsum(*in[0], axis, exclusive, reverse, *out[0]);
                 });
               }});
  t.push_back({"layer_norm", [](const Decoder &d) -> StatusOr<Body> {
                 int64_t axis = d.i64("axis");
                 double epsilon = d.f64("epsilon");
                 return Body([axis, epsilon](const Operands &in, const Results &out) {
                   return cpu::layerNorm(*in[0], *in[1], in.size() > 2 ? in[2] : nullptr, axis,
                                         epsilon, *out[0]);
                 });
               }});
  t.push_back({"rms_norm", [](const Decoder &d) -> StatusOr<Body> {
                 int64_t axis = d.i64("axis");
                 double epsilon = d.f64("epsilon");
                 return Body([axis, epsilon](const Operands &in, const Results &out) {
                   return cpu::rmsNorm(*in[0], *in[1], axis, epsilon, *out[0]);
                 });
               }});
  t.push_back({"rms_norm_vjp", [](const Decoder &d) -> StatusOr<Body> {
                 int64_t axis = d.i64("axis");
                 double epsilon = d.f64("epsilon");
                 return Body([axis, epsilon](const Operands &in, const Results &out) {
                   return cpu::rmsNormVjp(*in[0], *in[1], *in[2], axis, epsilon, *out[0],
                                          *out[1]);
                 });
               }});
  t.push_back({"cross_entropy", [](const Decoder &d) -> StatusOr<Body> {
                 RP_ASSIGN_OR_RETURN(cpu::LossReduction reduction, decode::lossReduction(d));
                 int64_t ignoreIndex = d.i64("ignore_index");
                 return Body([reduction, ignoreIndex](const Operands &in, const Results &out) {
                   return cpu::crossEntropy(*in[0], *in[1], ignoreIndex, reduction, *out[0]);
                 });
               }});
  t.push_back({"linear_cross_entropy", [](const Decoder &d) -> StatusOr<Body> {
                 RP_ASSIGN_OR_RETURN(cpu::LossReduction reduction, decode::lossReduction(d));
                 int64_t ignoreIndex = d.i64("ignore_index"), chunk = d.i64Or("chunk_rows", 0);
                 return Body([=](const Operands &in, const Results &out) {
                   return cpu::linearCrossEntropy(*in[0], *in[1], *in[2], ignoreIndex, reduction,
                                                  chunk, *out[0], in.size() > 3 ? in[3] : nullptr);
                 });
               }});
  t.push_back({"linear_cross_entropy_vjp", [](const Decoder &d) -> StatusOr<Body> {
                 RP_ASSIGN_OR_RETURN(cpu::LossReduction reduction, decode::lossReduction(d));
                 int64_t ignoreIndex = d.i64("ignore_index"), chunk = d.i64Or("chunk_rows", 0);
                 return Body([=](const Operands &in, const Results &out) {
                   return cpu::linearCrossEntropyVjp(
                       *in[0], *in[1], *in[2], *in[3], ignoreIndex, reduction, chunk, *out[0],
                       *out[1], *out[2], in.size() > 4 ? in[4] : nullptr,
                       out.size() > 3 ? out[3] : nullptr);
                 });
               }});
}

// Shape ops; `reshape` and `copy` copy bytes (cpu::copyInto).
void addShapeOps(Table &t) {
  t.push_back({"reshape", inOrder(cpu::copyInto)});
  t.push_back({"transpose", [](const Decoder &d) -> StatusOr<Body> {
                 std::vector<int64_t> perm = d.ints("permutation");
                 return Body([perm = std::move(perm)](const Operands &in, const Results &out) {
                   return cpu::transpose(*in[0], perm, *out[0]);
                 });
               }});
  t.push_back({"expand", inOrder(cpu::expand)});
  t.push_back({"concat", [](const Decoder &d) -> StatusOr<Body> {
                 int64_t axis = d.i64("axis");
                 return Body([axis](const Operands &in, const Results &out) {
                   return cpu::concat(in, axis, *out[0]);
                 });
               }});
  t.push_back({"slice", [](const Decoder &d) -> StatusOr<Body> {
                 RP_ASSIGN_OR_RETURN(decode::SliceAttrs s, decode::sliceAttrs(d));
                 return Body([s = std::move(s)](const Operands &in, const Results &out) {
                   return cpu::slice(*in[0], s.axes, s.starts, s.ends, s.steps, *out[0]);
                 });
               }});
  t.push_back({"split", [](const Decoder &d) -> StatusOr<Body> {
                 // cpu::split takes the pieces' sizes from the results; `sizes` must agree.
                 RP_RETURN_IF_ERROR(decode::checkSplitSizes(d));
                 int64_t axis = d.i64("axis");
                 return Body([axis](const Operands &in, const Results &out) {
                   return cpu::split(*in[0], axis, out);
                 });
               }});
  // Not a graph op: copies operand 0 into result 0 (the same type).
  t.push_back({"copy", [](const Decoder &d) -> StatusOr<Body> {
                 if (d.results()[0].shape != d.operands()[0].shape)
                   return d.fail("result 0 is " + typeText(d.results()[0]) +
                                 "; a copy has its operand's type (" + typeText(d.operands()[0]) +
                                 ")");
                 return inOrder(cpu::copyInto)(d);
               }});
}

// Gathers and the scatters (their VJPs, slice's, and the overwriting ones).
void addGathers(Table &t) {
  t.push_back({"gather", axisPairBody<cpu::gather>});
  t.push_back({"gather_elements", axisPairBody<cpu::gatherElements>});
  t.push_back({"scatter_add", axisPairBody<cpu::scatterAdd>});
  t.push_back({"scatter_elements_add", axisPairBody<cpu::scatterElementsAdd>});
  t.push_back({"scatter", axisTripleBody<cpu::scatter>});
  t.push_back({"scatter_elements", axisTripleBody<cpu::scatterElements>});
  t.push_back({"top_k", [](const Decoder &d) -> StatusOr<Body> {
                 int64_t k = d.i64("k"), axis = d.i64("axis");
                 bool smallest = d.flag("smallest");
                 return Body([k, axis, smallest](const Operands &in, const Results &out) {
                   return cpu::topK(*in[0], k, axis, !smallest, *out[0]);
                 });
               }});
  t.push_back({"slice_scatter", [](const Decoder &d) -> StatusOr<Body> {
                 RP_ASSIGN_OR_RETURN(decode::SliceAttrs s, decode::sliceAttrs(d));
                 return Body([s = std::move(s)](const Operands &in, const Results &out) {
                   return cpu::sliceScatter(*in[0], s.axes, s.starts, s.ends, s.steps, *out[0]);
                 });
               }});
}

// Generators. graph.range (Ops.cpp RangeOp::verify): an integer result has integer bounds and
// is computed exactly (rangeInt, which also checks the length); a float result takes int or
// float bounds as doubles (Evaluator's RangeOp case).
void addGenerators(Table &t) {
  t.push_back({"range", [](const Decoder &d) -> StatusOr<Body> {
                 const pb::Attribute &start = d.attr("start"), &limit = d.attr("limit"),
                                     &delta = d.attr("delta");
                 if (d.results()[0].dtype != DType::F32) {
                   RP_RETURN_IF_ERROR(decode::checkIntegerRangeBounds(d));
                   int64_t s = start.i(), l = limit.i(), dt = delta.i();
                   return Body([s, l, dt](const Operands &, const Results &out) {
                     return cpu::rangeInt(s, l, dt, *out[0]);
                   });
                 }
                 double s = decode::rangeBound(start), l = decode::rangeBound(limit),
                        dt = decode::rangeBound(delta);
                 return Body([s, l, dt](const Operands &, const Results &out) {
                   return cpu::range(s, l, dt, *out[0]);
                 });
               }});
  t.push_back({"trilu", [](const Decoder &d) -> StatusOr<Body> {
                 int64_t k = d.i64("k");
                 bool upper = d.flag("upper");
                 return Body([k, upper](const Operands &in, const Results &out) {
                   return cpu::trilu(*in[0], k, upper, *out[0]);
                 });
               }});
}

// Fused transformer ops.
void addFused(Table &t) {
  t.push_back({"swiglu", inOrder(cpu::swiglu)});
  t.push_back({"swiglu_vjp", [](const Decoder &) -> StatusOr<Body> {
                 return Body([](const Operands &in, const Results &out) {
                   return cpu::swigluVjp(*in[0], *in[1], *in[2], *out[0], *out[1]);
                 });
               }});
  t.push_back({"rope_vjp", [](const Decoder &d) -> StatusOr<Body> {
                 bool interleaved = d.flag("interleaved");
                 return Body([interleaved](const Operands &in, const Results &out) {
                   return cpu::ropeVjp(*in[0], *in[1], *in[2], *out[0], interleaved);
                 });
               }});
  t.push_back({"rope", [](const Decoder &d) -> StatusOr<Body> {
                 bool interleaved = d.flag("interleaved");
                 return Body([interleaved](const Operands &in, const Results &out) {
                   return cpu::rope(*in[0], *in[1], *in[2], *out[0], interleaved);
                 });
               }});
  t.push_back({"attention", [](const Decoder &d) -> StatusOr<Body> {
                 double scale = d.f64("scale");
                 bool causal = d.flag("causal");
                 int64_t window = d.i64Or("window", 0);
                 double softcap = d.f64Or("softcap", 0.0);
                 return Body([=](const Operands &in, const Results &out) {
                   return cpu::attention(*in[0], *in[1], *in[2], scale, causal, *out[0],
                                         in.size() > 3 ? in[3] : nullptr, window, softcap);
                 });
               }});
  t.push_back({"attention_vjp", [](const Decoder &d) -> StatusOr<Body> {
                 double scale = d.f64("scale");
                 bool causal = d.flag("causal");
                 int64_t window = d.i64Or("window", 0);
                 double softcap = d.f64Or("softcap", 0.0);
                 return Body([=](const Operands &in, const Results &out) {
                   return cpu::attentionVjp(*in[0], *in[1], *in[2], *in[3], *in[4], scale, causal,
                                            *out[0], *out[1], *out[2],
                                            in.size() > 5 ? in[5] : nullptr,
                                            out.size() > 3 ? out[3] : nullptr, window, softcap);
                 });
               }});
}

// Routed experts in grouped-GEMM form.
void addRoutedExperts(Table &t) {
  t.push_back({"moe_sort", [](const Decoder &d) -> StatusOr<Body> {
                 int64_t experts = d.i64("num_experts");
                 return Body([experts](const Operands &in, const Results &out) -> Status {
                   if (out[1]->rank() != 1 || out[1]->dim(0) != experts + 1)
                     return invalidArgument("moe_sort: offsets is " +
                                            formatShape(out[1]->shape()) + ", expected [" +
                                            std::to_string(experts + 1) + "] (num_experts + 1)");
                   return cpu::moeSort(*in[0], *out[0], *out[1]);
                 });
               }});
  t.push_back({"moe_dispatch", inOrder(cpu::moeDispatch)});
  t.push_back({"moe_combine", inOrder(cpu::moeCombine)});
  t.push_back({"grouped_matmul", [](const Decoder &d) -> StatusOr<Body> {
                 bool tb = d.flag("transpose_b");
                 return Body([tb](const Operands &in, const Results &out) {
                   return cpu::groupedMatmul(*in[0], *in[1], *in[2], tb, *out[0]);
                 });
               }});
  t.push_back({"grouped_matmul_wgrad", inOrder(cpu::groupedMatmulWgrad)});
}

} // namespace

const CpuBuilder *findCpuBuilder(std::string_view id) {
  static const decode::KernelTable<CpuBuilder> table(
      {addElementwise, addRowOps, addShapeOps, addGathers, addGenerators, addFused,
       addRoutedExperts});
  return table.find(id);
}

} // namespace rp::runtime
