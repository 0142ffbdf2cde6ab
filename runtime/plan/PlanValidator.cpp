//===- PlanValidator.cpp - Checks a plan before the runtime uses it -------===//
//
// One PlanChecker pass per family (PlanValidator.h lists them), in an order where each check
// may rely on the ones before it (a stage body check uses the byte sizes the buffer checks
// computed). Small helpers build the messages of each family, so that every message reads
// "invalid plan: <item>: <problem with the numbers>".
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanValidator.h"

#include "kernels/Quantization.h"
#include "kernels/Registry.h"
#include "runtime/plan/InstructionRules.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <unordered_map>
#include <vector>

namespace rp::runtime {
namespace {

namespace pb = rp::plan;
using kernels::KernelInfo;

//===----------------------------------------------------------------------===//
// Message helpers
//===----------------------------------------------------------------------===//

std::string str(int64_t v) { return std::to_string(v); }

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

Status fail(const std::string &message) { return invalidArgument("invalid plan: " + message); }

/// "stage 'F0'", or "stage #2" when the item has no name.
std::string named(const char *kind, const std::string &name, int64_t index) {
  if (name.empty())
    return std::string(kind) + " #" + str(index);
  return std::string(kind) + " '" + name + "'";
}

std::string dtypeText(int dtype) {
  std::optional<DType> d = fromPlanDType(dtype);
  return d ? std::string(dtypeName(*d)) : "dtype(" + str(dtype) + ")";
}

/// `index` lies in [0, size); otherwise "<what>: <field> 7 is out of range: <owner> has 3
/// <items>".
Status checkIndex(const std::string &what, const char *field, int64_t index, int64_t size,
                  const char *owner, const char *items) {
  if (index >= 0 && index < size)
    return okStatus();
  return fail(what + ": " + field + " " + str(index) + " is out of range: " + owner + " has " +
              str(size) + " " + items);
}

/// [offset, offset + bytes) lies in [0, limit); otherwise "<what>: offset 256 + 1024 bytes =
/// 1280 exceeds <limitName> (1024 bytes)".
Status checkExtent(const std::string &what, int64_t offset, int64_t bytes, int64_t limit,
                   const std::string &limitName) {
  if (offset < 0)
    return fail(what + ": negative offset " + str(offset));
  int64_t end = 0;
  bool overflow = __builtin_add_overflow(offset, bytes, &end);
  if (!overflow && end <= limit)
    return okStatus();
  return fail(what + ": offset " + str(offset) + " + " + str(bytes) +
              " bytes = " + (overflow ? std::string("(overflow)") : str(end)) + " exceeds " +
              limitName + " (" + str(limit) + " bytes)");
}

/// "[a, b)".
std::string range(int64_t begin, int64_t end) { return "[" + str(begin) + ", " + str(end) + ")"; }

/// The problem with `type`, or nullopt (then *elements and *bytes are set).
std::optional<std::string> typeProblem(const pb::TensorType &type, int64_t *elements,
                                       int64_t *bytes) {
  std::optional<DType> dtype = fromPlanDType(type.dtype());
  int64_t n = 1;
  for (int64_t d : type.shape()) {
    if (d < 0)
      return "type " + formatTensorType(type) + " has a negative dimension";
    if (__builtin_mul_overflow(n, d, &n) || n > kMaxPlanBytes)
      return "type " + formatTensorType(type) + " has more than 2^48 elements";
  }
  if (!dtype)
    return "type " + formatTensorType(type) + " has an unknown dtype";
  int64_t b = n * static_cast<int64_t>(dtypeSize(*dtype));
  if (b > kMaxPlanBytes)
    return "type " + formatTensorType(type) + " is " + str(b) + " bytes, more than 2^48";
  *elements = n;
  *bytes = b;
  return std::nullopt;
}

/// "2", "2 to 3", "at least 1".
std::string countText(int min, int max) {
  if (max == kernels::kVariadic)
    return "at least " + str(min);
  if (min == max)
    return str(min);
  return str(min) + " to " + str(max);
}

//===----------------------------------------------------------------------===//
// The checker
//===----------------------------------------------------------------------===//

class PlanChecker {
public:
  explicit PlanChecker(const pb::Plan &plan) : plan_(plan) {}

  Status run() {
    RP_RETURN_IF_ERROR(checkConfig());
    RP_RETURN_IF_ERROR(checkArenas());
    RP_RETURN_IF_ERROR(checkParams());
    RP_RETURN_IF_ERROR(checkExternalWeights());
    RP_RETURN_IF_ERROR(checkLayers());
    RP_RETURN_IF_ERROR(checkConstants());
    RP_RETURN_IF_ERROR(checkFunctions());
    RP_RETURN_IF_ERROR(checkHostBuffers());
    RP_RETURN_IF_ERROR(checkStageOrder());
    RP_RETURN_IF_ERROR(checkStageRegions());
    RP_RETURN_IF_ERROR(checkStageBodies());
    return checkOptimizerSteps();
  }

private:
  // ---- names ----
  std::string paramName(int64_t i) const { return named("param", plan_.params(i).name(), i); }
  std::string layerName(int64_t i) const { return named("layer", plan_.layers(i).name(), i); }
  std::string functionName(int64_t i) const {
    return named("function", plan_.functions(i).name(), i);
  }
  std::string bufferName(int64_t i) const {
    return named("host buffer", plan_.host_buffers(i).name(), i);
  }
  std::string stageName(int64_t i) const {
    const pb::Stage &s = plan_.stages(i);
    return named("stage", s.name(), i) + " (" + stageKindName(s.kind()) + ")";
  }

  /// The byte size of `type`, or a failure naming `what`.
  StatusOr<int64_t> bytesOf(const pb::TensorType &type, const std::string &what,
                            int64_t *elements = nullptr) const {
    int64_t n = 0, b = 0;
    if (std::optional<std::string> problem = typeProblem(type, &n, &b))
      return fail(what + ": " + *problem);
    if (elements)
      *elements = n;
    return b;
  }

  // ---- config and arenas ----
  Status checkConfig() {
    const pb::Config &c = plan_.config();
    const pb::AdamW &o = c.optimizer();
    auto unit = [](double b) { return b >= 0 && b < 1; };
    auto nonNegative = [](double v) { return std::isfinite(v) && v >= 0; };
    struct Rule {
      bool ok;
      std::string message;
    };
    const Rule rules[] = {
        {c.micro_batches() >= 1, "micro_batches " + str(c.micro_batches()) + " must be >= 1"},
        {c.gpus() >= 1, "gpus " + str(c.gpus()) + " must be >= 1"},
        {isPlanFloat(c.compute_dtype()),
         "compute_dtype " + dtypeText(c.compute_dtype()) + " must be f32, f16 or bf16"},
        {c.dispatch() == "round_robin",
         "dispatch '" + c.dispatch() + "' is not supported: expected 'round_robin'"},
        {pb::UpdateMode_IsValid(c.update()), "unknown update mode " + str(c.update())},
        {pb::RecomputeGrain_IsValid(c.recompute()),
         "unknown recompute grain " + str(c.recompute())},
        {std::isfinite(o.lr()) && o.lr() > 0, "optimizer lr " + num(o.lr()) + " must be > 0"},
        {unit(o.beta1()), "optimizer beta1 " + num(o.beta1()) + " must be in [0, 1)"},
        {unit(o.beta2()), "optimizer beta2 " + num(o.beta2()) + " must be in [0, 1)"},
        {std::isfinite(o.eps()) && o.eps() > 0, "optimizer eps " + num(o.eps()) + " must be > 0"},
        {nonNegative(o.weight_decay()),
         "optimizer weight_decay " + num(o.weight_decay()) + " must be >= 0"},
        {nonNegative(o.grad_clip()),
         "optimizer grad_clip " + num(o.grad_clip()) + " must be >= 0 (0: off)"},
    };
    for (const Rule &r : rules)
      if (!r.ok)
        return fail("config: " + r.message);
    computeSize_ = static_cast<int64_t>(dtypeSize(*fromPlanDType(c.compute_dtype())));
    return okStatus();
  }

  Status checkArenas() {
    const pb::HostArena &h = plan_.host_arena();
    const pb::DeviceArena &d = plan_.device_arena();
    const std::pair<const char *, int64_t> sizes[] = {
        {"host_arena.weights", h.weights()},           {"host_arena.state", h.state()},
        {"host_arena.grads", h.grads()},
        {"host_arena.activations", h.activations()},   {"host_arena.record", h.record()},
        {"device_arena.constants", d.constants()},     {"device_arena.slot", d.slot()},
        {"device_arena.activations", d.activations()}, {"device_arena.workspace", d.workspace()},
    };
    for (const auto &[name, size] : sizes)
      if (size < 0 || size % kPlanArenaAlignment != 0 || size > kMaxPlanBytes)
        return fail(std::string(name) + " " + str(size) + " must be a multiple of " +
                    str(kPlanArenaAlignment) + " bytes in [0, 2^48]");
    int64_t all = 0;
    if (__builtin_mul_overflow(plan_.config().micro_batches(), h.record(), &all) ||
        all != h.activations())
      return fail("host_arena.activations " + str(h.activations()) + " must be micro_batches " +
                  str(plan_.config().micro_batches()) + " * record " + str(h.record()));
    return okStatus();
  }

  // ---- params, layers, constants ----
  Status checkParams() {
    const pb::HostArena &h = plan_.host_arena();
    std::unordered_map<std::string, int> seen;
    for (int i = 0; i < plan_.params_size(); ++i) {
      const pb::Param &p = plan_.params(i);
      const std::string what = paramName(i);
      if (p.name().empty())
        return fail(what + ": a param needs a name (its key in the weights file)");
      auto [it, inserted] = seen.emplace(p.name(), i);
      if (!inserted)
        RP_RETURN_IF_ERROR(checkSharedParam(it->second, i));
      int64_t elements = 0;
      RP_ASSIGN_OR_RETURN(int64_t bytes, bytesOf(p.type(), what, &elements));
      RP_RETURN_IF_ERROR(
          checkIndex(what, "layer", p.layer(), plan_.layers_size(), "the plan", "layers"));
      const bool isFloat = isPlanFloat(p.type().dtype());
      if (isFloat && p.type().dtype() != pb::F32)
        return fail(what + ": type " + formatTensorType(p.type()) +
                    ": floating-point params are stored as f32 (the host weights hold them in "
                    "the compute dtype)");
      // The host weights hold floating-point params in the compute dtype, quantized ones in
      // their storage (kernels/Quantization.h).
      int64_t weightBytes = isFloat ? elements * computeSize_ : bytes;
      if (p.has_quant()) {
        RP_ASSIGN_OR_RETURN(weightBytes, quantizedWeightBytes(p, what, isFloat));
      }
      RP_RETURN_IF_ERROR(checkExtent(what + ": weights", p.weight_offset(), weightBytes,
                                     h.weights(), "host_arena.weights"));
      if (p.trainable()) {
        if (!isFloat)
          return fail(what + ": type " + formatTensorType(p.type()) +
                      ": only floating-point params can be trainable");
        RP_RETURN_IF_ERROR(checkExtent(what + ": fp32 state", p.state_offset(), 4 * elements,
                                       h.state(), "host_arena.state"));
        RP_RETURN_IF_ERROR(checkExtent(what + ": fp32 gradient", p.grad_offset(), 4 * elements,
                                       h.grads(), "host_arena.grads"));
      } else if (p.state_offset() != -1 || p.grad_offset() != -1 || p.has_primary()) {
        return fail(what + ": a frozen param has state_offset " + str(p.state_offset()) +
                    ", grad_offset " + str(p.grad_offset()) +
                    (p.has_primary() ? " and a primary entry" : "") +
                    ", expected -1, -1 and no primary");
      }
      if (p.has_primary() && inserted)
        return fail(what + ": names primary entry " + str(p.primary()) +
                    " but is the first entry of its name");
      switch (p.init()) {
      case pb::PARAM_INIT_STORED:
        break;
      case pb::PARAM_INIT_ZEROS:
      case pb::PARAM_INIT_KAIMING_UNIFORM:
        if (!isFloat)
          return fail(what + ": type " + formatTensorType(p.type()) +
                      ": only floating-point params can start without a stored value");
        if (p.init() == pb::PARAM_INIT_KAIMING_UNIFORM && p.type().shape_size() == 0)
          return fail(what + ": kaiming_uniform needs a rank >= 1 type (fan_in = shape[0])");
        break;
      default:
        return fail(what + ": unknown init " + str(p.init()));
      }
      paramElements_.push_back(elements);
      paramWeightBytes_.push_back(weightBytes);
    }
    return okStatus();
  }

  /// The storage bytes of quantized param `p`: a frozen f32 weight whose quant names a format
  /// and the layout's byte count for its shape.
  StatusOr<int64_t> quantizedWeightBytes(const pb::Param &p, const std::string &what,
                                         bool isFloat) {
    const pb::Quantization &q = p.quant();
    if (q.format() == pb::QUANT_NONE || !pb::QuantFormat_IsValid(q.format()))
      return fail(what + ": unknown quant format " + str(q.format()));
    if (p.trainable() || !isFloat)
      return fail(what + ": only frozen floating-point params are held quantized");
    const auto format = static_cast<kernels::QuantFormat>(q.format() - 1);
    std::vector<int64_t> shape(p.type().shape().begin(), p.type().shape().end());
    StatusOr<kernels::QuantLayout> layout = kernels::quantLayout(format, shape, q.axis(), what);
    if (!layout.ok())
      return fail(layout.status().message());
    if (layout->bytes != q.bytes())
      return fail(what + ": quant.bytes " + str(q.bytes()) + ", expected " +
                  str(layout->bytes) + " (" + kernels::quantFormatName(format) + " of " +
                  formatTensorType(p.type()) + ")");
    return layout->bytes;
  }

  /// Where the stored params' initial values lie: the weights file, or (weights_file empty)
  /// one external range per stored param name, whose dtype loads into the param (F32, F16 or
  /// BF16 for a floating-point param, the param's own dtype otherwise) and whose byte count is
  /// the shape's.
  Status checkExternalWeights() {
    const bool external = plan_.weights_file().empty();
    if (!external && plan_.external_weights_size() > 0)
      return fail("the plan names both a weights file ('" + plan_.weights_file() + "') and " +
                  str(plan_.external_weights_size()) + " external weights");
    std::unordered_map<std::string, int> params; // name -> first entry
    for (int i = 0; i < plan_.params_size(); ++i)
      params.emplace(plan_.params(i).name(), i);
    std::unordered_map<std::string, int> ranges;
    for (int k = 0; k < plan_.external_weights_size(); ++k) {
      const pb::ExternalWeight &w = plan_.external_weights(k);
      const std::string what = "external weight " + str(k) + " ('" + w.name() + "')";
      auto it = params.find(w.name());
      if (it == params.end())
        return fail(what + ": no param has this name");
      if (!ranges.emplace(w.name(), k).second)
        return fail(what + ": a second range for the same param");
      if (w.file().empty() || w.file()[0] != '/')
        return fail(what + ": the file '" + w.file() + "' is not an absolute path");
      const pb::TensorType &type = plan_.params(it->second).type();
      const bool isFloat = isPlanFloat(type.dtype());
      const bool loads = isFloat ? isPlanFloat(w.dtype()) : w.dtype() == type.dtype();
      pb::TensorType stored = type;
      stored.set_dtype(w.dtype());
      if (!loads || w.offset() < 0)
        return fail(what + ": " + formatTensorType(stored) + " at offset " + str(w.offset()) +
                    " does not load into the param's " + formatTensorType(type));
      RP_ASSIGN_OR_RETURN(int64_t bytes, bytesOf(stored, what));
      if (w.bytes() != bytes)
        return fail(what + ": " + str(w.bytes()) + " bytes, the param's shape as " +
                    formatTensorType(stored) + " needs " + str(bytes));
    }
    if (external)
      for (int i = 0; i < plan_.params_size(); ++i)
        if (plan_.params(i).init() == pb::PARAM_INIT_STORED &&
            !ranges.count(plan_.params(i).name()))
          return fail(paramName(i) + ": a stored param, but the plan has no weights file and "
                      "no external weight of this name");
    return okStatus();
  }

  /// Params `first` and `second` (> first) have one name: a param read by several layers,
  /// one entry per reading layer, all loaded from the same weights-file tensor. Frozen: each
  /// entry stands alone (rope tables). Trainable: `first` is the owner's entry (fp32 master,
  /// moments), `second` a copy with its own weights and gradient slot that names `first` as
  /// its primary and shares its state (dialects/Schedule/IR/SharedParams.h).
  Status checkSharedParam(int first, int second) {
    const pb::Param &a = plan_.params(first);
    const pb::Param &b = plan_.params(second);
    const std::string what =
        paramName(second) + ": declared twice (params " + str(first) + " and " + str(second) + ")";
    if (a.layer() == b.layer())
      return fail(what + " in layer " + str(b.layer()) +
                  ": a shared param has one entry per layer that reads it");
    if (a.type().SerializeAsString() != b.type().SerializeAsString() || a.init() != b.init() ||
        a.trainable() != b.trainable())
      return fail(what + ": the entries of a shared param differ in type (" +
                  formatTensorType(a.type()) + ", " + formatTensorType(b.type()) +
                  "), init or trainability");
    if (!b.trainable())
      return okStatus();
    if (a.layer() > b.layer())
      return fail(what + " in layers " + str(a.layer()) + " and " + str(b.layer()) +
                  ": the owner of a trainable shared param is its lowest reader, listed first");
    if (!b.has_primary() || b.primary() != first)
      return fail(what + ": a copy of a trainable shared param names its owner's entry " +
                  str(first) + " as primary" +
                  (b.has_primary() ? ", not " + str(b.primary()) : " (it names none)"));
    if (b.state_offset() != a.state_offset())
      return fail(what + ": a copy shares its owner's fp32 state (state_offset " +
                  str(a.state_offset()) + "), not " + str(b.state_offset()));
    if (b.grad_offset() == a.grad_offset())
      return fail(what + ": a copy has its own gradient slot, not its owner's (grad_offset " +
                  str(a.grad_offset()) + ")");
    copiesOf_[first].push_back(second);
    return okStatus();
  }

  Status checkLayers() {
    if (plan_.layers_size() == 0)
      return fail("the plan has no layers");
    std::vector<int> listedBy(plan_.params_size(), -1);
    for (int l = 0; l < plan_.layers_size(); ++l) {
      const pb::Layer &layer = plan_.layers(l);
      const std::string what = layerName(l);
      RP_RETURN_IF_ERROR(checkIndex(what, "forward function", layer.forward(),
                                    plan_.functions_size(), "the plan", "functions"));
      RP_RETURN_IF_ERROR(checkIndex(what, "backward function", layer.backward(),
                                    plan_.functions_size(), "the plan", "functions"));
      if (layer.has_saving())
        RP_RETURN_IF_ERROR(checkIndex(what, "saving function", layer.saving(),
                                      plan_.functions_size(), "the plan", "functions"));
      for (int p : layer.params()) {
        RP_RETURN_IF_ERROR(checkIndex(what, "param", p, plan_.params_size(), "the plan", "params"));
        if (listedBy[p] != -1)
          return fail(what + ": lists " + paramName(p) + ", which " + layerName(listedBy[p]) +
                      " lists too");
        if (plan_.params(p).layer() != l)
          return fail(what + ": lists " + paramName(p) + ", whose layer is " +
                      str(plan_.params(p).layer()));
        listedBy[p] = l;
      }
    }
    for (int p = 0; p < plan_.params_size(); ++p)
      if (listedBy[p] == -1)
        return fail(paramName(p) + ": its " + layerName(plan_.params(p).layer()) +
                    " does not list it");
    return okStatus();
  }

  Status checkConstants() {
    for (int i = 0; i < plan_.constants_size(); ++i) {
      const pb::Constant &c = plan_.constants(i);
      const std::string what = "constant #" + str(i);
      RP_ASSIGN_OR_RETURN(int64_t bytes, bytesOf(c.type(), what));
      RP_RETURN_IF_ERROR(checkExtent(what, c.offset(), bytes, plan_.device_arena().constants(),
                                     "device_arena.constants"));
      if (static_cast<int64_t>(c.data().size()) != bytes)
        return fail(what + ": holds " + str(static_cast<int64_t>(c.data().size())) +
                    " bytes of data, its type " + formatTensorType(c.type()) + " needs " +
                    str(bytes));
      constantBytes_.push_back(bytes);
    }
    return okStatus();
  }

  // ---- functions and instructions ----
  Status checkFunctions() {
    for (int f = 0; f < plan_.functions_size(); ++f) {
      const pb::Function &fn = plan_.functions(f);
      const std::string what = functionName(f);
      if (fn.workspace_bytes() < 0 || fn.workspace_bytes() > plan_.device_arena().workspace())
        return fail(what + ": workspace_bytes " + str(fn.workspace_bytes()) +
                    " exceeds device_arena.workspace (" + str(plan_.device_arena().workspace()) +
                    " bytes)");
      std::vector<int64_t> args, results;
      for (int j = 0; j < fn.args_size(); ++j) {
        RP_ASSIGN_OR_RETURN(int64_t b, bytesOf(fn.args(j), what + ": argument " + str(j)));
        args.push_back(b);
      }
      for (int j = 0; j < fn.results_size(); ++j) {
        RP_ASSIGN_OR_RETURN(int64_t b, bytesOf(fn.results(j), what + ": result " + str(j)));
        results.push_back(b);
      }
      argBytes_.push_back(std::move(args));
      resultBytes_.push_back(std::move(results));
      for (int k = 0; k < fn.body_size(); ++k)
        RP_RETURN_IF_ERROR(checkInstruction(f, k));
    }
    return okStatus();
  }

  Status checkInstruction(int f, int k) {
    const pb::Instruction &ins = plan_.functions(f).body(k);
    const std::string at = functionName(f) + " instruction " + str(k);
    const KernelInfo *info = kernels::findKernel(ins.kernel());
    if (!info)
      return fail(at + ": unknown kernel id '" + ins.kernel() +
                  "' (not in the kernel registry, kernels/Registry.h)");
    const std::string what = at + " (kernel '" + ins.kernel() + "')";
    if (!info->acceptsOperands(ins.operands_size()))
      return fail(what + ": has " + str(ins.operands_size()) + " operands, the kernel takes " +
                  countText(info->minOperands, info->maxOperands));
    if (!info->acceptsResults(ins.results_size()))
      return fail(what + ": has " + str(ins.results_size()) + " results, the kernel makes " +
                  countText(info->numResults == kernels::kVariadic ? 1 : info->numResults,
                            info->numResults == kernels::kVariadic
                                ? kernels::kVariadic
                                : std::max(info->numResults, info->maxResults)));
    if (std::optional<std::string> problem = attributeProblem(*info, ins, ValueWording::Bare))
      return fail(what + ": " + *problem);
    for (int j = 0; j < ins.operands_size(); ++j)
      RP_RETURN_IF_ERROR(checkRef(f, what + " operand " + str(j), ins.operands(j)));
    for (int j = 0; j < ins.results_size(); ++j)
      RP_RETURN_IF_ERROR(checkRef(f, what + " result " + str(j), ins.results(j)));
    return okStatus();
  }

  /// A buffer reference lies within the buffer it names.
  Status checkRef(int f, const std::string &what, const pb::BufferRef &ref) {
    const pb::Function &fn = plan_.functions(f);
    RP_ASSIGN_OR_RETURN(int64_t bytes, bytesOf(ref.type(), what));
    const int64_t index = ref.index();
    switch (ref.space()) {
    case pb::BufferRef::ARG:
      RP_RETURN_IF_ERROR(
          checkIndex(what, "argument index", index, fn.args_size(), "the function", "arguments"));
      return checkExtent(what, ref.offset(), bytes, argBytes_[f][index], "argument " + str(index));
    case pb::BufferRef::RESULT:
      RP_RETURN_IF_ERROR(
          checkIndex(what, "result index", index, fn.results_size(), "the function", "results"));
      return checkExtent(what, ref.offset(), bytes, resultBytes_[f][index], "result " + str(index));
    case pb::BufferRef::WORKSPACE:
      return checkExtent(what, ref.offset(), bytes, fn.workspace_bytes(),
                         "the function's workspace_bytes");
    case pb::BufferRef::PARAM:
      RP_RETURN_IF_ERROR(
          checkIndex(what, "param index", index, plan_.params_size(), "the plan", "params"));
      return checkExtent(what, ref.offset(), bytes, paramWeightBytes_[index],
                         paramName(index) + " in the weight slot");
    case pb::BufferRef::CONSTANT:
      RP_RETURN_IF_ERROR(checkIndex(what, "constant index", index, plan_.constants_size(),
                                    "the plan", "constants"));
      return checkExtent(what, ref.offset(), bytes, constantBytes_[index],
                         "constant #" + str(index));
    default:
      return fail(what + ": unknown buffer space " + str(ref.space()));
    }
  }

  // ---- host buffers ----
  Status checkHostBuffers() {
    for (int b = 0; b < plan_.host_buffers_size(); ++b) {
      const pb::HostBuffer &buf = plan_.host_buffers(b);
      const std::string what = bufferName(b);
      if (!pb::BufferKind_IsValid(buf.kind()))
        return fail(what + ": unknown kind " + str(buf.kind()));
      if (buf.kind() == pb::INPUT && buf.input_name().empty())
        return fail(what + ": an INPUT buffer needs input_name (the model input it holds)");
      if ((buf.kind() == pb::LOSS || buf.kind() == pb::LOSS_SEED) &&
          (buf.type().dtype() != pb::F32 || buf.type().shape_size() != 0))
        return fail(what + ": a " + pb::BufferKind_Name(buf.kind()) +
                    " buffer holds one f32 (a 0-D tensor)");
      RP_ASSIGN_OR_RETURN(int64_t bytes, bytesOf(buf.type(), what));
      RP_RETURN_IF_ERROR(
          checkExtent(what, buf.offset(), bytes, plan_.host_arena().record(), "host_arena.record"));
      bufferBytes_.push_back(bytes);
    }
    return okStatus();
  }

  // ---- stages ----
  /// forward* (ascending contiguously from layer 0), one fused_tail (ending at the last
  /// layer), backward* (descending contiguously to layer 0).
  Status checkStageOrder() {
    const int64_t numLayers = plan_.layers_size();
    const char *order = "stages run forward*, one fused_tail, backward*";
    int tail = -1;
    int64_t next = 0; // forward: the next begin; after the tail: the next backward end
    for (int s = 0; s < plan_.stages_size(); ++s) {
      const pb::Stage &st = plan_.stages(s);
      const std::string what = stageName(s);
      if (!pb::StageKind_IsValid(st.kind()))
        return fail(what + ": unknown stage kind " + str(st.kind()));
      if (st.begin() < 0 || st.begin() >= st.end() || st.end() > numLayers)
        return fail(what + ": layers " + range(st.begin(), st.end()) +
                    " is not a non-empty range of the " + str(numLayers) + " layers");
      switch (st.kind()) {
      case pb::FORWARD:
        if (tail != -1)
          return fail(what + ": a forward stage after the fused tail " + stageName(tail) + ": " +
                      order);
        if (st.begin() != next)
          return fail(what + ": begins at layer " + str(st.begin()) + ", expected " + str(next) +
                      ": forward stages ascend contiguously from layer 0");
        next = st.end();
        break;
      case pb::FUSED_TAIL:
        if (tail != -1)
          return fail(what + ": a second fused tail (the first is " + stageName(tail) +
                      "): " + order);
        if (st.begin() != next)
          return fail(what + ": begins at layer " + str(st.begin()) + ", expected " + str(next) +
                      " (where the forward stages end)");
        if (st.end() != numLayers)
          return fail(what + ": ends at layer " + str(st.end()) + ", expected " + str(numLayers) +
                      " (the number of layers)");
        tail = s;
        next = st.begin();
        break;
      case pb::BACKWARD:
        if (tail == -1)
          return fail(what + ": a backward stage before the fused tail: " + order);
        if (st.end() != next)
          return fail(what + ": ends at layer " + str(st.end()) + ", expected " + str(next) +
                      ": backward stages descend contiguously to layer 0");
        next = st.begin();
        break;
      default: // rejected above
        break;
      }
    }
    if (tail == -1)
      return fail("the plan has no fused_tail stage: " + std::string(order));
    if (next != 0)
      return fail("the backward stages end at layer " + str(next) +
                  ", expected 0: every layer needs a backward stage");
    return okStatus();
  }

  /// Weight slot, host ranges, device activation set and workspace of each stage.
  Status checkStageRegions() {
    const pb::HostArena &h = plan_.host_arena();
    const pb::DeviceArena &d = plan_.device_arena();
    for (int s = 0; s < plan_.stages_size(); ++s) {
      const pb::Stage &st = plan_.stages(s);
      const std::string what = stageName(s);
      const std::pair<const char *, int64_t> sizes[] = {
          {"weight_bytes", st.weight_bytes()},
          {"grad_bytes", st.grad_bytes()},
          {"activation_bytes", st.activation_bytes()},
          {"workspace_bytes", st.workspace_bytes()},
          {"peak_bytes", st.peak_bytes()},
      };
      for (const auto &[name, size] : sizes)
        if (size < 0 || size > kMaxPlanBytes)
          return fail(what + ": " + name + " " + str(size) + " is not in [0, 2^48]");
      if (st.weight_bytes() + st.grad_bytes() > d.slot())
        return fail(what + ": weight_bytes " + str(st.weight_bytes()) + " + grad_bytes " +
                    str(st.grad_bytes()) + " = " + str(st.weight_bytes() + st.grad_bytes()) +
                    " exceeds device_arena.slot (" + str(d.slot()) + " bytes)");
      if (st.activation_bytes() > d.activations())
        return fail(what + ": activation_bytes " + str(st.activation_bytes()) +
                    " exceeds device_arena.activations (" + str(d.activations()) + " bytes)");
      if (st.workspace_bytes() > d.workspace())
        return fail(what + ": workspace_bytes " + str(st.workspace_bytes()) +
                    " exceeds device_arena.workspace (" + str(d.workspace()) + " bytes)");
      RP_RETURN_IF_ERROR(checkExtent(what + ": weights", st.weight_offset(), st.weight_bytes(),
                                     h.weights(), "host_arena.weights"));
      const bool backward = st.kind() != pb::FORWARD;
      if (backward)
        RP_RETURN_IF_ERROR(checkExtent(what + ": gradients", st.state_offset(), st.grad_bytes(),
                                       h.grads(), "host_arena.grads"));
      else if (st.grad_bytes() != 0)
        return fail(what + ": a forward stage has grad_bytes " + str(st.grad_bytes()) +
                    ", expected 0");
      // The stage's weights (and, backward, its gradients) are one contiguous host range
      // holding those of every param of its layers.
      const int64_t wBegin = st.weight_offset(), wEnd = wBegin + st.weight_bytes();
      const int64_t gBegin = st.state_offset(), gEnd = gBegin + st.grad_bytes();
      for (int l = st.begin(); l < st.end(); ++l)
        for (int p : plan_.layers(l).params()) {
          const pb::Param &param = plan_.params(p);
          int64_t begin = param.weight_offset(), end = begin + paramWeightBytes_[p];
          if (begin < wBegin || end > wEnd)
            return fail(what + ": " + paramName(p) + " has host weights " + range(begin, end) +
                        ", outside the stage's weights " + range(wBegin, wEnd));
          if (!backward || !param.trainable())
            continue;
          begin = param.grad_offset();
          end = begin + 4 * paramElements_[p];
          if (begin < gBegin || end > gEnd)
            return fail(what + ": " + paramName(p) + " has an fp32 gradient slot " +
                        range(begin, end) + ", outside the stage's gradients " +
                        range(gBegin, gEnd));
        }
    }
    return okStatus();
  }

  /// One value in the device activation set.
  Status checkActivation(const std::string &what, int64_t offset, int64_t bytes) {
    return checkExtent(what, offset, bytes, plan_.device_arena().activations(),
                       "device_arena.activations");
  }

  Status checkStageBodies() {
    // Which buffers each stage downloads (uploads after it read them).
    std::vector<std::vector<char>> downloads(plan_.stages_size(),
                                             std::vector<char>(plan_.host_buffers_size(), 0));
    for (int s = 0; s < plan_.stages_size(); ++s)
      for (const pb::Step &step : plan_.stages(s).body())
        if (step.has_download() && step.download().buffer() >= 0 &&
            step.download().buffer() < plan_.host_buffers_size())
          downloads[s][step.download().buffer()] = 1;
    // One producer per host buffer: the executor orders a consumer's upload after the
    // download of the stage its upload names, and reuses the buffer on that basis.
    for (int b = 0; b < plan_.host_buffers_size(); ++b) {
      int first = -1;
      for (int s = 0; s < plan_.stages_size(); ++s) {
        if (!downloads[s][b])
          continue;
        if (first >= 0)
          return fail("host buffer " + bufferName(b) + " is downloaded by " + stageName(first) +
                      " and " + stageName(s) + "; a host buffer has one producing stage");
        first = s;
      }
    }

    for (int s = 0; s < plan_.stages_size(); ++s) {
      const pb::Stage &st = plan_.stages(s);
      int prefetches = 0;
      bool uploaded = false;
      for (int k = 0; k < st.body_size(); ++k) {
        const pb::Step &step = st.body(k);
        const std::string at = stageName(s) + " step " + str(k);
        switch (step.step_case()) {
        case pb::Step::kUpload: {
          const pb::Upload &u = step.upload();
          const std::string what = at + " (upload)";
          RP_RETURN_IF_ERROR(checkIndex(what, "buffer", u.buffer(), plan_.host_buffers_size(),
                                        "the plan", "host buffers"));
          RP_RETURN_IF_ERROR(checkUploadOrder(s, what, u, downloads));
          RP_RETURN_IF_ERROR(checkActivation(what + " of " + bufferName(u.buffer()), u.offset(),
                                             bufferBytes_[u.buffer()]));
          uploaded = true;
          break;
        }
        case pb::Step::kDownload: {
          const pb::Download &dl = step.download();
          const std::string what = at + " (download)";
          RP_RETURN_IF_ERROR(checkIndex(what, "buffer", dl.buffer(), plan_.host_buffers_size(),
                                        "the plan", "host buffers"));
          if (plan_.host_buffers(dl.buffer()).kind() == pb::INPUT ||
              plan_.host_buffers(dl.buffer()).kind() == pb::LOSS_SEED)
            return fail(what + ": downloads to " + bufferName(dl.buffer()) +
                        ", which the trainer fills (a model input or loss seed)");
          RP_RETURN_IF_ERROR(checkActivation(what + " to " + bufferName(dl.buffer()), dl.offset(),
                                             bufferBytes_[dl.buffer()]));
          break;
        }
        case pb::Step::kCall:
          RP_RETURN_IF_ERROR(checkCall(at + " (call)", step.call()));
          break;
        case pb::Step::kAccumulate:
          RP_RETURN_IF_ERROR(checkAccumulate(s, at + " (accumulate)", step.accumulate()));
          break;
        case pb::Step::kPrefetchNext:
          if (!uploaded)
            return fail(at + " (prefetch_next): comes before any upload: the weight chunk is "
                             "issued behind an activation upload");
          ++prefetches;
          break;
        case pb::Step::STEP_NOT_SET:
          return fail(at + ": an empty step");
        }
      }
      if (prefetches != 1)
        return fail(stageName(s) + ": the body has " + str(prefetches) +
                    " prefetch_next steps, expected exactly 1");
    }
    return okStatus();
  }

  /// An INPUT buffer is uploaded with after_stage -1; any other after an earlier stage that
  /// downloads it.
  Status checkUploadOrder(int s, const std::string &what, const pb::Upload &u,
                          const std::vector<std::vector<char>> &downloads) {
    const std::string buffer = bufferName(u.buffer());
    const pb::BufferKind kind = plan_.host_buffers(u.buffer()).kind();
    if (kind == pb::LOSS_SEED && plan_.stages(s).kind() != pb::FUSED_TAIL)
      return fail(what + ": " + buffer + " is a loss seed, uploaded by a " +
                  stageKindName(plan_.stages(s).kind()) +
                  " stage; only the fused tail reads it");
    if (kind == pb::INPUT || kind == pb::LOSS_SEED) {
      if (u.after_stage() != -1)
        return fail(what + ": " + buffer + " is " +
                    (kind == pb::INPUT ? "a model input" : "a loss seed") +
                    ", its upload has after_stage " + str(u.after_stage()) + ", expected -1");
      return okStatus();
    }
    if (u.after_stage() < 0 || u.after_stage() >= s)
      return fail(what + ": " + buffer + " has after_stage " + str(u.after_stage()) +
                  ", which is not an earlier stage than this one (" + str(s) + ")");
    if (!downloads[u.after_stage()][u.buffer()])
      return fail(what + ": " + buffer + " is uploaded after " + stageName(u.after_stage()) +
                  ", whose body does not download it");
    return okStatus();
  }

  Status checkCall(const std::string &what, const pb::Call &call) {
    RP_RETURN_IF_ERROR(checkIndex(what, "function", call.function(), plan_.functions_size(),
                                  "the plan", "functions"));
    const int f = call.function();
    const pb::Function &fn = plan_.functions(f);
    const std::string callee = what + " of " + functionName(f);
    if (call.arg_offsets_size() != fn.args_size() ||
        call.result_offsets_size() != fn.results_size())
      return fail(callee + ": passes " + str(call.arg_offsets_size()) + " argument and " +
                  str(call.result_offsets_size()) + " result offsets, the function has " +
                  str(fn.args_size()) + " arguments and " + str(fn.results_size()) + " results");
    for (int j = 0; j < fn.args_size(); ++j)
      RP_RETURN_IF_ERROR(
          checkActivation(callee + " argument " + str(j), call.arg_offsets(j), argBytes_[f][j]));
    for (int j = 0; j < fn.results_size(); ++j)
      RP_RETURN_IF_ERROR(checkActivation(callee + " result " + str(j), call.result_offsets(j),
                                         resultBytes_[f][j]));
    return okStatus();
  }

  Status checkAccumulate(int s, const std::string &what, const pb::Accumulate &acc) {
    const pb::Stage &st = plan_.stages(s);
    RP_RETURN_IF_ERROR(
        checkIndex(what, "param", acc.param(), plan_.params_size(), "the plan", "params"));
    const pb::Param &p = plan_.params(acc.param());
    const std::string param = paramName(acc.param());
    if (st.kind() == pb::FORWARD)
      return fail(what + ": a forward stage accumulates the gradient of " + param);
    if (!p.trainable())
      return fail(what + ": accumulates the gradient of frozen " + param);
    if (p.layer() < st.begin() || p.layer() >= st.end())
      return fail(what + ": " + param + " belongs to layer " + str(p.layer()) +
                  ", outside the stage's layers " + range(st.begin(), st.end()));
    // The gradient value has the compute dtype (a float param); the fp32 accumulators live in
    // the weight slot.
    return checkActivation(what + " of " + param, acc.offset(),
                           computeSize_ * paramElements_[acc.param()]);
  }

  // ---- optimizer steps ----
  Status checkOptimizerSteps() {
    accumulatedBy_.assign(static_cast<size_t>(plan_.params_size()), {});
    for (int s = 0; s < plan_.stages_size(); ++s)
      for (const pb::Step &step : plan_.stages(s).body())
        if (step.has_accumulate()) // indices checked with the stage bodies
          accumulatedBy_[static_cast<size_t>(step.accumulate().param())].push_back(s);
    std::vector<int> stepOf(plan_.layers_size(), -1);
    for (int i = 0; i < plan_.optimizer_steps_size(); ++i) {
      const pb::OptimizerStep &os = plan_.optimizer_steps(i);
      std::string what = "optimizer step #" + str(i);
      RP_RETURN_IF_ERROR(
          checkIndex(what, "layer", os.layer(), plan_.layers_size(), "the plan", "layers"));
      const int l = os.layer();
      what += " (" + layerName(l) + ")";
      if (stepOf[l] != -1)
        return fail(what + ": a second step for the layer (the first is #" + str(stepOf[l]) + ")");
      stepOf[l] = i;
      RP_RETURN_IF_ERROR(checkIndex(what, "grads_stage", os.grads_stage(), plan_.stages_size(),
                                    "the plan", "stages"));
      const pb::Stage &g = plan_.stages(os.grads_stage());
      if (g.kind() == pb::FORWARD)
        return fail(what + ": grads_stage is " + stageName(os.grads_stage()) +
                    ", which computes no gradients");
      if (l < g.begin() || l >= g.end())
        return fail(what + ": grads_stage is " + stageName(os.grads_stage()) +
                    ", which covers layers " + range(g.begin(), g.end()) + ", not layer " + str(l));
      RP_RETURN_IF_ERROR(checkStepEvents(os, l, what));
    }
    for (int l = 0; l < plan_.layers_size(); ++l)
      if (ownsTrainable(l) && stepOf[l] == -1)
        return fail(layerName(l) + ": has trainable params but no optimizer step");
    return okStatus();
  }

  /// Whether layer `l` holds a trainable param's owner entry (a copy is updated by its owner).
  bool ownsTrainable(int l) const {
    const auto &ps = plan_.layers(l).params();
    return std::any_of(ps.begin(), ps.end(), [&](int p) {
      return plan_.params(p).trainable() && !plan_.params(p).has_primary();
    });
  }

  /// The layers whose entries the step of layer `l` updates: `l` and its copies' layers.
  std::vector<int> coupledLayers(int l) const {
    std::vector<int> layers{l};
    for (int p : plan_.layers(l).params()) {
      auto it = copiesOf_.find(p);
      if (it == copiesOf_.end())
        continue;
      for (int c : it->second)
        if (std::find(layers.begin(), layers.end(), plan_.params(c).layer()) == layers.end())
          layers.push_back(plan_.params(c).layer());
    }
    return layers;
  }

  /// The uploads and gradient downloads the step of layer `l` waits for.
  Status checkStepEvents(const pb::OptimizerStep &os, int l, const std::string &what) {
    if (!ownsTrainable(l))
      return fail(what + ": the layer owns no trainable param (a copy is updated by its owner)");
    const std::vector<int> coupled = coupledLayers(l);
    auto holds = [&](const pb::Stage &st) {
      return std::any_of(coupled.begin(), coupled.end(),
                         [&](int c) { return c >= st.begin() && c < st.end(); });
    };
    for (int u : os.upload_stages()) {
      RP_RETURN_IF_ERROR(
          checkIndex(what, "upload stage", u, plan_.stages_size(), "the plan", "stages"));
      const pb::Stage &us = plan_.stages(u);
      if (!holds(us))
        return fail(what + ": upload_stages names " + stageName(u) + ", which covers layers " +
                    range(us.begin(), us.end()) + ", neither layer " + str(l) +
                    " nor a reader of a shared param it owns");
    }
    // Every stage holding the layer or a copy uploads weights the step overwrites: it writes
    // them only after all of them (a stage left out could upload a half-written layer).
    for (int s = 0; s < plan_.stages_size(); ++s) {
      const auto &us = os.upload_stages();
      if (holds(plan_.stages(s)) && std::find(us.begin(), us.end(), s) == us.end())
        return fail(what + ": upload_stages leaves out " + stageName(s) +
                    ", which holds the layer (or a copy of its shared param) and uploads it");
    }
    std::vector<int> waited{os.grads_stage()};
    for (int g : os.shared_grads_stages()) {
      RP_RETURN_IF_ERROR(
          checkIndex(what, "shared grads stage", g, plan_.stages_size(), "the plan", "stages"));
      if (plan_.stages(g).kind() == pb::FORWARD)
        return fail(what + ": shared_grads_stages names " + stageName(g) +
                    ", which computes no gradients");
      waited.push_back(g);
    }
    // Each entry the step reads (its own, its copies) is folded exactly once per micro-batch by
    // a stage it waits for (the executor sets the accumulator at micro-batch 0 and adds after).
    for (int p : plan_.layers(l).params()) {
      if (!plan_.params(p).trainable() || plan_.params(p).has_primary())
        continue;
      const std::vector<int> &by = accumulatedBy_[static_cast<size_t>(p)];
      const int inGrads = static_cast<int>(std::count(by.begin(), by.end(), os.grads_stage()));
      if (inGrads != 1)
        return fail(what + ": grads_stage is " + stageName(os.grads_stage()) +
                    ", which accumulates " + paramName(p) + " " + str(inGrads) +
                    " times per micro-batch, expected once");
      auto copies = copiesOf_.find(p);
      if (copies == copiesOf_.end())
        continue;
      for (int c : copies->second) {
        const std::vector<int> &cby = accumulatedBy_[static_cast<size_t>(c)];
        const int folds = static_cast<int>(std::count_if(cby.begin(), cby.end(), [&](int s) {
          return std::find(waited.begin(), waited.end(), s) != waited.end();
        }));
        if (folds != 1 || cby.size() != 1)
          return fail(what + ": the stages it waits for accumulate the copy " + paramName(c) +
                      " " + str(folds) + " times per micro-batch, expected once");
      }
    }
    return okStatus();
  }

  const pb::Plan &plan_;
  int64_t computeSize_ = 4;
  std::vector<std::vector<int>> accumulatedBy_; // per param: the stages accumulating it
  std::map<int, std::vector<int>> copiesOf_;    // owner entry -> its copies, in layer order
  std::vector<int64_t> paramElements_;    // per param
  std::vector<int64_t> paramWeightBytes_; // per param: bytes in the host weights / weight slot
  std::vector<int64_t> constantBytes_;    // per constant
  std::vector<int64_t> bufferBytes_;      // per host buffer
  std::vector<std::vector<int64_t>> argBytes_, resultBytes_; // per function
};

} // namespace

//===----------------------------------------------------------------------===//
// Public helpers
//===----------------------------------------------------------------------===//

const char *stageKindName(int kind) {
  switch (kind) {
  case pb::FORWARD:
    return "forward";
  case pb::FUSED_TAIL:
    return "fused_tail";
  case pb::BACKWARD:
    return "backward";
  default:
    return "unknown kind";
  }
}

std::optional<DType> fromPlanDType(int dtype) {
  switch (dtype) {
  case pb::F32:
    return DType::F32;
  case pb::F16:
    return DType::F16;
  case pb::BF16:
    return DType::BF16;
  case pb::I64:
    return DType::I64;
  case pb::I32:
    return DType::I32;
  case pb::I1:
    return DType::I1;
  case pb::U8:
    return DType::U8;
  default:
    return std::nullopt;
  }
}

bool isPlanFloat(int dtype) { return dtype == pb::F32 || dtype == pb::F16 || dtype == pb::BF16; }

std::string formatTensorType(const pb::TensorType &type) {
  std::string s = "[";
  for (int i = 0; i < type.shape_size(); ++i)
    s += (i ? ", " : "") + std::to_string(type.shape(i));
  return s + "] " + dtypeText(type.dtype());
}

StatusOr<int64_t> tensorTypeElements(const pb::TensorType &type, const std::string &what) {
  int64_t n = 0, b = 0;
  if (std::optional<std::string> problem = typeProblem(type, &n, &b))
    return invalidArgument(what + ": " + *problem);
  return n;
}

StatusOr<int64_t> tensorTypeBytes(const pb::TensorType &type, const std::string &what) {
  int64_t n = 0, b = 0;
  if (std::optional<std::string> problem = typeProblem(type, &n, &b))
    return invalidArgument(what + ": " + *problem);
  return b;
}

Status validatePlan(const pb::Plan &plan) { return PlanChecker(plan).run(); }

} // namespace rp::runtime
