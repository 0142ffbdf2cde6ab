//===- PlanMemoryCheckTest.cpp - Plans larger than the machine are refused ===//

#include "base/SystemMemory.h"
#include "runtime/plan/PlanMemoryCheck.h"
#include "runtime/plan/PlanValidator.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace rp::runtime {
namespace {

rp::plan::Plan planWithArenas() {
  rp::plan::Plan plan;
  plan.mutable_host_arena()->set_weights(1000);
  plan.mutable_host_arena()->set_state(2000);
  plan.mutable_host_arena()->set_grads(2500); // a shared param's copies have gradient slots
  plan.mutable_host_arena()->set_activations(300);
  plan.mutable_device_arena()->set_constants(10);
  plan.mutable_device_arena()->set_slot(100);
  plan.mutable_device_arena()->set_activations(20);
  plan.mutable_device_arena()->set_workspace(5);
  return plan;
}

TEST(PlanMemoryCheck, Sizes) {
  rp::plan::Plan plan = planWithArenas();
  EXPECT_EQ(hostArenaBytes(plan), 1000u + 3 * 2000u + 2500u + 2 * 300u); // 10100
  EXPECT_EQ(deviceArenaBytes(plan), 10u + 2 * 100u + 2 * 20u + 5u); // 255
}

TEST(PlanMemoryCheck, FitsExactlyAndOneByteLess) {
  rp::plan::Plan plan = planWithArenas();
  EXPECT_TRUE(checkPlanFitsInMemory(plan, 2, 10100 + 2 * 255).ok());
  Status s = checkPlanFitsInMemory(plan, 2, 10100 + 2 * 255 - 1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::ResourceExhausted);
  EXPECT_EQ(s.message(), "the plan needs 10.4 KiB of host memory (host arena 9.9 KiB: weights "
                         "1000 B, 3 x fp32 state 2.0 KiB, fp32 grads 2.4 KiB, 2 x activations "
                         "300 B; 2 CPU device arenas of 255 B); this machine has 10.4 KiB");
  // A GPU backend keeps no device arena in host memory.
  EXPECT_TRUE(checkPlanFitsInMemory(plan, 0, 10100).ok());
  EXPECT_FALSE(checkPlanFitsInMemory(plan, 0, 10099).ok());
  // An unknown machine size checks nothing.
  EXPECT_TRUE(checkPlanFitsInMemory(plan, 8, 0).ok());
}

TEST(PlanMemoryCheck, LargestValidPlanDoesNotOverflow) {
  rp::plan::Plan plan;
  const int64_t max = kMaxPlanBytes; // each arena field of a validated plan is at most this
  plan.mutable_host_arena()->set_weights(max);
  plan.mutable_host_arena()->set_state(max);
  plan.mutable_host_arena()->set_grads(max);
  plan.mutable_host_arena()->set_activations(max);
  plan.mutable_device_arena()->set_slot(max);
  EXPECT_EQ(hostArenaBytes(plan), 7 * static_cast<uint64_t>(max));
  EXPECT_FALSE(checkPlanFitsInMemory(plan, 64, uint64_t(1) << 40).ok());
}

TEST(SystemMemory, EnvironmentOverride) {
  ::setenv("RP_MEMORY_LIMIT_BYTES", "12345", 1);
  EXPECT_EQ(physicalMemoryBytes(), 12345u);
  ::setenv("RP_MEMORY_LIMIT_BYTES", "12x", 1); // not a number: the machine's size
  const uint64_t machine = physicalMemoryBytes();
  ::unsetenv("RP_MEMORY_LIMIT_BYTES");
  EXPECT_EQ(machine, physicalMemoryBytes());
  EXPECT_GT(machine, uint64_t(1) << 20);
}

} // namespace
} // namespace rp::runtime
