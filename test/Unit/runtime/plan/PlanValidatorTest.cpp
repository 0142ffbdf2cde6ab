//===- PlanValidatorTest.cpp - validatePlan: one mutation per check -------===//
//
// The plan of PlanTestUtil.h is valid; each case mutates one field and expects the message
// (a substring) of the check it breaks. One or more cases per family of PlanValidator.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanValidator.h"

#include "test/Unit/support/PlanTestUtil.h"

#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <string>

namespace rp::runtime {
namespace {

namespace pb = rp::plan;
using rp::testing::makeValidPlan;
using rp::testing::tensorType;

struct Mutation {
  const char *name;
  std::function<void(pb::Plan &)> mutate;
  const char *message;
};

pb::Instruction &instr(pb::Plan &p, int f, int k) {
  return *p.mutable_functions(f)->mutable_body(k);
}
pb::Step &step(pb::Plan &p, int s, int k) { return *p.mutable_stages(s)->mutable_body(k); }

const Mutation kMutations[] = {
    // ---- config ----
    {"micro_batches", [](pb::Plan &p) { p.mutable_config()->set_micro_batches(0); },
     "config: micro_batches 0 must be >= 1"},
    {"gpus", [](pb::Plan &p) { p.mutable_config()->set_gpus(-1); }, "config: gpus -1 must be >= 1"},
    {"compute_dtype", [](pb::Plan &p) { p.mutable_config()->set_compute_dtype(pb::I64); },
     "config: compute_dtype i64 must be f32, f16 or bf16"},
    {"dispatch", [](pb::Plan &p) { p.mutable_config()->set_dispatch("lifo"); },
     "config: dispatch 'lifo' is not supported: expected 'round_robin'"},
    {"lr", [](pb::Plan &p) { p.mutable_config()->mutable_optimizer()->set_lr(0); },
     "config: optimizer lr 0 must be > 0"},
    {"beta1", [](pb::Plan &p) { p.mutable_config()->mutable_optimizer()->set_beta1(-0.5); },
     "config: optimizer beta1 -0.5 must be in [0, 1)"},
    {"beta2", [](pb::Plan &p) { p.mutable_config()->mutable_optimizer()->set_beta2(1.0); },
     "config: optimizer beta2 1 must be in [0, 1)"},
    {"eps", [](pb::Plan &p) { p.mutable_config()->mutable_optimizer()->set_eps(0); },
     "config: optimizer eps 0 must be > 0"},
    // ---- arenas ----
    {"arena alignment", [](pb::Plan &p) { p.mutable_device_arena()->set_workspace(300); },
     "device_arena.workspace 300 must be a multiple of 256 bytes"},
    {"negative arena", [](pb::Plan &p) { p.mutable_host_arena()->set_state(-256); },
     "host_arena.state -256 must be a multiple of 256 bytes"},
    {"host activations", [](pb::Plan &p) { p.mutable_host_arena()->set_activations(256); },
     "host_arena.activations 256 must be micro_batches 2 * record 256"},
    // ---- tensor types ----
    {"unknown dtype",
     [](pb::Plan &p) { p.mutable_params(0)->mutable_type()->set_dtype(pb::DTYPE_UNSPECIFIED); },
     "param 'layers.0.w': type [4, 4] dtype(0) has an unknown dtype"},
    {"negative dim", [](pb::Plan &p) { p.mutable_params(0)->mutable_type()->set_shape(1, -4); },
     "param 'layers.0.w': type [4, -4] f32 has a negative dimension"},
    {"huge type",
     [](pb::Plan &p) {
       *p.mutable_host_buffers(0)->mutable_type() = tensorType(pb::F32, {1 << 30, 1 << 30});
     },
     "host buffer 'x': type [1073741824, 1073741824] f32 has more than 2^48 elements"},
    {"2^48 bytes",
     [](pb::Plan &p) {
       *p.mutable_host_buffers(0)->mutable_type() = tensorType(pb::F32, {int64_t(1) << 47});
     },
     "is 562949953421312 bytes, more than 2^48"},
    // ---- params ----
    {"param layer out of range", [](pb::Plan &p) { p.mutable_params(1)->set_layer(5); },
     "param 'lm_head': layer 5 is out of range: the plan has 2 layers"},
    {"param weights past host weights",
     [](pb::Plan &p) { p.mutable_params(1)->set_weight_offset(200); },
     "param 'lm_head': weights: offset 200 + 128 bytes = 328 exceeds host_arena.weights (256 "
     "bytes)"},
    {"param state past host state", [](pb::Plan &p) { p.mutable_params(1)->set_state_offset(160); },
     "param 'lm_head': fp32 state: offset 160 + 128 bytes = 288 exceeds host_arena.state (256 "
     "bytes)"},
    {"frozen param with state", [](pb::Plan &p) { p.mutable_params(2)->set_state_offset(0); },
     "param 'norm.scale': a frozen param has state_offset 0, grad_offset -1, expected -1, -1 and no primary"},
    {"trainable integer param",
     [](pb::Plan &p) {
       p.mutable_params(2)->mutable_type()->set_dtype(pb::I32);
       p.mutable_params(2)->set_trainable(true);
       p.mutable_params(2)->set_state_offset(192);
     },
     "param 'norm.scale': type [4] i32: only floating-point params can be trainable"},
    {"bf16 param", [](pb::Plan &p) { p.mutable_params(2)->mutable_type()->set_dtype(pb::BF16); },
     "param 'norm.scale': type [4] bf16: floating-point params are stored as f32"},
    {"trainable param declared twice",
     [](pb::Plan &p) { p.mutable_params(2)->set_name("lm_head"); },
     "param 'lm_head': declared twice (params 1 and 2) in layer 1: a shared param has one entry "
     "per layer that reads it"},
    {"frozen param twice in one layer",
     [](pb::Plan &p) {
       rp::testing::addParam(p, "norm.scale", tensorType(pb::F32, {4}), false, 1, 208, -1);
       p.mutable_layers(1)->add_params(3);
     },
     "param 'norm.scale': declared twice (params 2 and 3) in layer 1: a shared param has one "
     "entry per layer that reads it"},
    {"shared frozen param of two types",
     [](pb::Plan &p) {
       rp::testing::addParam(p, "norm.scale", tensorType(pb::F32, {2}), false, 0, 64, -1);
       p.mutable_layers(0)->add_params(3);
     },
     "the entries of a shared param differ in type ([4] f32, [2] f32), init or trainability"},
    {"integer param without stored value",
     [](pb::Plan &p) {
       p.mutable_params(2)->mutable_type()->set_dtype(pb::I64);
       p.mutable_params(2)->set_init(pb::PARAM_INIT_ZEROS);
     },
     "only floating-point params can start without a stored value"},
    // ---- layers ----
    {"layer function out of range", [](pb::Plan &p) { p.mutable_layers(0)->set_forward(9); },
     "layer 'block_0': forward function 9 is out of range: the plan has 4 functions"},
    {"saving function out of range", [](pb::Plan &p) { p.mutable_layers(0)->set_saving(4); },
     "layer 'block_0': saving function 4 is out of range: the plan has 4 functions"},
    {"saving function negative", [](pb::Plan &p) { p.mutable_layers(1)->set_saving(-1); },
     "layer 'tail': saving function -1 is out of range: the plan has 4 functions"},
    {"layer param out of range", [](pb::Plan &p) { p.mutable_layers(1)->set_params(1, 7); },
     "layer 'tail': param 7 is out of range: the plan has 3 params"},
    {"layer lists another layer's param", [](pb::Plan &p) { p.mutable_layers(0)->add_params(2); },
     "layer 'block_0': lists param 'norm.scale', whose layer is 1"},
    {"param not listed", [](pb::Plan &p) { p.mutable_layers(1)->mutable_params()->RemoveLast(); },
     "param 'norm.scale': its layer 'tail' does not list it"},
    {"no layers",
     [](pb::Plan &p) {
       p.clear_layers();
       p.clear_params();
     },
     "the plan has no layers"},
    // ---- constants ----
    {"constant data size", [](pb::Plan &p) { p.mutable_constants(0)->set_data("abc"); },
     "constant #0: holds 3 bytes of data, its type [4] f32 needs 16"},
    {"constant past the region", [](pb::Plan &p) { p.mutable_constants(0)->set_offset(248); },
     "constant #0: offset 248 + 16 bytes = 264 exceeds device_arena.constants (256 bytes)"},
    // ---- functions and instructions ----
    {"function workspace", [](pb::Plan &p) { p.mutable_functions(1)->set_workspace_bytes(512); },
     "function 'block_0_vjp': workspace_bytes 512 exceeds device_arena.workspace (256 bytes)"},
    {"workspace ref past workspace_bytes",
     [](pb::Plan &p) { instr(p, 2, 1).mutable_results(0)->set_offset(96); },
     "function 'tail' instruction 1 (kernel 'matmul') result 0: offset 96 + 64 bytes = 160 "
     "exceeds the function's workspace_bytes (128 bytes)"},
    {"unknown kernel", [](pb::Plan &p) { instr(p, 0, 1).set_kernel("conv"); },
     "function 'block_0' instruction 1: unknown kernel id 'conv'"},
    {"graph.param is no kernel", [](pb::Plan &p) { instr(p, 0, 1).set_kernel("load_param"); },
     "unknown kernel id 'load_param'"},
    {"operand count", [](pb::Plan &p) { instr(p, 0, 1).mutable_operands()->RemoveLast(); },
     "function 'block_0' instruction 1 (kernel 'add'): has 1 operands, the kernel takes 2"},
    {"result count", [](pb::Plan &p) { *instr(p, 0, 1).add_results() = instr(p, 0, 1).results(0); },
     "function 'block_0' instruction 1 (kernel 'add'): has 2 results, the kernel makes 1"},
    {"missing required attribute",
     [](pb::Plan &p) { instr(p, 1, 0).mutable_attrs()->erase("permutation"); },
     "function 'block_0_vjp' instruction 0 (kernel 'transpose'): missing required attribute "
     "'permutation' (ints)"},
    {"attribute kind",
     [](pb::Plan &p) { (*instr(p, 2, 0).mutable_attrs())["epsilon"].set_s("1e-6"); },
     "function 'tail' instruction 0 (kernel 'rms_norm'): attribute 'epsilon' holds string, "
     "expected float"},
    {"unknown attribute", [](pb::Plan &p) { (*instr(p, 0, 0).mutable_attrs())["alpha"].set_f(1); },
     "(kernel 'matmul'): unknown attribute 'alpha' (the kernel takes transpose_a, transpose_b)"},
    {"arg index", [](pb::Plan &p) { instr(p, 0, 0).mutable_operands(0)->set_index(3); },
     "function 'block_0' instruction 0 (kernel 'matmul') operand 0: argument index 3 is out of "
     "range: the function has 1 arguments"},
    {"result index", [](pb::Plan &p) { instr(p, 0, 1).mutable_results(0)->set_index(1); },
     "result 0: result index 1 is out of range: the function has 1 results"},
    {"param index", [](pb::Plan &p) { instr(p, 0, 0).mutable_operands(1)->set_index(3); },
     "operand 1: param index 3 is out of range: the plan has 3 params"},
    {"param ref past the param",
     [](pb::Plan &p) {
       *instr(p, 0, 0).mutable_operands(1)->mutable_type() = tensorType(pb::F32, {4, 8});
     },
     "operand 1: offset 0 + 128 bytes = 128 exceeds param 'layers.0.w' in the weight slot (64 "
     "bytes)"},
    {"constant index", [](pb::Plan &p) { instr(p, 3, 1).mutable_operands(1)->set_index(1); },
     "operand 1: constant index 1 is out of range: the plan has 1 constants"},
    {"arg ref past the argument",
     [](pb::Plan &p) { instr(p, 0, 1).mutable_operands(1)->set_offset(8); },
     "operand 1: offset 8 + 32 bytes = 40 exceeds argument 0 (32 bytes)"},
    {"unknown space",
     [](pb::Plan &p) {
       instr(p, 0, 1).mutable_operands(1)->set_space(static_cast<pb::BufferRef::Space>(9));
     },
     "operand 1: unknown buffer space 9"},
    // ---- host buffers ----
    {"buffer past the record", [](pb::Plan &p) { p.mutable_host_buffers(0)->set_offset(240); },
     "host buffer 'x': offset 240 + 32 bytes = 272 exceeds host_arena.record (256 bytes)"},
    {"input without a name", [](pb::Plan &p) { p.mutable_host_buffers(1)->clear_input_name(); },
     "host buffer 'labels': an INPUT buffer needs input_name"},
    // ---- stage order ----
    {"backward before the tail", [](pb::Plan &p) { p.mutable_stages(0)->set_kind(pb::BACKWARD); },
     "stage 'F0' (backward): a backward stage before the fused tail: stages run forward*, one "
     "fused_tail, backward*"},
    {"forward after the tail", [](pb::Plan &p) { p.mutable_stages(2)->set_kind(pb::FORWARD); },
     "stage 'B1' (forward): a forward stage after the fused tail stage 'B0' (fused_tail)"},
    {"two fused tails", [](pb::Plan &p) { p.mutable_stages(2)->set_kind(pb::FUSED_TAIL); },
     "stage 'B1' (fused_tail): a second fused tail (the first is stage 'B0' (fused_tail))"},
    {"no fused tail",
     [](pb::Plan &p) {
       p.mutable_stages()->DeleteSubrange(1, 2);
       p.mutable_stages(0)->set_end(2);
     },
     "the plan has no fused_tail stage: stages run forward*, one fused_tail, backward*"},
    {"empty stage", [](pb::Plan &p) { p.mutable_stages(0)->set_begin(1); },
     "stage 'F0' (forward): layers [1, 1) is not a non-empty range of the 2 layers"},
    {"forward not from layer 0",
     [](pb::Plan &p) {
       p.mutable_stages(0)->set_begin(1);
       p.mutable_stages(0)->set_end(2);
     },
     "stage 'F0' (forward): begins at layer 1, expected 0: forward stages ascend contiguously "
     "from layer 0"},
    {"fused tail begins elsewhere", [](pb::Plan &p) { p.mutable_stages(1)->set_begin(0); },
     "stage 'B0' (fused_tail): begins at layer 0, expected 1 (where the forward stages end)"},
    {"fused tail short of the last layer",
     [](pb::Plan &p) {
       p.add_layers()->CopyFrom(p.layers(1));
       p.mutable_layers(2)->clear_params();
       p.mutable_layers(2)->set_name("extra");
     },
     "stage 'B0' (fused_tail): ends at layer 2, expected 3 (the number of layers)"},
    {"backward not down to layer 0", [](pb::Plan &p) { p.mutable_stages()->RemoveLast(); },
     "the backward stages end at layer 1, expected 0: every layer needs a backward stage"},
    {"unknown stage kind",
     [](pb::Plan &p) { p.mutable_stages(0)->set_kind(static_cast<pb::StageKind>(7)); },
     "stage 'F0' (unknown kind): unknown stage kind 7"},
    // ---- stage regions ----
    {"slot overflow", [](pb::Plan &p) { p.mutable_device_arena()->set_slot(256); },
     "stage 'B0' (fused_tail): weight_bytes 144 + grad_bytes 128 = 272 exceeds "
     "device_arena.slot (256 bytes)"},
    {"stage weights past host weights",
     [](pb::Plan &p) { p.mutable_stages(0)->set_weight_offset(224); },
     "stage 'F0' (forward): weights: offset 224 + 64 bytes = 288 exceeds host_arena.weights "
     "(256 bytes)"},
    {"stage weights miss a param", [](pb::Plan &p) { p.mutable_stages(1)->set_weight_bytes(128); },
     "stage 'B0' (fused_tail): param 'norm.scale' has host weights [192, 208), outside the "
     "stage's weights [64, 192)"},
    {"stage gradients past host state",
     [](pb::Plan &p) { p.mutable_stages(2)->set_state_offset(224); },
     "stage 'B1' (backward): gradients: offset 224 + 64 bytes = 288 exceeds host_arena.grads "
     "(256 bytes)"},
    {"stage gradients miss a param", [](pb::Plan &p) { p.mutable_stages(2)->set_state_offset(64); },
     "stage 'B1' (backward): param 'layers.0.w' has an fp32 gradient slot [0, 64), outside the "
     "stage's gradients [64, 128)"},
    {"forward stage with gradients", [](pb::Plan &p) { p.mutable_stages(0)->set_grad_bytes(64); },
     "stage 'F0' (forward): a forward stage has grad_bytes 64, expected 0"},
    {"stage activations", [](pb::Plan &p) { p.mutable_stages(0)->set_activation_bytes(1024); },
     "stage 'F0' (forward): activation_bytes 1024 exceeds device_arena.activations (512 bytes)"},
    // ---- stage bodies ----
    {"upload past the activation set",
     [](pb::Plan &p) { step(p, 0, 0).mutable_upload()->set_offset(496); },
     "stage 'F0' (forward) step 0 (upload) of host buffer 'x': offset 496 + 32 bytes = 528 "
     "exceeds device_arena.activations (512 bytes)"},
    {"download past the activation set",
     [](pb::Plan &p) { step(p, 1, 5).mutable_download()->set_offset(510); },
     "stage 'B0' (fused_tail) step 5 (download) to host buffer 'loss': offset 510 + 4 bytes = "
     "514 exceeds device_arena.activations"},
    {"call result past the activation set",
     [](pb::Plan &p) { step(p, 1, 3).mutable_call()->set_result_offsets(1, 448); },
     "stage 'B0' (fused_tail) step 3 (call) of function 'tail_fused' result 1: offset 448 + "
     "128 bytes = 576 exceeds device_arena.activations (512 bytes)"},
    {"accumulate past the activation set",
     [](pb::Plan &p) { step(p, 1, 4).mutable_accumulate()->set_offset(448); },
     "stage 'B0' (fused_tail) step 4 (accumulate) of param 'lm_head': offset 448 + 128 bytes"},
    {"call offset counts",
     [](pb::Plan &p) { step(p, 2, 3).mutable_call()->mutable_arg_offsets()->RemoveLast(); },
     "stage 'B1' (backward) step 3 (call) of function 'block_0_vjp': passes 1 argument and 2 "
     "result offsets, the function has 2 arguments and 2 results"},
    {"call function index", [](pb::Plan &p) { step(p, 0, 2).mutable_call()->set_function(4); },
     "stage 'F0' (forward) step 2 (call): function 4 is out of range: the plan has 4 functions"},
    {"upload buffer index", [](pb::Plan &p) { step(p, 0, 0).mutable_upload()->set_buffer(5); },
     "stage 'F0' (forward) step 0 (upload): buffer 5 is out of range: the plan has 5 host "
     "buffers"},
    {"two prefetches",
     [](pb::Plan &p) { p.mutable_stages(0)->add_body()->mutable_prefetch_next(); },
     "stage 'F0' (forward): the body has 2 prefetch_next steps, expected exactly 1"},
    {"no prefetch", [](pb::Plan &p) { p.mutable_stages(0)->mutable_body()->DeleteSubrange(1, 1); },
     "stage 'F0' (forward): the body has 0 prefetch_next steps, expected exactly 1"},
    {"prefetch before any upload",
     [](pb::Plan &p) { p.mutable_stages(0)->mutable_body()->SwapElements(0, 1); },
     "stage 'F0' (forward) step 0 (prefetch_next): comes before any upload"},
    {"empty step", [](pb::Plan &p) { p.mutable_stages(0)->add_body(); },
     "stage 'F0' (forward) step 4: an empty step"},
    {"upload after a later stage",
     [](pb::Plan &p) { step(p, 1, 0).mutable_upload()->set_after_stage(2); },
     "stage 'B0' (fused_tail) step 0 (upload): host buffer 'block_0#0' has after_stage 2, which "
     "is not an earlier stage than this one (1)"},
    {"upload after a stage that does not download it",
     [](pb::Plan &p) { step(p, 2, 1).mutable_upload()->set_after_stage(0); },
     "stage 'B1' (backward) step 1 (upload): host buffer 'block_0#0.grad' is uploaded after "
     "stage 'F0' (forward), whose body does not download it"},
    {"input upload after a stage",
     [](pb::Plan &p) { step(p, 1, 1).mutable_upload()->set_after_stage(0); },
     "host buffer 'labels' is a model input, its upload has after_stage 0, expected -1"},
    {"accumulate in a forward stage",
     [](pb::Plan &p) { rp::testing::addAccumulate(p.mutable_stages(0), 0, 64); },
     "stage 'F0' (forward) step 4 (accumulate): a forward stage accumulates the gradient of "
     "param 'layers.0.w'"},
    {"accumulate a frozen param",
     [](pb::Plan &p) { step(p, 1, 4).mutable_accumulate()->set_param(2); },
     "stage 'B0' (fused_tail) step 4 (accumulate): accumulates the gradient of frozen param "
     "'norm.scale'"},
    {"accumulate a param of another layer",
     [](pb::Plan &p) { step(p, 1, 4).mutable_accumulate()->set_param(0); },
     "param 'layers.0.w' belongs to layer 0, outside the stage's layers [1, 2)"},
    // ---- optimizer steps ----
    {"optimizer grads stage is forward",
     [](pb::Plan &p) { p.mutable_optimizer_steps(1)->set_grads_stage(0); },
     "optimizer step #1 (layer 'block_0'): grads_stage is stage 'F0' (forward), which "
     "computes no gradients"},
    {"optimizer grads stage misses the layer",
     [](pb::Plan &p) { p.mutable_optimizer_steps(1)->set_grads_stage(1); },
     "optimizer step #1 (layer 'block_0'): grads_stage is stage 'B0' (fused_tail), which "
     "covers layers [1, 2), not layer 0"},
    {"optimizer stage index", [](pb::Plan &p) { p.mutable_optimizer_steps(0)->set_grads_stage(3); },
     "optimizer step #0 (layer 'tail'): grads_stage 3 is out of range: the plan has 3 stages"},
    {"optimizer layer index", [](pb::Plan &p) { p.mutable_optimizer_steps(0)->set_layer(-1); },
     "optimizer step #0: layer -1 is out of range: the plan has 2 layers"},
    {"optimizer upload stage misses the layer",
     [](pb::Plan &p) { p.mutable_optimizer_steps(0)->add_upload_stages(0); },
     "optimizer step #0 (layer 'tail'): upload_stages names stage 'F0' (forward), which covers "
     "layers [0, 1), neither layer 1 nor a reader of a shared param it owns"},
    {"optimizer upload stages leave out a stage holding the layer",
     [](pb::Plan &p) { p.mutable_optimizer_steps(1)->mutable_upload_stages()->RemoveLast(); },
     "optimizer step #1 (layer 'block_0'): upload_stages leaves out stage 'B1' (backward), "
     "which holds the layer (or a copy of its shared param) and uploads it"},
    {"grads stage accumulates a param twice",
     [](pb::Plan &p) { rp::testing::addAccumulate(p.mutable_stages(2), 0, 64); },
     "optimizer step #1 (layer 'block_0'): grads_stage is stage 'B1' (backward), which "
     "accumulates param "
     "'layers.0.w' 2 times per micro-batch, expected once"},
    {"grads stage does not accumulate a param",
     [](pb::Plan &p) {
       auto *body = p.mutable_stages(2)->mutable_body();
       for (int k = 0; k < body->size(); ++k)
         if (body->Get(k).has_accumulate()) {
           body->DeleteSubrange(k, 1);
           break;
         }
     },
     "optimizer step #1 (layer 'block_0'): grads_stage is stage 'B1' (backward), which "
     "accumulates param "
     "'layers.0.w' 0 times per micro-batch, expected once"},
    {"host buffer downloaded by two stages",
     [](pb::Plan &p) { rp::testing::addDownload(p.mutable_stages(1), 2, 32); },
     "host buffer 'block_0#0' is downloaded by stage 'F0' (forward) and stage 'B0' (fused_tail); "
     "a host buffer has one producing stage"},
    {"layer without optimizer step", [](pb::Plan &p) { p.mutable_optimizer_steps()->RemoveLast(); },
     "layer 'block_0': has trainable params but no optimizer step"},
    {"two optimizer steps for a layer",
     [](pb::Plan &p) { p.add_optimizer_steps()->CopyFrom(p.optimizer_steps(0)); },
     "optimizer step #2 (layer 'tail'): a second step for the layer (the first is #0)"},
};

TEST(PlanValidatorTest, ValidPlanPasses) {
  Status s = validatePlan(makeValidPlan());
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(PlanValidatorTest, LoraParamWithoutStoredValuePasses) {
  pb::Plan plan = makeValidPlan();
  plan.mutable_params(1)->set_init(pb::PARAM_INIT_KAIMING_UNIFORM);
  Status s = validatePlan(plan);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(PlanValidatorTest, SharedFrozenParamPasses) {
  // A frozen param read by both layers: one entry per layer, with the same name and type.
  pb::Plan plan = makeValidPlan();
  plan.mutable_host_arena()->set_weights(512);
  rp::testing::addParam(plan, "norm.scale", tensorType(pb::F32, {4}), false, 0, 64, -1);
  plan.mutable_layers(0)->add_params(3);
  // Layer 0's weights become [0, 80): F0 and B1 hold them; layer 1 moves to [80, 224).
  plan.mutable_params(1)->set_weight_offset(80);
  plan.mutable_params(2)->set_weight_offset(208);
  plan.mutable_stages(0)->set_weight_bytes(80);
  plan.mutable_stages(1)->set_weight_offset(80);
  plan.mutable_stages(2)->set_weight_bytes(80);
  Status s = validatePlan(plan);
  EXPECT_TRUE(s.ok()) << s.message();
}

/// makeValidPlan reading its three params in place from a data file (no weights file):
/// layers.0.w as bf16 (a float param loads from F32, F16 or BF16), lm_head and norm.scale as
/// f32.
pb::Plan makeExternalWeightsPlan() {
  pb::Plan plan = makeValidPlan();
  plan.set_weights_file("");
  int64_t offset = 0;
  for (const pb::Param &p : plan.params()) {
    pb::ExternalWeight *w = plan.add_external_weights();
    w->set_name(p.name());
    w->set_file("/data/model.data");
    w->set_offset(offset);
    w->set_dtype(p.name() == "layers.0.w" ? pb::BF16 : pb::F32);
    int64_t elements = 1;
    for (int64_t d : p.type().shape())
      elements *= d;
    w->set_bytes(elements * (w->dtype() == pb::BF16 ? 2 : 4));
    offset += w->bytes();
  }
  return plan;
}

TEST(PlanValidatorTest, ExternalWeightsPass) {
  Status s = validatePlan(makeExternalWeightsPlan());
  EXPECT_TRUE(s.ok()) << s.message();
  // A param without a stored value needs no range.
  pb::Plan lora = makeExternalWeightsPlan();
  lora.mutable_params(1)->set_init(pb::PARAM_INIT_ZEROS);
  lora.mutable_external_weights()->DeleteSubrange(1, 1);
  s = validatePlan(lora);
  EXPECT_TRUE(s.ok()) << s.message();
}

const Mutation kExternalWeightMutations[] = {
    {"both sources", [](pb::Plan &p) { p.set_weights_file("tiny.safetensors"); },
     "the plan names both a weights file ('tiny.safetensors') and 3 external weights"},
    {"unknown name", [](pb::Plan &p) { p.mutable_external_weights(2)->set_name("norm"); },
     "external weight 2 ('norm'): no param has this name"},
    {"second range",
     [](pb::Plan &p) { p.mutable_external_weights(2)->set_name("lm_head"); },
     "external weight 2 ('lm_head'): a second range for the same param"},
    {"relative file",
     [](pb::Plan &p) { p.mutable_external_weights(0)->set_file("model.data"); },
     "external weight 0 ('layers.0.w'): the file 'model.data' is not an absolute path"},
    {"integer dtype for a float param",
     [](pb::Plan &p) { p.mutable_external_weights(1)->set_dtype(pb::I32); },
     "external weight 1 ('lm_head'): [4, 8] i32 at offset 32 does not load into the param's "
     "[4, 8] f32"},
    {"wrong byte count", [](pb::Plan &p) { p.mutable_external_weights(0)->set_bytes(64); },
     "external weight 0 ('layers.0.w'): 64 bytes, the param's shape as [4, 4] bf16 needs 32"},
    {"missing range", [](pb::Plan &p) { p.mutable_external_weights()->RemoveLast(); },
     "param 'norm.scale': a stored param, but the plan has no weights file and no external "
     "weight of this name"},
};

class ExternalWeightMutationTest : public ::testing::TestWithParam<Mutation> {};

class PlanValidatorMutationTest : public ::testing::TestWithParam<Mutation> {};

/// Applies `m` to `plan` and expects validatePlan to report its broken check.
void expectReported(pb::Plan plan, const Mutation &m) {
  m.mutate(plan);
  Status s = validatePlan(plan);
  ASSERT_FALSE(s.ok()) << m.name << ": the mutated plan passed";
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.message().rfind("invalid plan: ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find(m.message), std::string::npos)
      << m.name << "\n  expected: " << m.message << "\n  actual:   " << s.message();
}

TEST_P(PlanValidatorMutationTest, ReportsTheBrokenCheck) {
  expectReported(makeValidPlan(), GetParam());
}

std::string mutationName(const ::testing::TestParamInfo<Mutation> &info) {
  std::string name;
  for (const char *c = info.param.name; *c; ++c)
    name += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Mutations, PlanValidatorMutationTest, ::testing::ValuesIn(kMutations),
                         mutationName);

TEST_P(ExternalWeightMutationTest, ReportsTheBrokenCheck) {
  expectReported(makeExternalWeightsPlan(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Mutations, ExternalWeightMutationTest,
                         ::testing::ValuesIn(kExternalWeightMutations), mutationName);

/// makeValidPlan with layers.0.w (param 0, owned by block_0) read by the tail too: param 3 is
/// its copy in layer 1 (weights after norm.scale, its own gradient slot after lm_head's, the
/// owner's state), accumulated by B0; block_0's step waits for B0's gradients and uploads.
pb::Plan makeSharedParamPlan() {
  pb::Plan plan = makeValidPlan();
  plan.mutable_host_arena()->set_weights(512);
  pb::Param *copy = rp::testing::addParam(plan, "layers.0.w", tensorType(pb::F32, {4, 4}), true,
                                          1, 208, 0);
  copy->set_grad_offset(192);
  copy->set_primary(0);
  plan.mutable_layers(1)->add_params(3);
  pb::Stage *b0 = plan.mutable_stages(1);
  b0->set_weight_bytes(208);
  b0->set_grad_bytes(192);
  rp::testing::addAccumulate(b0, 3, 384);
  pb::OptimizerStep *owner = plan.mutable_optimizer_steps(1);
  owner->add_upload_stages(1);
  owner->add_shared_grads_stages(1);
  return plan;
}

TEST(PlanValidatorTest, SharedTrainableParamPasses) {
  Status s = validatePlan(makeSharedParamPlan());
  EXPECT_TRUE(s.ok()) << s.message();
}

const Mutation kSharedMutations[] = {
    {"copy without primary", [](pb::Plan &p) { p.mutable_params(3)->clear_primary(); },
     "param 'layers.0.w': declared twice (params 0 and 3): a copy of a trainable shared param "
     "names its owner's entry 0 as primary (it names none)"},
    {"copy with its own state",
     [](pb::Plan &p) { p.mutable_params(3)->set_state_offset(192); },
     "a copy shares its owner's fp32 state (state_offset 0), not 192"},
    {"copy sharing the owner's gradient slot",
     [](pb::Plan &p) { p.mutable_params(3)->set_grad_offset(0); },
     "a copy has its own gradient slot, not its owner's (grad_offset 0)"},
    {"primary on the first entry",
     [](pb::Plan &p) { p.mutable_params(0)->set_primary(3); },
     "param 'layers.0.w': names primary entry 3 but is the first entry of its name"},
    {"owner's step misses the shared gradients",
     [](pb::Plan &p) { p.mutable_optimizer_steps(1)->clear_shared_grads_stages(); },
     "optimizer step #1 (layer 'block_0'): the stages it waits for accumulate the copy param "
     "'layers.0.w' 0 times per micro-batch, expected once"},
    {"owner's step misses a stage uploading the copy",
     [](pb::Plan &p) { p.mutable_optimizer_steps(1)->mutable_upload_stages()->RemoveLast(); },
     "optimizer step #1 (layer 'block_0'): upload_stages leaves out stage 'B0' (fused_tail), "
     "which holds the layer (or a copy of its shared param) and uploads it"},
    {"shared gradients from a forward stage",
     [](pb::Plan &p) { p.mutable_optimizer_steps(1)->add_shared_grads_stages(0); },
     "optimizer step #1 (layer 'block_0'): shared_grads_stages names stage 'F0' (forward), which "
     "computes no gradients"},
    {"copy of a frozen param's trainability",
     [](pb::Plan &p) { p.mutable_params(3)->set_trainable(false); },
     "the entries of a shared param differ in type ([4, 4] f32, [4, 4] f32), init or "
     "trainability"},
};

class SharedParamMutationTest : public ::testing::TestWithParam<Mutation> {};

TEST_P(SharedParamMutationTest, ReportsTheBrokenCheck) {
  expectReported(makeSharedParamPlan(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(SharedMutations, SharedParamMutationTest,
                         ::testing::ValuesIn(kSharedMutations), mutationName);

} // namespace
} // namespace rp::runtime
