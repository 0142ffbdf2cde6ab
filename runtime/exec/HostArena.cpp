//===- HostArena.cpp - The host memory of a training run ------------------===//

#include "runtime/exec/HostArena.h"

#include "kernels/cpu/Cast.h"
#include "kernels/cpu/Quantize.h"
#include "base/HostTensor.h"
#include "base/ParamInit.h"
#include "runtime/optim/AdamW.h"
#include "runtime/plan/Instruction.h"
#include "runtime/plan/PlanMemoryCheck.h"
#include "runtime/plan/PlanValidator.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rp::runtime {

namespace {
constexpr int64_t kPage = 4096;
} // namespace

void HostArena::Free::operator()(uint8_t *p) const {
  if (mapped)
    ::munmap(p, mapped);
  else
    std::free(p);
}

HostArena::HostArena(const rp::plan::Plan &plan)
    : plan_(&plan),
      bytes_(static_cast<int64_t>(hostArenaBytes(plan))),
      computeDType_(fromPlanDType(plan.config().compute_dtype()).value_or(DType::F32)) {}

int64_t HostArena::roundedBytes() const { return (bytes_ + kPage - 1) / kPage * kPage; }

StatusOr<HostArena> HostArena::reserve(const rp::plan::Plan &plan) {
  HostArena arena(plan);
  const size_t rounded = static_cast<size_t>(arena.roundedBytes());
  if (rounded > 0) {
    void *p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      return resourceExhausted("cannot reserve " + std::to_string(arena.bytes_) +
                               " bytes of address space for the host arena: " +
                               std::strerror(errno));
    arena.memory_ = std::unique_ptr<uint8_t, Free>(static_cast<uint8_t *>(p), Free{rounded});
    arena.base_ = static_cast<uint8_t *>(p);
  }
  return arena;
}

StatusOr<HostArena> HostArena::create(const rp::plan::Plan &plan) {
  HostArena arena(plan);
  const size_t rounded = static_cast<size_t>(arena.roundedBytes());
  if (rounded > 0) {
    auto *p = static_cast<uint8_t *>(std::aligned_alloc(kPage, rounded));
    if (!p)
      return resourceExhausted("cannot allocate the host arena of " +
                               std::to_string(arena.bytes_) +
                               " bytes (weights, fp32 master weights, AdamW moments, "
                               "gradients and two copies of the activation records)");
    arena.memory_.reset(p);
    arena.base_ = p;
    arena.zeroFill(rounded);
  }
  return arena;
}

void HostArena::zeroFill(size_t rounded) {
  // The optimizer state and the gradient slots first, each param's range by the OpenMP threads
  // that stream it in AdamW (firstTouch): with bound threads on a machine of several memory
  // nodes its pages then sit on their nodes. Then the rest from this thread.
  std::vector<std::pair<size_t, size_t>> touched; // [begin, end) byte ranges from base_
  auto touch = [&](float *x, int64_t n) {
    firstTouch(x, n);
    const size_t begin = static_cast<size_t>(reinterpret_cast<uint8_t *>(x) - base_);
    touched.emplace_back(begin, begin + static_cast<size_t>(n) * sizeof(float));
  };
  for (int i = 0; i < plan_->params_size(); ++i) {
    const rp::plan::Param &p = plan_->params(i);
    if (!p.trainable())
      continue;
    const int64_t n = paramElements(i);
    touch(grads() + p.grad_offset() / 4, n);
    if (!p.has_primary())
      for (float *region : {master(), moment1(), moment2()})
        touch(region + p.state_offset() / 4, n);
  }
  std::sort(touched.begin(), touched.end());
  size_t at = 0;
  for (const auto &[begin, end] : touched) {
    if (begin > at)
      std::memset(base_ + at, 0, begin - at);
    at = std::max(at, end);
  }
  if (rounded > at)
    std::memset(base_ + at, 0, rounded - at);
}

uint8_t *HostArena::record(int parity, int64_t microBatch) {
  const rp::plan::HostArena &h = plan_->host_arena();
  return base_ + h.weights() + 3 * h.state() + h.grads() + parity * h.activations() +
         microBatch * h.record();
}

int64_t HostArena::paramElements(int index) const {
  return static_cast<int64_t>(elementCount(plan_->params(index).type()));
}

Status HostArena::writeComputeWeights(int index) {
  const rp::plan::Param &p = plan_->params(index);
  return rp::runtime::writeComputeWeights(master() + p.state_offset() / 4, computeDType_,
                                          weights() + p.weight_offset(), paramElements(index));
}

Status HostArena::loadParam(int index, const SafetensorsTensorView *t, const std::string &file) {
  const rp::plan::Param &p = plan_->params(index);
  std::optional<DType> stored = dtypeOf(p.type());
  if (!stored)
    return invalidArgument("param '" + p.name() + "' has an invalid dtype");
  const std::vector<int64_t> shape = shapeOf(p.type());
  RP_ASSIGN_OR_RETURN(HostTensor value, HostTensor::create(*stored, shape));
  if (t && t->dtype != fromRuntimeDType(*stored)) {
    // A floating-point param from an F16 or BF16 checkpoint: to the plan's f32, exactly.
    if (*stored != DType::F32 || t->shape != shape)
      return invalidArgument(file + ": tensor '" + p.name() + "' has dtype " +
                             safetensorsDTypeName(t->dtype) + " " + formatShape(t->shape) +
                             "; the plan expects " + dtypeName(*stored) + " " + formatShape(shape));
    Status converted = convertToFloat32(*t, value.data<float>());
    if (!converted.ok())
      return Status(converted.code(), file + ": " + converted.message());
  } else if (t) {
    if (t->size != value.byteSize())
      return invalidArgument(file + ": tensor '" + p.name() + "' has " + std::to_string(t->size) +
                             " bytes; the plan expects " + std::to_string(value.byteSize()));
    if (t->size)
      std::memcpy(value.raw(), t->data, t->size);
  } else if (p.init() != rp::plan::PARAM_INIT_STORED) {
    ParamInit kind =
        p.init() == rp::plan::PARAM_INIT_ZEROS ? ParamInit::Zeros : ParamInit::KaimingUniform;
    RP_RETURN_IF_ERROR(initParam(kind, p.name(), value));
  } else {
    return notFound(file + ": no tensor '" + p.name() + "'");
  }
  if (!isFloat(*stored)) {
    std::memcpy(weights() + p.weight_offset(), value.raw(), value.byteSize());
    return okStatus();
  }
  if (p.has_quant()) { // a frozen f32 weight (validated): quantized as it is loaded
    const auto format = static_cast<kernels::QuantFormat>(p.quant().format() - 1);
    RP_ASSIGN_OR_RETURN(kernels::QuantLayout layout,
                        kernels::quantLayout(format, shape, p.quant().axis(), p.name()));
    Status q = kernels::cpu::quantizeWeight(value.data<float>(), shape, layout, p.quant().axis(),
                                            weights() + p.weight_offset(), file + ": tensor '" +
                                                                               p.name() + "'");
    return q;
  }
  RP_RETURN_IF_ERROR(kernels::cpu::cast(value.raw(), *stored, weights() + p.weight_offset(),
                                        computeDType_, value.numElements()));
  if (p.trainable())
    RP_RETURN_IF_ERROR(kernels::cpu::cast(value.raw(), *stored, master() + p.state_offset() / 4,
                                          DType::F32, value.numElements()));
  return okStatus();
}

int64_t HostArena::paramWeightBytes(int index) const {
  const rp::plan::Param &p = plan_->params(index);
  if (p.has_quant())
    return p.quant().bytes();
  const DType stored = dtypeOf(p.type()).value_or(DType::F32);
  return paramElements(index) * static_cast<int64_t>(dtypeSize(isFloat(stored) ? computeDType_ : stored));
}

Status HostArena::frozenWeightsF32(int index, float *out) const {
  const rp::plan::Param &p = plan_->params(index);
  const uint8_t *w = base_ + p.weight_offset();
  if (!p.has_quant())
    return kernels::cpu::cast(w, computeDType_, out, DType::F32, paramElements(index));
  const std::vector<int64_t> shape = shapeOf(p.type());
  HostTensor storage = HostTensor::view(DType::U8, {p.quant().bytes()}, const_cast<uint8_t *>(w));
  HostTensor values = HostTensor::view(DType::F32, shape, out);
  return kernels::cpu::dequantize(storage, static_cast<kernels::QuantFormat>(p.quant().format() - 1),
                                  p.quant().axis(), values);
}

void HostArena::copyEntryWeights(int from, int to) {
  std::memcpy(weights() + plan_->params(to).weight_offset(),
              weights() + plan_->params(from).weight_offset(),
              static_cast<size_t>(paramWeightBytes(from)));
}

Status HostArena::loadWeights(const WeightSource &source) {
  // A param read by several layers has an entry per reader: each gets the tensor.
  std::unordered_map<std::string, std::vector<int>> byName;
  for (int i = 0; i < plan_->params_size(); ++i)
    byName[plan_->params(i).name()].push_back(i);
  std::vector<bool> loaded(static_cast<size_t>(plan_->params_size()), false);
  RP_RETURN_IF_ERROR(source.readTensors([&](const SafetensorsTensorView &t) -> Status {
    auto it = byName.find(t.name);
    if (it == byName.end())
      return okStatus(); // a tensor no param names (--allow-extra-weights)
    const std::vector<int> &entries = it->second;
    RP_RETURN_IF_ERROR(loadParam(entries[0], &t, source.shards()[source.find(t.name)->shard]));
    for (int i : entries) {
      loaded[static_cast<size_t>(i)] = true;
      if (i != entries[0])
        copyEntryWeights(entries[0], i);
    }
    return okStatus();
  }));
  for (int i = 0; i < plan_->params_size(); ++i)
    if (!loaded[static_cast<size_t>(i)])
      RP_RETURN_IF_ERROR(loadParam(i, nullptr, source.describe()));
  return okStatus();
}

} // namespace rp::runtime
