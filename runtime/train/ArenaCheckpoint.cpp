//===- ArenaCheckpoint.cpp - A host arena's state as a checkpoint (rp-run) -===//

#include "runtime/train/ArenaCheckpoint.h"

#include "kernels/cpu/Cast.h"
#include "runtime/plan/PlanValidator.h"

#include <cstring>
#include <set>

namespace rp::runtime {

namespace pb = rp::plan;

namespace {

SafetensorsTensor tensorOf(const std::string &name, DType dtype, const pb::TensorType &type,
                           const void *data, int64_t elements) {
  return SafetensorsTensor{name, fromRuntimeDType(dtype),
                           std::vector<int64_t>(type.shape().begin(), type.shape().end()), data,
                           static_cast<size_t>(elements) * dtypeSize(dtype)};
}

/// U8 [bytes]: the storage of quantized param `p`.
pb::TensorType quantStorageType(const pb::Param &p) {
  pb::TensorType t;
  t.set_dtype(pb::U8);
  t.add_shape(p.quant().bytes());
  return t;
}

/// Copies checkpoint tensor `name` of `file` (dtype, shape checked) to `dst`.
Status restoreTensor(const SafetensorsFile &file, const std::string &name, DType dtype,
                     const pb::TensorType &type, void *dst) {
  const SafetensorsTensorView *t = file.find(name);
  if (!t)
    return invalidArgument(file.path() + ": the checkpoint has no tensor '" + name +
                           "' (a checkpoint of another plan?)");
  std::vector<int64_t> shape(type.shape().begin(), type.shape().end());
  if (toRuntimeDType(t->dtype) != dtype || t->shape != shape)
    return invalidArgument(file.path() + ": tensor '" + name + "' is " +
                           safetensorsDTypeName(t->dtype) + formatShape(t->shape) +
                           "; the plan expects " + dtypeName(dtype) + formatShape(shape));
  if (t->size)
    std::memcpy(dst, t->data, t->size);
  return okStatus();
}

} // namespace

StatusOr<std::unique_ptr<CheckpointTensors>> checkpointOf(HostArena &host, int64_t step,
                                                          uint64_t seed) {
  const pb::Plan &plan = host.plan();
  auto out = std::make_unique<CheckpointTensors>();
  out->data.step = step;
  const bool async = plan.config().update() == pb::ASYNC;
  out->data.metadata = {{"producer", "rp-run"},
                        {"update", async ? "async" : "sync"},
                        {"seed", std::to_string(seed)},
                        {"micro_batches", std::to_string(plan.config().micro_batches())},
                        {"compute_dtype", dtypeName(host.computeDType())}};
  std::set<std::string> written; // a param read by several layers is saved once
  for (int i = 0; i < plan.params_size(); ++i) {
    const pb::Param &p = plan.params(i);
    if (!written.insert(p.name()).second)
      continue;
    const int64_t n = host.paramElements(i);
    const DType stored = fromPlanDType(p.type().dtype()).value_or(DType::F32);
    uint8_t *weights = host.weights() + p.weight_offset();
    if (p.trainable()) {
      const int64_t at = p.state_offset() / 4;
      out->data.model.push_back(tensorOf(p.name(), DType::F32, p.type(), host.master() + at, n));
      out->data.optimizer.push_back(
          tensorOf("m." + p.name(), DType::F32, p.type(), host.moment1() + at, n));
      out->data.optimizer.push_back(
          tensorOf("v." + p.name(), DType::F32, p.type(), host.moment2() + at, n));
      if (async) // the compute weights the next iteration uses (one step behind the master)
        out->data.optimizer.push_back(
            tensorOf("weights." + p.name(), host.computeDType(), p.type(), weights, n));
    } else if (p.has_quant()) {
      // A quantized base weight: the model file gets the values the GEMMs read (f32,
      // loadable as they are), the optimizer file the storage itself, which a resume restores
      // (quantizing the dequantized values again need not give the same storage).
      out->scratch.emplace_back(static_cast<size_t>(n) * 4);
      auto *values = reinterpret_cast<float *>(out->scratch.back().data());
      RP_RETURN_IF_ERROR(host.frozenWeightsF32(i, values));
      out->data.model.push_back(tensorOf(p.name(), DType::F32, p.type(), values, n));
      out->data.optimizer.push_back(tensorOf("quant." + p.name(), DType::U8,
                                             quantStorageType(p), weights, p.quant().bytes()));
    } else if (!isFloat(stored) || host.computeDType() == stored) {
      out->data.model.push_back(tensorOf(p.name(), stored, p.type(), weights, n));
    } else {
      out->scratch.emplace_back(static_cast<size_t>(n) * dtypeSize(stored));
      RP_RETURN_IF_ERROR(kernels::cpu::cast(weights, host.computeDType(),
                                            out->scratch.back().data(), stored, n));
      out->data.model.push_back(
          tensorOf(p.name(), stored, p.type(), out->scratch.back().data(), n));
    }
  }
  return out;
}

Status restoreCheckpoint(HostArena &host, const LoadedCheckpoint &ckpt) {
  const pb::Plan &plan = host.plan();
  const bool async = plan.config().update() == pb::ASYNC;
  auto meta = ckpt.metadata.find("update");
  if (meta != ckpt.metadata.end() && meta->second != (async ? "async" : "sync"))
    return invalidArgument("the checkpoint was written by a run with " + meta->second +
                           " updates; this plan uses " + (async ? "async" : "sync"));
  for (int i = 0; i < plan.params_size(); ++i) {
    const pb::Param &p = plan.params(i);
    const DType stored = fromPlanDType(p.type().dtype()).value_or(DType::F32);
    uint8_t *weights = host.weights() + p.weight_offset();
    if (p.has_quant()) {
      RP_RETURN_IF_ERROR(
          restoreTensor(ckpt.optimizer, "quant." + p.name(), DType::U8, quantStorageType(p), weights));
      continue;
    }
    if (!p.trainable()) {
      std::vector<uint8_t> value(static_cast<size_t>(host.paramElements(i)) * dtypeSize(stored));
      RP_RETURN_IF_ERROR(restoreTensor(ckpt.model, p.name(), stored, p.type(), value.data()));
      RP_RETURN_IF_ERROR(kernels::cpu::cast(value.data(), stored, weights,
                                            isFloat(stored) ? host.computeDType() : stored,
                                            host.paramElements(i)));
      continue;
    }
    if (p.has_primary()) { // a copy: the owner's (earlier) entry restored master and moments
      RP_RETURN_IF_ERROR(async ? restoreTensor(ckpt.optimizer, "weights." + p.name(),
                                               host.computeDType(), p.type(), weights)
                               : host.writeComputeWeights(i));
      continue;
    }
    const int64_t at = p.state_offset() / 4;
    RP_RETURN_IF_ERROR(restoreTensor(ckpt.model, p.name(), DType::F32, p.type(), host.master() + at));
    RP_RETURN_IF_ERROR(
        restoreTensor(ckpt.optimizer, "m." + p.name(), DType::F32, p.type(), host.moment1() + at));
    RP_RETURN_IF_ERROR(
        restoreTensor(ckpt.optimizer, "v." + p.name(), DType::F32, p.type(), host.moment2() + at));
    if (async)
      RP_RETURN_IF_ERROR(restoreTensor(ckpt.optimizer, "weights." + p.name(), host.computeDType(),
                                       p.type(), weights));
    else
      RP_RETURN_IF_ERROR(host.writeComputeWeights(i));
  }
  return okStatus();
}

} // namespace rp::runtime
