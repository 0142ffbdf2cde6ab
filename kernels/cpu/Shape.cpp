//===- Shape.cpp - Data-movement graph ops on the CPU ---------------------===//

#include "kernels/cpu/Shape.h"

#include "kernels/cpu/KernelSupport.h"

#include <cstring>

namespace rp::kernels::cpu {

using namespace detail;
using base::formatShape;
using base::invalidArgument;
using base::okStatus;

Status transpose(const HostTensor &x, const std::vector<int64_t> &perm, HostTensor &out) {
  const char *op = "transpose";
  RP_RETURN_IF_ERROR(checkDType(op, "x", x, kAllTypes));
  std::vector<bool> seen(x.shape().size(), false);
  bool valid = perm.size() == x.shape().size();
  for (size_t i = 0; valid && i < perm.size(); ++i) {
    valid = perm[i] >= 0 && perm[i] < x.rank() && !seen[perm[i]];
    if (valid)
      seen[perm[i]] = true;
  }
  if (!valid)
    return invalidArgument(std::string(op) + ": expected a permutation of [0, " +
                           std::to_string(x.rank()) + "), got " + formatShape(perm));
  const Shape xStrides = contiguousStrides(x.shape());
  Shape shape(perm.size()), strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    shape[i] = x.dim(perm[i]);
    strides[i] = xStrides[perm[i]];
  }
  RP_RETURN_IF_ERROR(checkType(op, "out", out, x.dtype(), shape));
  stridedCopy(x, strides, 0, out);
  return okStatus();
}

Status expand(const HostTensor &x, HostTensor &out) {
  const char *op = "expand";
  RP_RETURN_IF_ERROR(checkDType(op, "x", x, kAllTypes));
  RP_RETURN_IF_ERROR(checkType(op, "out", out, x.dtype(), out.shape()));
  RP_RETURN_IF_ERROR(checkBroadcastsTo(op, "x", x.shape(), out.shape()));
  stridedCopy(x, broadcastStrides(x.shape(), out.shape()), 0, out);
  return okStatus();
}

Status concat(const std::vector<const HostTensor *> &inputs, int64_t axis, HostTensor &out) {
  const char *op = "concat";
  if (inputs.empty())
    return invalidArgument(std::string(op) + ": expected at least one input");
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i])
      return invalidArgument(std::string(op) + ": input " + std::to_string(i) + " is null");
  const HostTensor &first = *inputs.front();
  RP_RETURN_IF_ERROR(checkDType(op, "input 0", first, kAllTypes));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, first.rank()));
  Shape shape = first.shape();
  for (size_t i = 1; i < inputs.size(); ++i) {
    const HostTensor &t = *inputs[i];
    const std::string what = "input " + std::to_string(i);
    RP_RETURN_IF_ERROR(checkSameDType(op, "input 0", first, what.c_str(), t));
    Shape expected = first.shape();
    expected[axis] = t.rank() == first.rank() ? t.dim(axis) : 0;
    if (t.shape() != expected)
      return invalidArgument(std::string(op) + ": " + what + " has shape " +
                             formatShape(t.shape()) + ", expected " + formatShape(first.shape()) +
                             " except in dimension " + std::to_string(axis));
    shape[axis] += t.dim(axis);
  }
  RP_RETURN_IF_ERROR(checkType(op, "out", out, first.dtype(), shape));
  const int64_t outer = product(shape, 0, axis);
  const size_t rowBytes = out.byteSize() / static_cast<size_t>(outer > 0 ? outer : 1);
  auto *dst = static_cast<unsigned char *>(out.raw());
#pragma omp parallel for schedule(static) if (out.numElements() >= kParallelMinElements)
  for (int64_t o = 0; o < outer; ++o) {
    size_t at = static_cast<size_t>(o) * rowBytes;
    for (const HostTensor *t : inputs) {
      const size_t bytes = t->byteSize() / static_cast<size_t>(outer);
      if (bytes > 0)
        std::memcpy(dst + at, static_cast<const unsigned char *>(t->raw()) + o * bytes, bytes);
      at += bytes;
    }
  }
  return okStatus();
}

Status slice(const HostTensor &x, const std::vector<int64_t> &axes,
             const std::vector<int64_t> &starts, const std::vector<int64_t> &ends,
             const std::vector<int64_t> &steps, HostTensor &out) {
  const char *op = "slice";
  RP_RETURN_IF_ERROR(checkDType(op, "x", x, kAllTypes));
  base::StatusOr<SliceGeometry> g = sliceGeometry(op, x.shape(), axes, starts, ends, steps);
  if (!g.ok())
    return g.status();
  RP_RETURN_IF_ERROR(checkType(op, "out", out, x.dtype(), g->shape));
  stridedCopy(x, g->strides, g->base, out);
  return okStatus();
}

Status split(const HostTensor &x, int64_t axis, const std::vector<HostTensor *> &outs) {
  const char *op = "split";
  RP_RETURN_IF_ERROR(checkDType(op, "x", x, kAllTypes));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, x.rank()));
  if (outs.empty())
    return invalidArgument(std::string(op) + ": expected at least one output");
  int64_t total = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    const std::string what = "out " + std::to_string(i);
    if (!outs[i])
      return invalidArgument(std::string(op) + ": " + what + " is null");
    Shape expected = x.shape();
    const HostTensor &o = *outs[i];
    expected[axis] = o.rank() == x.rank() ? o.dim(axis) : 0;
    RP_RETURN_IF_ERROR(checkType(op, what.c_str(), o, x.dtype(), expected));
    if (o.dim(axis) == 0)
      return invalidArgument(std::string(op) + ": " + what + " is " + o.typeString() +
                             ", expected a positive size along axis " + std::to_string(axis));
    total += o.dim(axis);
  }
  if (total != x.dim(axis)) {
    std::string sizes;
    for (const HostTensor *o : outs)
      sizes += (sizes.empty() ? "" : ", ") + std::to_string(o->dim(axis));
    return invalidArgument(std::string(op) + ": the outputs' sizes along axis " +
                           std::to_string(axis) + " (" + sizes + ") sum to " +
                           std::to_string(total) + ", expected " + std::to_string(x.dim(axis)));
  }
  const Shape xStrides = contiguousStrides(x.shape());
  int64_t at = 0;
  for (HostTensor *o : outs) {
    stridedCopy(x, xStrides, at * xStrides[axis], *o);
    at += o->dim(axis);
  }
  return okStatus();
}

Status copyInto(const HostTensor &x, HostTensor &out) {
  const char *op = "reshape";
  RP_RETURN_IF_ERROR(checkDType(op, "x", x, kAllTypes));
  if (out.dtype() != x.dtype() || out.numElements() != x.numElements())
    return invalidArgument(std::string(op) + ": out is " + out.typeString() + " (" +
                           std::to_string(out.numElements()) + " elements), expected " +
                           base::dtypeName(x.dtype()) + " with " +
                           std::to_string(x.numElements()) + " elements (x is " + x.typeString() +
                           ")");
  if (x.byteSize() > 0 && out.raw() != x.raw())
    std::memcpy(out.raw(), x.raw(), x.byteSize());
  return okStatus();
}

} // namespace rp::kernels::cpu
