//===- Canonicalize.cpp - schedule dialect canonicalization ---------------===//
//
// Dead transfers: an upload nobody reads, and a download of a boundary buffer nobody uploads
// (with the buffer itself). Both keep the plan verifiable: the prefetch chunk stays behind an
// upload, and every remaining non-input buffer keeps its one writer.
//
//===----------------------------------------------------------------------===//

#include "dialects/Schedule/IR/ScheduleOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::rp::schedule;

namespace {

/// Erases a `schedule.upload` whose result is unused, unless it is the only upload ahead of
/// the body's `schedule.prefetch_next` (the weight chunk is issued behind an upload).
struct EraseUnusedUpload : OpRewritePattern<UploadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(UploadOp upload, PatternRewriter &rewriter) const override {
    if (!upload.getResult().use_empty())
      return rewriter.notifyMatchFailure(upload, "the uploaded value is used");
    // Walk the body up to the prefetch: is this upload ahead of it, and is another one?
    bool isAhead = false, otherAhead = false, hasPrefetch = false;
    for (Operation &op : *upload->getBlock()) {
      if (isa<PrefetchNextOp>(op)) {
        hasPrefetch = true;
        break;
      }
      if (&op == upload.getOperation())
        isAhead = true;
      else if (isa<UploadOp>(op))
        otherAhead = true;
    }
    if (hasPrefetch && isAhead && !otherAhead)
      return rewriter.notifyMatchFailure(upload, "the only upload ahead of prefetch_next");
    rewriter.eraseOp(upload);
    return success();
  }
};

/// Erases a `schedule.download` to an `activation` or `cotangent` buffer that no upload of
/// the plan reads, and the buffer with it once nothing else downloads it.
struct EraseDeadDownload : OpRewritePattern<DownloadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DownloadOp download, PatternRewriter &rewriter) const override {
    auto plan = download->getParentOfType<PlanOp>();
    if (!plan)
      return failure();
    auto buffer = dyn_cast_or_null<HostBufferOp>(
        SymbolTable::lookupSymbolIn(plan, download.getBufferAttr().getAttr()));
    if (!buffer)
      return rewriter.notifyMatchFailure(download, "not a host buffer of the plan");
    if (buffer.getKind() != BufferKind::activation && buffer.getKind() != BufferKind::cotangent)
      return rewriter.notifyMatchFailure(download, "inputs and losses are read by the host");
    StringRef name = buffer.getSymName();
    bool read = false, otherWriter = false;
    plan.walk([&](Operation *op) {
      if (auto upload = dyn_cast<UploadOp>(op))
        read = read || upload.getBuffer() == name;
      else if (auto other = dyn_cast<DownloadOp>(op))
        otherWriter = otherWriter || (other != download && other.getBuffer() == name);
    });
    if (read)
      return rewriter.notifyMatchFailure(download, "the buffer is uploaded");
    rewriter.eraseOp(download);
    if (!otherWriter)
      rewriter.eraseOp(buffer);
    return success();
  }
};

} // namespace

void UploadOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<EraseUnusedUpload>(context);
}

void DownloadOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<EraseDeadDownload>(context);
}
