//===- RunCli.h - rp-run's command line: flags, modes, exit codes -*- C++ -*-===//
//
//   rp-run MODEL.rpplan --data FILE --steps N [--lr 3e-4] [--warmup 20]
//          [--backend cpu|cuda|sim] [--gpus N] [--seed S] [--save DIR] [--save-every K]
//          [--resume DIR] [--log FILE.jsonl] [--trace FILE.json] [--eval-every K]
//          [--data-format auto|tokens|text] [--weights FILE|DIR|INDEX.json]
//          [--allow-extra-weights] [--no-progress]
//          [--export-hf DIR [--export-dtype f32|bf16|f16] [--export-shard-size SIZE]
//           [--hf-config FILE] [--export-merged] [--lora-alpha A] [--base-model NAME]
//           [--export-force]]
//   rp-run MODEL.rpplan --export-hf DIR [--weights PATH | --resume DIR] [export options]
//   rp-run MODEL.rpplan --check [--weights FILE|DIR|INDEX.json] [--allow-extra-weights]
//   rp-run MODEL.rpplan --backend sim [--gpus N] [--steps K] [--profile FILE.json]
//          [--target T] [--link-gbps X] [--host-uplink-gbps Y] [--optimizer-ms Z | --adamw-gbps W]
//          [--trace FILE.json] [--gantt FILE.svg] [--compare]
//          [--nodes R --node-link-gbps G [--node-link-latency-us L]
//           [--node-reduction chain|allgather|ring] [--node-reduce-on-optimizer]]
//   rp-run --backend sim --profile FILE.json --gpus N --micro-batches M [--update sync|async]
//          [same options]
//
// Four modes: training (runtime/train/Trainer.h; with --export-hf, the weights in the Hugging
// Face layout at the end), the export alone (--export-hf without --data and --steps:
// runtime/train/HfExport.h, exportWeights), `--check` (load and validate the plan and its
// weights, print a summary; with --backend, decode it for that backend: BackendFactory.h,
// checkPlanForBackend), and `--backend sim` (runtime/sim/Simulate.h).
//
// Under an MPI launcher (mpirun; detected from its environment, runtime/dist/World.h) training
// is one data-parallel rank of R (docs/MULTI_NODE.md): the other modes refuse a launch of
// several processes, and an rp-run built without MPI refuses to train under one.
//
// Exit codes: 0 success, 2 bad input (plan, weights, data, checkpoint, profile, flags; nothing
// is written), 1 a failure during training or simulation, 130 a run stopped by SIGINT or
// SIGTERM: the steps under way finish and, with --save, a checkpoint of them is written (a
// second signal ends the process at once; the previous checkpoint stays intact).
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_TRAIN_RUNCLI_H
#define RP_RUNTIME_TRAIN_RUNCLI_H

namespace rp::runtime {

/// rp-run's main: parses `argv` (CLI11; --help and --version print and return 0), runs the
/// mode, prints its result on stdout, progress on stderr and errors as "rp-run: error: ..."
/// on stderr, and returns the exit code (see the file comment). Training installs a
/// SIGINT / SIGTERM handler for the process.
int runRpRun(int argc, char **argv);

} // namespace rp::runtime

#endif // RP_RUNTIME_TRAIN_RUNCLI_H
