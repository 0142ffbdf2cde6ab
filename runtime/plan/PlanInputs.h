//===- PlanInputs.h - What a plan's model inputs hold -----------*- C++ -*-===//
//
// rp-run feeds a plan's INPUT host buffers from a token file. Which input holds token ids and
// which holds labels follows from the plan itself: an input read as the indices of a `gather`
// (operand 1; the embedding lookup) holds token ids below the gathered axis's size, one read
// as the labels of `cross_entropy` (operand 1) holds labels below the logits' last dimension,
// one read as the labels of `linear_cross_entropy(_vjp)` (operand 2) labels below the head
// weight's first dimension (V of [V, H]).
// The analysis follows each input from its upload to the function argument it is bound to,
// and through kernels that only move the value (reshape, copy, cast, transpose, expand).
// An input named `position_ids` (the export contract's optional int64 [B, S] input of packed
// training: each token's position in its document) holds positions, whatever reads it; when
// it is read as a gather's indices (a rotary table), vocabSize is the table's length.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_PLAN_PLANINPUTS_H
#define RP_RUNTIME_PLAN_PLANINPUTS_H

#include "base/DType.h"
#include "base/Status.h"
#include "runtime/plan/plan.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rp::runtime {

enum class InputRole { Tokens, Labels, Positions, Other };

/// "tokens", "labels", "positions", "other".
const char *inputRoleName(InputRole role);

struct PlanInput {
  int buffer = -1;             ///< Index into Plan.host_buffers.
  std::string name;            ///< The model input's name.
  InputRole role = InputRole::Other;
  int64_t vocabSize = 0;       ///< Tokens/Labels: ids must be < this (Positions: when > 0).
  /// Labels: the cross-entropy's ignore_index (a label the loss skips: masked-out positions
  /// are written as this) and whether it averages over the kept labels (`mean`, the token
  /// weighting of Trainer.cpp applies) or sums them.
  int64_t ignoreIndex = -100;
  bool meanLoss = true;
  DType dtype = DType::I64;
  std::vector<int64_t> shape;
};

/// Every INPUT host buffer of a validated plan, in host-buffer order, with its role.
std::vector<PlanInput> analyzeInputs(const rp::plan::Plan &plan);

} // namespace rp::runtime

#endif // RP_RUNTIME_PLAN_PLANINPUTS_H
