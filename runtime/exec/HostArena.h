//===- HostArena.h - The host memory of a training run ----------*- C++ -*-===//
//
// RoundPipe keeps all model state in host memory (arXiv 2604.27085 §3). The
// plan's `HostArena` gives the sizes and every param's offsets; this class owns the memory:
//
//   weights      compute-dtype weights of every param entry (what the devices upload; a
//                param read by several layers has a copy per reading layer)
//   master       fp32 master weights of the trainable params, once each (state_offset)
//   moment1/2    AdamW's first and second moments, fp32               (state_offset)
//   grads        fp32 gradient slots downloaded by the backward stages, one per trainable
//                entry (grad_offset; a shared param's copies have their own slots)
//   activations  two copies (by iteration parity) of M micro-batch records of host buffers,
//                so iteration i + 1's forward stages can write while iteration i's backward
//                stages still read (docs/DECISIONS.md, "Executor and backends").
//
// One page-aligned allocation (the CUDA backend registers it as pinned memory), zeroed at
// creation; the optimizer state's pages are first touched by the threads whose AdamW streams
// them (docs/DECISIONS.md, "Host optimizer at memory speed").
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_EXEC_HOSTARENA_H
#define RP_RUNTIME_EXEC_HOSTARENA_H

#include "base/DType.h"
#include "base/Status.h"
#include "runtime/io/WeightSource.h"
#include "runtime/plan/plan.pb.h"

#include <cstdint>
#include <memory>

namespace rp::runtime {

class HostArena {
public:
  /// Allocates the arena of `plan` (validated) zero-filled. Errors: ResourceExhausted with the
  /// size in bytes when the allocation fails.
  static StatusOr<HostArena> create(const rp::plan::Plan &plan);
  /// The arena's address space only (mmap with MAP_NORESERVE): pages are committed, zero, when
  /// first touched. For the simulator, whose executor does no host arithmetic
  /// (ExecutorOptions::hostArithmetic) and reads only the losses, so a plan of any size runs
  /// on a small machine. Errors: ResourceExhausted when the mapping fails (a kernel that
  /// refuses overcommit: vm.overcommit_memory = 2).
  static StatusOr<HostArena> reserve(const rp::plan::Plan &plan);

  /// Fills the weights (and, for trainable params, the fp32 master copy; moments zero) from
  /// weights checked by validateWeights (tensors keyed by param name; a floating-point param's
  /// F16 or BF16 tensor is converted to f32 exactly first; a quantized frozen param, Param.quant,
  /// is then quantized into its storage: kernels/cpu/Quantize.h); a param absent from the
  /// weights starts as its `init` says (base/ParamInit.h). Reads shard by shard, tensor by
  /// tensor (WeightSource::readTensors): besides the arena it holds one param's f32 copy. A
  /// param with several entries (shared) is converted once and copied into the others.
  /// Tensors no param names are skipped. Errors: the reader's, a tensor of another size or
  /// dtype than the plan's (InvalidArgument naming the file and the tensor), a missing tensor.
  Status loadWeights(const WeightSource &source);

  /// Writes the compute-dtype weights of entry `param` from its fp32 master copy (a trainable
  /// param; a copy of a shared param reads its owner's master).
  Status writeComputeWeights(int param);

  /// The values the GEMMs read of frozen entry `param` as f32 into `out` (paramElements):
  /// a quantized param (Param.quant) dequantized (kernels/cpu/Quantize.h), any other float
  /// param its compute-dtype weights converted exactly. For checkpoints and exports.
  Status frozenWeightsF32(int param, float *out) const;
  /// Bytes of entry `param` in the host weights (and a weight slot): its quantized storage,
  /// or its elements in the compute dtype (a float param) or its own dtype.
  int64_t paramWeightBytes(int param) const;

  /// The regions. `parity` is the iteration's parity (0 or 1), `microBatch` in [0, M).
  uint8_t *weights() { return base_; }
  float *master() { return state(0); }
  float *moment1() { return state(1); }
  float *moment2() { return state(2); }
  float *grads() { return state(3); } // right after the three state regions
  uint8_t *record(int parity, int64_t microBatch);
  /// Bytes of the whole arena.
  int64_t bytes() const { return bytes_; }
  DType computeDType() const { return computeDType_; }
  const rp::plan::Plan &plan() const { return *plan_; }

  /// Elements of param `index` (product of its shape).
  int64_t paramElements(int index) const;

private:
  /// An arena of `plan` without memory yet (create / reserve allocate it).
  explicit HostArena(const rp::plan::Plan &plan);
  /// bytes() rounded up to whole pages.
  int64_t roundedBytes() const;
  /// Zeroes the `rounded` bytes of a fresh allocation, the optimizer state and the gradient
  /// slots param by param as AdamW's threads stream them (runtime/optim firstTouch).
  void zeroFill(size_t rounded);
  /// Fills param `index` from `t` (null: from its init) as loadWeights describes; `file`
  /// names the file holding `t` in errors.
  Status loadParam(int index, const SafetensorsTensorView *t, const std::string &file);
  /// Copies the host weights of entry `from` into entry `to`, another entry of the same param
  /// (a param read by several layers; the entries have one type, validated).
  void copyEntryWeights(int from, int to);

  struct Free {
    Free() noexcept : mapped(0) {}
    explicit Free(size_t length) noexcept : mapped(length) {}
    size_t mapped; ///< reserve(): the mapping's length (munmap); 0: create()'s std::free
    void operator()(uint8_t *p) const;
  };
  float *state(int region) {
    return reinterpret_cast<float *>(base_ + plan_->host_arena().weights() +
                                     region * plan_->host_arena().state());
  }

  const rp::plan::Plan *plan_ = nullptr;
  std::unique_ptr<uint8_t, Free> memory_;
  uint8_t *base_ = nullptr;
  int64_t bytes_ = 0;
  DType computeDType_ = DType::F32;
};

} // namespace rp::runtime

#endif // RP_RUNTIME_EXEC_HOSTARENA_H
