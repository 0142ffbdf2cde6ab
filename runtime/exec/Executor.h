//===- Executor.h - Runs a plan's jobs on a backend's device pool -*- C++ -*-===//
//
// The RoundPipe executor (arXiv 2604.27085 §4; docs/ARCHITECTURE.md), written once for every
// backend (runtime/exec/Backend.h). Iteration (step) i runs the plan's S stages as jobs
// j = i * S + s, job j on device j mod N (round-robin dispatch), in stage order. A job:
//
//   weights   the stage's weight range (host weights region) into the device's next weight
//             slot; prefetched by the device's previous job, one byte-balanced chunk behind
//             each micro-batch's activation upload (`prefetch_next`), or uploaded at the job's
//             start when no previous job prefetched it (the first N jobs of a segment)
//   per micro-batch m (activation set m's parity on the device)
//             uploads (after the producing stage's download of the same micro-batch), the
//             body's calls and gradient accumulations (fp32, set at m = 0, added after), then
//             the downloads
//   grads     the slot's fp32 accumulators into the host gradient region
//
// Events order every hand-off: activation set and weight slot reuse, producer download ->
// consumer upload, weights version -> upload, grads -> optimizer (with ranks: grads ->
// communication thread's reduction (gradsReduced) -> optimizer), optimizer (gradsConsumed) ->
// grads reuse, host activation records (two, by step parity) -> next writers. Nothing waits on
// timing.
//
// The optimizer runs on a host thread, step by step. A step's first AdamW waits until the step
// is known to have only finite gradients (below), that is for its last gradient download; then
// the layers' AdamW run one by one (sync: in the order the next iteration uploads them, so that
// it can start; async and with ranks: as plan.optimizer_steps orders them). fp32 AdamW
// (runtime/optim/AdamW.h) with gradScale = clip / M: with the trainer's backward seeds
// M n_m / N (runtime/train/TokenWeights.h) the gradient is that of the step's token-weighted
// loss (the mean over its N trained labels).
//   sync   step i: wait layer l's grads and step i's uploads of l, then AdamW, writing the
//          compute-dtype weights in the same pass (runtime/optim adamwStepWritingWeights);
//          iteration i + 1 uploads layer l after that (exact synchronous semantics).
//   async  staleness 1 (arXiv 2604.27085 §4.3): a second host thread, the weights
//          writer, copies layer l's master weights (W_i) into its compute weights as soon as
//          every upload of l in iteration i has completed (layers in the order of their last
//          upload); the optimizer thread runs l's AdamW (W_{i+1}) once l's grads have arrived
//          and that copy is done. Iteration i + 1 uploads l after the copy, so iteration i
//          computes with W_{max(i-1, 0)}: the library's "iteration k computes with W(k-2)",
//          counting from 1. The two threads let the next iteration's uploads start while this
//          iteration's AdamW still runs, and no AdamW wait for another layer's uploads. (So
//          the copy is not fused into AdamW here: W_i is copied when step i's uploads are
//          done, W_{i+1} is made when step i's gradients are, a backward pass later.)
// Non-finite gradients, in every dtype: each gradient download flags an inf or NaN among the
// params' accumulators (Backend::downloadGradients: checked where the gradients are, no host
// pass), and before its first AdamW a step waits for every download of the step and ORs the
// flags (and every rank's: one allGather); a step with a non-finite gradient is skipped: no
// AdamW on any layer, but gradsConsumed and (sync) the compute weights are still signalled
// and written, so the event protocol advances as after an update (outcome() reports it). The
// host sums (a shared param's readers, the ranks) check their results in their own passes:
// with a global norm an overflow there skips the step too; without one, AdamW has already
// updated earlier layers, so it fails the step instead.
// With gradient clipping (grad_clip > 0) a step waits for every layer's grads first: the
// global norm (sum over trainable params sorted by name of their squared scaled grads, in
// double) needs all of them. Each param's share is made by the pass that writes its final
// gradient: the download (GradientCheck: the CPU backend in its copy, the CUDA backend on the
// device), the sum of a shared param's readers, the sum over the ranks; a host pass only for
// what none of them squared (a backend without squares). Dynamic loss scaling (options.lossScale,
// runtime/optim/LossScaler.h): step i's backward seeds carry the scale lossScale(i) returns,
// the gradScale becomes clip / (M S), and a skipped step backs the scale off. The scale of step i is the
// scaler's state after step i - 1 (sync) or i - 2 (async, whose step i is dispatched while
// step i - 1's optimizer may still run), so it never depends on timing.
// Each piece of host work (the norm, a layer's AdamW, a layer's compute-weight write) is
// reported with Backend::hostWork(), which the simulator charges to the virtual clock of the
// host thread that did it.
// Data parallelism (options.ranks, RankReducer.h; docs/MULTI_NODE.md): R ranks run this plan,
// each on its own M micro-batches of a step of R * M. With R > 1 a third host thread, the
// communication thread, makes every call of the step on the RankReducer, in the same order on
// every rank: it first gathers the step's M losses of every rank (losses() then returns the
// R * M, rank-major), then, layer by layer in plan.optimizer_steps order, waits for the
// layer's gradient downloads (the same waits as the optimizer's), adds the shared params'
// copies into their owners, sums the layer's trainable gradients over the ranks in rank order
// into the host gradient region and signals the layer's gradsReduced. The optimizer thread
// waits for gradsReduced where it waited for the downloads, so layer l + 1's reduction
// overlaps layer l's AdamW; everything after (norm, clipping, loss-scale overflow check,
// AdamW) sees the sums, so every rank updates identical weights. The host gradients of a layer
// are read and written by the communication thread, then read by the optimizer thread, before
// its gradsConsumed: the next step's download of them waits for that, as without ranks.
// (options.commThread = false, or R = 1: the optimizer thread does the same calls itself, each
// layer's reduction right before its AdamW; the sums are the same bits.) gradScale becomes clip / (R M S): with the trainer's global seeds
// (R M n_m / N over the R * M micro-batches) the update is that of the step's token-weighted
// loss over all R * M micro-batches.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_EXEC_EXECUTOR_H
#define RP_RUNTIME_EXEC_EXECUTOR_H

#include "runtime/exec/Backend.h"
#include "runtime/exec/HostArena.h"
#include "runtime/exec/RankReducer.h"
#include "runtime/optim/AdamW.h"
#include "runtime/optim/LossScaler.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

namespace rp::runtime {

class TraceRecorder;

struct ExecutorOptions {
  /// The learning rate of each step (runtime/optim/AdamW.h learningRate; the plan's AdamW holds
  /// the other settings).
  LrSchedule schedule;
  int64_t firstStep = 0; ///< The step the run starts at (a resumed run: the checkpoint's step).
  TraceRecorder *trace = nullptr;
  LossScaleConfig lossScale;      ///< Dynamic loss scaling (off by default).
  LossScaleState lossScaleStart;  ///< Its state before firstStep (a checkpoint's, or init).
  /// false (the simulator): the optimizer reports its host work to the backend and signals
  /// its events in the same order, but computes nothing on the host arena (no AdamW, no
  /// gradient sums or norm, no compute-weights writes), which may then be HostArena::reserve's.
  bool hostArithmetic = true;
  /// Data-parallel ranks (file comment; RankReducer.h), or null: a single process. Used from
  /// one host thread only (the communication thread, else the optimizer thread); needs
  /// hostArithmetic.
  RankReducer *ranks = nullptr;
  /// With ranks (R > 1): the reductions and the loss gather on a communication thread of
  /// their own (file comment). false: on the optimizer thread, each layer's reduction right
  /// before its AdamW (slower; the same results, which the tests check).
  bool commThread = true;
};

/// What the optimizer did with a step (loss scaling).
struct StepOutcome {
  bool skipped = false; ///< A non-finite gradient: no weight changed.
  double lossScale = 1; ///< The scale the step's seeds carried.
};

class Executor {
public:
  /// `host` holds the run's weights and state; `backend` is not yet prepared. Both outlive
  /// the executor.
  Executor(HostArena &host, Backend &backend, ExecutorOptions options);
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  /// Prepares the backend and starts the optimizer thread.
  Status start();

  /// Host-waits until the input records of `step` may be written (the uploads of step - 2,
  /// which read the same records, have completed).
  Status waitInputsWritable(int64_t step);
  /// The host record of micro-batch `microBatch` for `step` (its parity's copy).
  uint8_t *record(int64_t step, int64_t microBatch) {
    return host_.record(static_cast<int>(step % 2), microBatch);
  }
  /// Enqueues iteration `step`: steps are dispatched in increasing order, consecutively from
  /// options.firstStep; weights of jobs of steps < `segmentEnd` may be prefetched (the caller
  /// drains at segmentEnd to evaluate or checkpoint).
  Status dispatch(int64_t step, int64_t segmentEnd);
  /// Host-waits for the M losses of a dispatched `step`, in micro-batch order. With
  /// options.ranks: the R * M losses of every rank, rank-major (global micro-batch order),
  /// once the optimizer thread has gathered them; each step's once (older ones are dropped).
  StatusOr<std::vector<float>> losses(int64_t step);
  /// Waits for every dispatched job and the optimizer steps of every dispatched step.
  Status drain();
  /// Runs the forward stages and the fused tail (no backward stages, no optimizer) on the M
  /// micro-batches whose inputs the caller wrote into record(0, m) after drain(); returns the
  /// M losses. The weights are the compute weights (async: one step behind the master).
  /// It overwrites record 0, so read losses(step) of an even `step` before (they live there).
  StatusOr<std::vector<float>> evaluate();

  /// The loss scale of `step`'s backward seeds (1 without loss scaling). Call before
  /// dispatching `step`; it waits for the optimizer step whose outcome decides it (file
  /// comment). Errors: the executor stopped (a failed step).
  StatusOr<double> lossScale(int64_t step);
  /// Waits for `step`'s optimizer step and returns what it did.
  StatusOr<StepOutcome> outcome(int64_t step);
  /// The loss scaler's state after the last optimizer step (after drain(): for checkpoints).
  LossScaleState lossScaleState();

  /// Index of the stage that downloads the loss (the fused tail).
  int lossStage() const { return lossStage_; }

private:
  struct JobEvents {
    Event weightsReady;
    std::vector<Event> downloaded; // per micro-batch
    Event uploadsDone;
    Event gradsDownloaded;
    GradientCheck gradCheck; // the download's flag and squares (Backend::downloadGradients)
  };
  struct StepEvents {
    std::vector<JobEvents> jobs;      // per stage
    std::vector<Event> weightsWritten; // per layer (host)
    std::vector<Event> gradsConsumed;  // per layer (host)
    std::vector<Event> gradsReduced;   // per layer (host): the communication thread's sums
    /// checkStepFinite's verdict, written before finiteChecked (host) is signalled.
    Event finiteChecked;
    bool nonFinite = false;
    /// Per layer: a shared or rank sum of its gradients overflowed (written before the
    /// layer's gradsReduced, or by the optimizer thread itself).
    std::vector<uint8_t> sumOverflow;
    /// Per param entry: the global norm's share of an owner's gradient (sumOfSquares at the
    /// step's gradScale) made by the host sum that wrote it last (a shared sum, a rank sum),
    /// and whether it was made (written with sumOverflow).
    std::vector<double> squares;
    std::vector<uint8_t> squaresKnown;
  };
  struct DeviceState {
    int64_t jobs = 0;
    int64_t sets = 0;
    Event slotFree[2];
    Event setFree[2];
  };
  enum class Mode { Train, Eval };
  /// What the phases of one job's dispatch share.
  struct Job {
    int64_t index; ///< The job number j (evaluation: its own count).
    int64_t step;  ///< Its iteration (evaluation: -1).
    int stage;     ///< Index of its stage.
    Mode mode;
    StepEvents &stepEvents;      ///< The events of its step.
    const rp::plan::Stage &spec; ///< Its stage in the plan.
    JobEvents &events;           ///< stepEvents.jobs[stage].
    int device;                  ///< j mod N.
    int slot;                    ///< The device's weight slot (its job count's parity).
    int64_t slotOffset;          ///< Device-arena offset of that slot.
    int parity;                  ///< The host records' copy: step parity (evaluation: 0).
    std::string tag;             ///< Label prefix, "<stage> s<step>".
  };
  /// One micro-batch of a job.
  struct MicroBatch {
    int64_t index;     ///< m.
    int set;           ///< The device's activation set (its micro-batch count's parity).
    int64_t setOffset; ///< Device-arena offset of that set.
    uint8_t *record;   ///< The host record of (parity, m).
    std::string tag;   ///< Label prefix, "<stage> s<step> mb<m>".
  };

  StepEvents makeStepEvents();
  StepEvents &events(int64_t step);
  /// Enqueues job `job` (stage `stage` of `step`, events `ev`) on device job mod N, phase by
  /// phase in this order: its weights, each micro-batch's uploads, compute and downloads,
  /// the uploadsDone record (ActivationUpload), the prefetch of the device's next job's
  /// weights when that job's step is < `segmentEnd` (training only), and the gradient
  /// download. The order of the enqueued commands is the executor's contract with the
  /// determinism tests: do not reorder.
  void dispatchJob(int64_t job, int64_t step, int stage, Mode mode, StepEvents &ev,
                   int64_t segmentEnd);
  /// Weights phase. Unless a previous job prefetched them (training), WeightUpload waits
  /// for the previous step's weightsWritten of the stage's layers and of the owners of the
  /// copies they hold (training) and the slot's
  /// slotFree, then uploads the stage's weights and records events.weightsReady. Then
  /// Compute waits for weightsReady.
  void enqueueJobWeights(const Job &j);
  /// Micro-batch `m`: takes the device's next activation set, then enqueueUploads,
  /// enqueueCompute and enqueueDownloads. Appends the upload event to `behind` (the prefetch
  /// chunks wait on them); `waitedRecords` carries enqueueDownloads' one-time wait. Returns
  /// the micro-batch's compute-done event.
  Event enqueueMicroBatch(const Job &j, int64_t m, std::vector<Event> &behind, bool &waitedRecords);
  /// ActivationUpload waits for the set's setFree (its previous micro-batch's downloads),
  /// then per upload step for the producing stage's downloaded[m] (when after_stage >= 0) and
  /// copies the host record's buffer into the set; records and returns a new upload event.
  Event enqueueUploads(const Job &j, const MicroBatch &mb);
  /// Compute waits for `uploaded`, then runs the stage body's calls and gradient
  /// accumulations (first: m = 0) in body order; records and returns a new compute event.
  Event enqueueCompute(const Job &j, const MicroBatch &mb, const Event &uploaded);
  /// Download waits for `lastCompute`; before the job's first download (training, once per
  /// job through `waitedRecords`) for every uploadsDone of step - 2 (the last reader of this
  /// parity's records); copies the download steps' buffers into the host record, records
  /// events.downloaded[m] and makes it the set's setFree.
  void enqueueDownloads(const Job &j, const MicroBatch &mb, const Event &lastCompute,
                        bool &waitedRecords);
  /// Prefetch phase (after the job's uploads in program order): WeightUpload waits for the
  /// weightsWritten of job `next`'s stage's layers in the step before next's, and for the
  /// device's other slot's slotFree, then uploads next's weights into that slot in chunks,
  /// chunk m waiting on `behind`[m], and records next's weightsReady; marks `next`
  /// prefetched.
  ///
  /// The weightsWritten it waits for are signalled by the host threads of step
  /// `next`'s step - 1, so the prefetch is enqueued only once that step is dispatched: at once
  /// when it is j's own step (or earlier), else deferred to the start of its dispatch
  /// (`deferred_`; with N > S the device's next job is two or more steps ahead). A run
  /// interrupted before that step never enqueues a wait that nothing would signal, and no job
  /// of another device comes between, so the device's queues see the same program order.
  void prefetchNextWeights(int device, int64_t next, const std::vector<Event> &behind);
  /// Enqueues the deferred prefetches whose weights version step `step` writes.
  void enqueueDeferredPrefetches(int64_t step);
  /// Gradient phase. Training stages with gradients: Download waits for the previous step's
  /// gradsConsumed of the stage's layers and of the owners of the copies they hold (the
  /// optimizer has read the host gradients), copies
  /// the slot's fp32 accumulators to the host gradient region and records
  /// events.gradsDownloaded, the slot's slotFree. Otherwise the slot is free after
  /// `lastCompute`.
  void enqueueGradients(const Job &j, const Event &lastCompute);
  void uploadWeights(int device, int slot, int64_t step, int stage, const Event &ready,
                     const std::vector<Event> *behind);
  void waitWeightsVersion(int device, int64_t step, int stage);
  int64_t slotOffset(int slot) const;
  int64_t setOffset(int set) const;
  /// A host thread: runs `work` for each step pushed on `queue` until stopping (the first
  /// error fails the backend and stops every thread).
  void hostLoop(std::deque<int64_t> &queue, Status (Executor::*work)(int64_t));
  /// The optimizer thread's step: AdamW per layer as its gradients arrive (sync: then the
  /// compute weights).
  Status optimizerStep(int64_t step);
  /// Async, the weights writer thread's step: every layer's compute weights, in writeOrder_.
  Status writeStepWeights(int64_t step);
  /// Waits until every upload of `os`'s layer in `step` has completed, writes the layer's
  /// master weights into its compute weights and signals weightsWritten. `fused`: applyAdamW
  /// has written the owners' compute weights already (sync); only the copies are written.
  Status writeLayerWeights(int64_t step, const rp::plan::OptimizerStep &os, bool fused = false);
  void traceSpan(int track, double start, const std::string &name);
  /// AdamW of `layer`'s trainable owner params; `writeWeights` (sync): their compute weights
  /// are written in the same pass (adamwStepWritingWeights).
  Status applyAdamW(int64_t step, int layer, float gradScale, bool writeWeights);
  /// Waits until every upload of `os`'s layer in `ev`'s step has completed (its compute
  /// weights may then be overwritten).
  Status waitLayerUploads(StepEvents &ev, const rp::plan::OptimizerStep &os);
  /// Waits for the gradient downloads `os` reads (its grads stage, its shared grads stages).
  Status waitStepGradients(StepEvents &ev, const rp::plan::OptimizerStep &os);
  /// Waits for `os`'s gradients, sums the shared params' copies (sumSharedGradients) and,
  /// with options.ranks, sums the layer's gradients over the ranks (reduceLayerGradients).
  /// With the communication thread: waits for its gradsReduced of the layer instead.
  Status collectLayerGradients(int64_t step, StepEvents &ev, const rp::plan::OptimizerStep &os);
  /// The communication thread's step: the loss gather, then per layer in
  /// plan.optimizer_steps order its gradients' waits, shared sums and rank sums, signalling
  /// gradsReduced.
  Status commStep(int64_t step);
  /// options.ranks: packs the trainable owner params of `os`'s layer, sums them over the ranks
  /// in rank order and unpacks the sums into the host gradient region.
  /// A sum that is not finite marks ev.sumOverflow of the layer.
  Status reduceLayerGradients(int64_t step, StepEvents &ev, const rp::plan::OptimizerStep &os);
  /// options.ranks: gathers `step`'s M losses of every rank into globalLosses_.
  Status gatherStepLosses(int64_t step, StepEvents &ev);
  /// Adds each copy's gradient slot into its owner's, copies in layer order (the fixed order
  /// rp-ref --train follows), for the params owned by `os`'s layer; a sum that is not finite
  /// marks ev.sumOverflow of the layer. `squaresScale` > 0: the last addition also makes the
  /// owner's ev.squares at that scale.
  void sumSharedGradients(StepEvents &ev, const rp::plan::OptimizerStep &os, float squaresScale);
  /// Whether the step has a non-finite gradient: waits for every gradient download of the
  /// step, ORs their flags and, with ranks, every rank's (one allGather), so that every rank
  /// decides alike before any AdamW; sets ev.nonFinite and signals ev.finiteChecked. Made by
  /// the thread that talks to the ranks (the communication thread, else the optimizer's).
  Status checkStepFinite(StepEvents &ev);
  /// Whether `os` reads a gradient download of stage `stage`.
  static bool readsStage(const rp::plan::OptimizerStep &os, int stage);
  /// Whether a step needs the global gradient norm (clipping or loss scaling): then
  /// stepGradScale gathers and sums every layer's gradients before any AdamW.
  bool needsGlobalNorm() const;
  /// R * M times the loss scale of `step`'s seeds: gradScale before clipping is its inverse.
  /// nullopt with loss scaling when lossScale(step) has not been called.
  std::optional<double> gradDivisor(int64_t step);
  /// The scale of the norm's squares the passes that write `step`'s final gradients make
  /// (float(1 / gradDivisor)), or 0 when the step needs no norm or the executor does no host
  /// arithmetic.
  float squaresScale(int64_t step);
  /// The norm's share of trainable owner `param`'s gradient (sumOfSquares at `scale`): made by
  /// a host sum, or by the gradient download at the same scale, else a host pass now.
  double paramSquares(StepEvents &ev, int param, float scale);
  /// The gradScale of `step` (clip / (M S)); nullopt when loss scaling finds a non-finite
  /// gradient (the step is skipped). Waits for every layer's grads when needsGlobalNorm().
  StatusOr<std::optional<float>> stepGradScale(int64_t step, StepEvents &ev);
  /// The error of a step whose shared or rank sum of `layer` overflowed after earlier layers
  /// were updated (without a global norm, AdamW runs layer by layer).
  Status overflowError(int64_t step, int layer) const;
  /// Records `step`'s outcome and the scaler's next state; wakes lossScale() waiters.
  void recordOutcome(int64_t step, bool skipped);
  StatusOr<std::vector<float>> readLosses(StepEvents &ev, int parity);

  HostArena &host_;
  Backend &backend_;
  const rp::plan::Plan &plan_;
  ExecutorOptions options_;
  int numDevices_;
  int numStages_;
  int64_t microBatches_;
  int64_t globalMicroBatches_; ///< R * M (options.ranks), else M: the gradScale divisor.
  int lossStage_ = -1;
  int lossBuffer_ = -1;
  bool async_;
  std::vector<bool> layerHasStep_;
  /// Per layer: the layers whose optimizer step writes its weights and reads its gradient
  /// slots (itself when it has a step; the owners of the shared params it holds copies of).
  std::vector<std::vector<int>> stepLayersOf_;
  /// Per param entry: the copies of a shared trainable param whose owner entry it is.
  std::vector<std::vector<int>> copiesOf_;
  /// Async: optimizer_steps indices by the last stage uploading the layer (the order in which
  /// a step's uploads of the layers complete).
  std::vector<int> writeOrder_;
  /// optimizer_steps indices in the order the optimizer runs them. Sync without ranks: every
  /// gradient is on the host once the step's finiteness is known, and the next iteration waits
  /// for the updates, so in the order it first uploads the layers (the first forward stage's
  /// layers first): it starts before the whole AdamW is done. Otherwise the plan's (with ranks
  /// the order the reductions finish; async: the weights writer's order interlocks with it,
  /// and the next iteration does not wait for this step's AdamW).
  std::vector<int> adamwOrder_;
  std::vector<int> trainableByName_; // trainable owner entries by name (the clip norm order)
  /// Per param entry: where its download's squares are (stage, index in its gradRanges_), or
  /// stage -1 (not a trainable entry).
  struct RangeAt {
    int stage = -1;
    int index = 0;
  };
  std::vector<RangeAt> rangeOf_;
  /// Per stage: its params' accumulators in its gradient region (downloadGradients).
  std::vector<std::vector<GradientRange>> gradRanges_;
  int lastGradStage_ = -1; ///< The last stage (dispatch order) that downloads gradients.
  std::vector<int64_t> bufferBytes_;  // bytes of each host buffer

  std::vector<DeviceState> devices_;
  std::set<int64_t> prefetched_; // jobs whose weights a previous job prefetched
  /// A prefetch waiting for the dispatch of step `after` (prefetchNextWeights).
  struct DeferredPrefetch {
    int64_t after;             ///< The step whose dispatch enqueues it: next's step - 1.
    int device;                ///< The device of the job that prefetches.
    int64_t next;              ///< The job whose weights it uploads.
    std::vector<Event> behind; ///< That job's micro-batches' activation-upload events.
  };
  std::vector<DeferredPrefetch> deferred_;
  int64_t nextStep_;             // the next step to dispatch
  int64_t evalJobs_ = 0;

  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<int64_t, StepEvents> steps_;
  std::deque<int64_t> optimizerQueue_;
  int64_t optimizerDone_; // steps < this have been applied
  bool stopping_ = false;
  std::map<int64_t, LossScaleState> scaleAfter_; // the scaler's state after each step
  std::map<int64_t, StepOutcome> outcomes_;      // per step (its seeds' scale, skipped)
  std::map<int64_t, std::vector<float>> globalLosses_; // options.ranks: R * M per step
  std::vector<float> reduceScratch_; // options.ranks: one layer's packed gradients
  std::thread optimizer_;
  int optimizerTrack_ = -1;
  std::deque<int64_t> writerQueue_; // async: steps whose compute weights are to be written
  std::thread weightsWriter_;
  int writerTrack_ = -1;
  bool useComm_ = false;          ///< options.ranks with R > 1 and options.commThread
  std::deque<int64_t> commQueue_; // the steps whose reductions are to be made
  int64_t commDone_;              // steps < this have been reduced (useComm_)
  std::thread comm_;
  int commTrack_ = -1;
};

} // namespace rp::runtime

#endif // RP_RUNTIME_EXEC_EXECUTOR_H
