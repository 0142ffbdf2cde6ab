//===- ForwardingBackend.h - A CPU backend tests can intercept --*- C++ -*-===//
//
// ForwardingCpuBackend implements runtime/exec/Backend.h by forwarding every call to a
// CpuBackend it owns; a test derives from it and overrides the calls it watches or changes
// (the executor tests: the host work of the optimizer, the gradient downloads' squares).
//
//===----------------------------------------------------------------------===//
#ifndef RP_TEST_UNIT_FORWARDINGBACKEND_H
#define RP_TEST_UNIT_FORWARDINGBACKEND_H

#include "runtime/backends/cpu/CpuBackend.h"

#include <string>
#include <utility>
#include <vector>

namespace rp::testing {

class ForwardingCpuBackend : public runtime::Backend {
public:
  explicit ForwardingCpuBackend(int devices) : cpu_(devices) {}

  std::string name() const override { return cpu_.name(); }
  int numDevices() const override { return cpu_.numDevices(); }
  Status prepare(const rp::plan::Plan &plan) override { return cpu_.prepare(plan); }
  Status registerHostMemory(void *base, int64_t bytes) override {
    return cpu_.registerHostMemory(base, bytes);
  }
  void copyToDevice(int d, runtime::Queue q, const void *src, int64_t dst, int64_t bytes,
                    std::string label) override {
    cpu_.copyToDevice(d, q, src, dst, bytes, std::move(label));
  }
  void copyToHost(int d, runtime::Queue q, int64_t src, void *dst, int64_t bytes,
                  std::string label) override {
    cpu_.copyToHost(d, q, src, dst, bytes, std::move(label));
  }
  void downloadGradients(int d, int64_t src, void *dst, int64_t bytes,
                         std::vector<runtime::GradientRange> ranges,
                         runtime::GradientCheck *check, std::string label) override {
    cpu_.downloadGradients(d, src, dst, bytes, std::move(ranges), check, std::move(label));
  }
  void call(int d, runtime::CallFrame frame, std::string label) override {
    cpu_.call(d, std::move(frame), std::move(label));
  }
  void accumulate(int d, int64_t dst, int64_t src, int64_t elements, DType dtype, bool first,
                  std::string label) override {
    cpu_.accumulate(d, dst, src, elements, dtype, first, std::move(label));
  }
  runtime::Event newEvent() override { return cpu_.newEvent(); }
  void record(int d, runtime::Queue q, const runtime::Event &e) override { cpu_.record(d, q, e); }
  void wait(int d, runtime::Queue q, const runtime::Event &e) override { cpu_.wait(d, q, e); }
  void signal(const runtime::Event &e) override { cpu_.signal(e); }
  Status hostWait(const runtime::Event &e) override { return cpu_.hostWait(e); }
  void fail(Status status) override { cpu_.fail(std::move(status)); }
  Status finish() override { return cpu_.finish(); }
  int hostOptimizerThreads() const override { return cpu_.hostOptimizerThreads(); }
  void setTrace(runtime::TraceRecorder *trace) override { cpu_.setTrace(trace); }

private:
  runtime::CpuBackend cpu_;
};

} // namespace rp::testing

#endif // RP_TEST_UNIT_FORWARDINGBACKEND_H
