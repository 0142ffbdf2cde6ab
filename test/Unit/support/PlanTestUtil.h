//===- PlanTestUtil.h - A small valid plan and temp dirs for plan tests -*- C++ -*-===//
//
// makeValidPlan() builds, by hand, the plan rpc-compile would write for a two-layer model
// (layer 0 "block_0": x @ w + x; layer 1 "tail": rms_norm, lm_head matmul, cross-entropy) with
// M = 2 micro-batches and three stages: F0 forward [0, 1), B0 fused_tail [1, 2), B1 backward
// [0, 1). Every size and offset is consistent, so validatePlan accepts it; the validator
// tests mutate one field at a time.
//
//===----------------------------------------------------------------------===//
#ifndef RP_TEST_UNIT_PLANTESTUTIL_H
#define RP_TEST_UNIT_PLANTESTUTIL_H

#include "test/Unit/support/TempDirTest.h"
#include "runtime/plan/plan.pb.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <vector>

namespace rp::testing {

namespace pb = rp::plan;

inline pb::TensorType tensorType(pb::DType dtype, std::vector<int64_t> shape) {
  pb::TensorType t;
  t.set_dtype(dtype);
  for (int64_t d : shape)
    t.add_shape(d);
  return t;
}

/// A buffer reference; for WORKSPACE, `index` is the byte offset (the exporter's layout:
/// workspace references carry `offset`, index 0).
inline pb::BufferRef ref(pb::BufferRef::Space space, int64_t index, pb::TensorType type) {
  pb::BufferRef r;
  r.set_space(space);
  if (space == pb::BufferRef::WORKSPACE)
    r.set_offset(index);
  else
    r.set_index(index);
  *r.mutable_type() = std::move(type);
  return r;
}

inline pb::Instruction *addInstruction(pb::Function *fn, const std::string &kernel,
                                       std::initializer_list<pb::BufferRef> operands,
                                       std::initializer_list<pb::BufferRef> results) {
  pb::Instruction *ins = fn->add_body();
  ins->set_kernel(kernel);
  for (const pb::BufferRef &r : operands)
    *ins->add_operands() = r;
  for (const pb::BufferRef &r : results)
    *ins->add_results() = r;
  ins->set_location("test.onnx:" + kernel);
  return ins;
}

inline void setInt(pb::Instruction *ins, const std::string &name, int64_t v) {
  (*ins->mutable_attrs())[name].set_i(v);
}
inline void setFloat(pb::Instruction *ins, const std::string &name, double v) {
  (*ins->mutable_attrs())[name].set_f(v);
}
inline void setString(pb::Instruction *ins, const std::string &name, const std::string &v) {
  (*ins->mutable_attrs())[name].set_s(v);
}
inline void setInts(pb::Instruction *ins, const std::string &name, std::vector<int64_t> v) {
  for (int64_t x : v)
    (*ins->mutable_attrs())[name].mutable_ints()->add_values(x);
}

inline pb::Param *addParam(pb::Plan &plan, const std::string &name, pb::TensorType type,
                           bool trainable, int layer, int64_t weightOffset, int64_t stateOffset) {
  pb::Param *p = plan.add_params();
  p->set_name(name);
  *p->mutable_type() = std::move(type);
  p->set_trainable(trainable);
  p->set_layer(layer);
  p->set_weight_offset(weightOffset);
  p->set_state_offset(stateOffset);
  p->set_grad_offset(stateOffset); // no shared params: the grads region mirrors the state
  return p;
}

inline pb::HostBuffer *addBuffer(pb::Plan &plan, const std::string &name, pb::BufferKind kind,
                                 pb::TensorType type, int64_t offset) {
  pb::HostBuffer *b = plan.add_host_buffers();
  b->set_name(name);
  b->set_kind(kind);
  if (kind == pb::INPUT)
    b->set_input_name(name);
  *b->mutable_type() = std::move(type);
  b->set_offset(offset);
  return b;
}

inline void addUpload(pb::Stage *s, int buffer, int afterStage, int64_t offset) {
  pb::Upload *u = s->add_body()->mutable_upload();
  u->set_buffer(buffer);
  u->set_after_stage(afterStage);
  u->set_offset(offset);
}
inline void addDownload(pb::Stage *s, int buffer, int64_t offset) {
  pb::Download *d = s->add_body()->mutable_download();
  d->set_buffer(buffer);
  d->set_offset(offset);
}
inline void addCall(pb::Stage *s, int function, std::vector<int64_t> args,
                    std::vector<int64_t> results) {
  pb::Call *c = s->add_body()->mutable_call();
  c->set_function(function);
  for (int64_t a : args)
    c->add_arg_offsets(a);
  for (int64_t r : results)
    c->add_result_offsets(r);
}
inline void addAccumulate(pb::Stage *s, int param, int64_t offset) {
  pb::Accumulate *a = s->add_body()->mutable_accumulate();
  a->set_param(param);
  a->set_offset(offset);
}
inline void addPrefetch(pb::Stage *s) { s->add_body()->mutable_prefetch_next(); }

inline pb::Stage *addStage(pb::Plan &plan, const std::string &name, pb::StageKind kind, int begin,
                           int end, int64_t weightOffset, int64_t weightBytes, int64_t stateOffset,
                           int64_t gradBytes) {
  pb::Stage *s = plan.add_stages();
  s->set_name(name);
  s->set_kind(kind);
  s->set_begin(begin);
  s->set_end(end);
  s->set_weight_offset(weightOffset);
  s->set_weight_bytes(weightBytes);
  s->set_state_offset(stateOffset);
  s->set_grad_bytes(gradBytes);
  s->set_activation_bytes(320);
  s->set_workspace_bytes(256);
  s->set_peak_bytes(256 + 2 * 512 + 2 * 512 + 256);
  return s;
}

/// The two-layer plan of the file comment. Indices:
///   params: 0 layers.0.w [4,4] (trainable), 1 lm_head [4,8] (trainable), 2 norm.scale [4]
///   (frozen); functions: 0 block_0, 1 block_0_vjp, 2 tail, 3 tail_fused; constants: 0 [4] f32;
///   host buffers: 0 x, 1 labels (inputs), 2 block_0#0, 3 block_0#0.grad, 4 loss;
///   stages: 0 F0, 1 B0 (fused tail), 2 B1.
inline pb::Plan makeValidPlan() {
  using S = pb::BufferRef;
  const pb::TensorType x = tensorType(pb::F32, {2, 4});
  const pb::TensorType w = tensorType(pb::F32, {4, 4});
  const pb::TensorType head = tensorType(pb::F32, {4, 8});
  const pb::TensorType scale = tensorType(pb::F32, {4});
  const pb::TensorType logits = tensorType(pb::F32, {2, 8});
  const pb::TensorType labels = tensorType(pb::I64, {2});
  const pb::TensorType loss = tensorType(pb::F32, {});

  pb::Plan plan;
  plan.set_producer("rpc-compile test");
  plan.set_model("tiny.onnx");
  plan.set_weights_file("tiny.safetensors");
  pb::Config *c = plan.mutable_config();
  c->set_micro_batches(2);
  c->set_gpus(2);
  c->set_update(pb::SYNC);
  c->set_recompute(pb::STAGE);
  c->set_compute_dtype(pb::F32);
  c->set_dispatch("round_robin");
  pb::AdamW *o = c->mutable_optimizer();
  o->set_lr(1e-3);
  o->set_beta1(0.9);
  o->set_beta2(0.999);
  o->set_eps(1e-8);
  o->set_weight_decay(0.01);
  o->set_grad_clip(1.0);

  pb::HostArena *h = plan.mutable_host_arena();
  h->set_weights(256); // 64 + 128 + 16 used
  h->set_state(256);   // 64 + 128 used
  h->set_grads(256);   // the same layout (no shared params)
  h->set_record(256);  // 32 + 16 + 32 + 32 + 4 used
  h->set_activations(512);
  pb::DeviceArena *d = plan.mutable_device_arena();
  d->set_constants(256);
  d->set_slot(512);
  d->set_activations(512);
  d->set_workspace(256);

  addParam(plan, "layers.0.w", w, true, 0, 0, 0);
  addParam(plan, "lm_head", head, true, 1, 64, 64);
  addParam(plan, "norm.scale", scale, false, 1, 192, -1);

  pb::Layer *l0 = plan.add_layers();
  l0->set_name("block_0");
  l0->set_forward(0);
  l0->set_backward(1);
  l0->add_params(0);
  pb::Layer *l1 = plan.add_layers();
  l1->set_name("tail");
  l1->set_forward(2);
  l1->set_backward(3);
  l1->add_params(1);
  l1->add_params(2);

  pb::Constant *k = plan.add_constants();
  *k->mutable_type() = scale;
  k->set_offset(0);
  k->set_data(std::string(16, '\0'));

  // 0 block_0: y = x @ w + x.
  pb::Function *f0 = plan.add_functions();
  f0->set_name("block_0");
  *f0->add_args() = x;
  *f0->add_results() = x;
  f0->set_workspace_bytes(256);
  addInstruction(f0, "matmul", {ref(S::ARG, 0, x), ref(S::PARAM, 0, w)}, {ref(S::WORKSPACE, 0, x)});
  addInstruction(f0, "add", {ref(S::WORKSPACE, 0, x), ref(S::ARG, 0, x)}, {ref(S::RESULT, 0, x)});

  // 1 block_0_vjp(x, dy) -> (dw, dx).
  pb::Function *f1 = plan.add_functions();
  f1->set_name("block_0_vjp");
  *f1->add_args() = x;
  *f1->add_args() = x;
  *f1->add_results() = w;
  *f1->add_results() = x;
  f1->set_workspace_bytes(256);
  pb::Instruction *t0 = addInstruction(f1, "transpose", {ref(S::ARG, 0, x)},
                                       {ref(S::WORKSPACE, 0, tensorType(pb::F32, {4, 2}))});
  setInts(t0, "permutation", {1, 0});
  addInstruction(f1, "matmul",
                 {ref(S::WORKSPACE, 0, tensorType(pb::F32, {4, 2})), ref(S::ARG, 1, x)},
                 {ref(S::RESULT, 0, w)});
  pb::Instruction *t1 =
      addInstruction(f1, "transpose", {ref(S::PARAM, 0, w)}, {ref(S::WORKSPACE, 64, w)});
  setInts(t1, "permutation", {1, 0});
  addInstruction(f1, "matmul", {ref(S::ARG, 1, x), ref(S::WORKSPACE, 64, w)},
                 {ref(S::WORKSPACE, 128, x)});
  addInstruction(f1, "add", {ref(S::WORKSPACE, 128, x), ref(S::ARG, 1, x)}, {ref(S::RESULT, 1, x)});

  // 2 tail(h, labels) -> loss.
  pb::Function *f2 = plan.add_functions();
  f2->set_name("tail");
  *f2->add_args() = x;
  *f2->add_args() = labels;
  *f2->add_results() = loss;
  f2->set_workspace_bytes(128);
  pb::Instruction *n = addInstruction(f2, "rms_norm", {ref(S::ARG, 0, x), ref(S::PARAM, 2, scale)},
                                      {ref(S::WORKSPACE, 0, x)});
  setInt(n, "axis", 1);
  setFloat(n, "epsilon", 1e-6);
  addInstruction(f2, "matmul", {ref(S::WORKSPACE, 0, x), ref(S::PARAM, 1, head)},
                 {ref(S::WORKSPACE, 64, logits)});
  pb::Instruction *ce =
      addInstruction(f2, "cross_entropy", {ref(S::WORKSPACE, 64, logits), ref(S::ARG, 1, labels)},
                     {ref(S::RESULT, 0, loss)});
  setString(ce, "reduction", "mean");
  setInt(ce, "ignore_index", -100);

  // 3 tail_fused(h, labels) -> (loss, dlm_head, dh). The instructions stand in for the real
  // backward; only their buffers matter here.
  pb::Function *f3 = plan.add_functions();
  f3->set_name("tail_fused");
  *f3->add_args() = x;
  *f3->add_args() = labels;
  *f3->add_results() = loss;
  *f3->add_results() = head;
  *f3->add_results() = x;
  f3->set_workspace_bytes(256);
  n = addInstruction(f3, "rms_norm", {ref(S::ARG, 0, x), ref(S::PARAM, 2, scale)},
                     {ref(S::WORKSPACE, 0, x)});
  setInt(n, "axis", 1);
  setFloat(n, "epsilon", 1e-6);
  addInstruction(f3, "add", {ref(S::WORKSPACE, 0, x), ref(S::CONSTANT, 0, scale)},
                 {ref(S::WORKSPACE, 32, x)});
  addInstruction(f3, "matmul", {ref(S::WORKSPACE, 32, x), ref(S::PARAM, 1, head)},
                 {ref(S::WORKSPACE, 64, logits)});
  ce = addInstruction(f3, "cross_entropy", {ref(S::WORKSPACE, 64, logits), ref(S::ARG, 1, labels)},
                      {ref(S::RESULT, 0, loss)});
  setString(ce, "reduction", "mean");
  setInt(ce, "ignore_index", -100);
  addInstruction(f3, "copy", {ref(S::PARAM, 1, head)}, {ref(S::RESULT, 1, head)});
  addInstruction(f3, "copy", {ref(S::ARG, 0, x)}, {ref(S::RESULT, 2, x)});

  addBuffer(plan, "x", pb::INPUT, x, 0);
  addBuffer(plan, "labels", pb::INPUT, labels, 32);
  addBuffer(plan, "block_0#0", pb::ACTIVATION, x, 64);
  addBuffer(plan, "block_0#0.grad", pb::COTANGENT, x, 96);
  addBuffer(plan, "loss", pb::LOSS, loss, 128);

  // F0: x -> block_0 -> block_0#0.
  pb::Stage *f = addStage(plan, "F0", pb::FORWARD, 0, 1, 0, 64, 0, 0);
  addUpload(f, 0, -1, 0);
  addPrefetch(f);
  addCall(f, 0, {0}, {32});
  addDownload(f, 2, 32);
  // B0 (fused tail): block_0#0, labels -> loss, dlm_head (accumulated), dh.
  pb::Stage *b0 = addStage(plan, "B0", pb::FUSED_TAIL, 1, 2, 64, 144, 64, 128);
  addUpload(b0, 2, 0, 0);
  addUpload(b0, 1, -1, 32);
  addPrefetch(b0);
  addCall(b0, 3, {0, 32}, {64, 128, 256});
  addAccumulate(b0, 1, 128);
  addDownload(b0, 4, 64);
  addDownload(b0, 3, 256);
  // B1: recompute block_0 from x, backward with the cotangent from B0.
  pb::Stage *b1 = addStage(plan, "B1", pb::BACKWARD, 0, 1, 0, 64, 0, 64);
  addUpload(b1, 0, -1, 0);
  addUpload(b1, 3, 1, 32);
  addPrefetch(b1);
  addCall(b1, 1, {0, 32}, {64, 128});
  addAccumulate(b1, 0, 64);

  pb::OptimizerStep *s1 = plan.add_optimizer_steps();
  s1->set_layer(1);
  s1->set_grads_stage(1);
  s1->add_upload_stages(1);
  pb::OptimizerStep *s0 = plan.add_optimizer_steps();
  s0->set_layer(0);
  s0->set_grads_stage(2);
  s0->add_upload_stages(0);
  s0->add_upload_stages(2);
  return plan;
}

} // namespace rp::testing

#endif // RP_TEST_UNIT_PLANTESTUTIL_H
