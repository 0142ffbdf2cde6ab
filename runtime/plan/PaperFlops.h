//===- PaperFlops.h - FLOPs of RoundPipe's schedule for a partition -*- C++ -*-===//
//
// The FLOPs RoundPipe's schedule (Luo et al., arXiv 2604.27085, §3; PyTorch autograd inside a
// stage) executes for the stage partition of a plan: each layer's forward once per pass that
// runs it and its backward once, with no other recomputation. The plan report compares the
// executed FLOPs of every stage with this number (runtime/plan/PlanReport.h).
//
// Per layer l, from its forward function alone (kernels/FlopRules.h counts contractions):
//   F_l = the FLOPs of the forward function's instructions;
//   B_l = the FLOPs of their reverse-mode adjoints, per instruction of the forward function
//         that has an *active* operand (one that depends on a trainable param or on a float
//         argument of the function, i.e. the layer's activation input):
//           matmul      its FLOPs once per active operand (dA = dC B^T, dB = A^T dC: each a
//                       product of the forward's size);
//           attention   the FlopRules count of `attention_vjp` on the same q, k, v (2.5 times
//                       the attention's count, causal pairs only when the attention is causal);
//           any other kernel with a FLOP rule: 2 times its FLOPs.
//         Instructions whose operands are all inactive (a frozen weight times a constant)
//         have no adjoint. A float model input read by a layer would count as active (the
//         supported exports' inputs are integer token ids, labels and masks).
// Per stage and micro-batch: a forward stage sum F_l; the fused tail sum (F_l + B_l) (forward
// once, backward once); a backward stage sum (F_l + B_l) (the recomputation of the forward its
// forward stage ran, once, then the backward).
//
// Plain C++17 over plan.proto: no MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_PLAN_PAPERFLOPS_H
#define RP_RUNTIME_PLAN_PAPERFLOPS_H

#include "runtime/plan/plan.pb.h"

#include <vector>

namespace rp::runtime {

/// F_l: the FLOPs of forward function `f` (FlopRules over its instructions).
double forwardFlops(const rp::plan::Function &f);

/// B_l: the FLOPs of the adjoints of forward function `f`'s instructions (see above);
/// `trainable[p]` says whether plan param entry p is trainable.
double backwardRuleFlops(const rp::plan::Function &f, const std::vector<bool> &trainable);

/// Per stage of a validated plan (plan order), the schedule's FLOPs per micro-batch.
std::vector<double> paperStageFlops(const rp::plan::Plan &plan);

} // namespace rp::runtime

#endif // RP_RUNTIME_PLAN_PAPERFLOPS_H
