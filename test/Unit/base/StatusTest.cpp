//===- StatusTest.cpp - Status, StatusOr and the propagation macros -------===//

#include "base/Status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace rp::runtime {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::Ok);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.toString(), "OK");
  EXPECT_EQ(s, okStatus());
}

TEST(StatusTest, FactoriesSetCodeAndMessage) {
  struct Case {
    Status status;
    StatusCode code;
    const char *name;
  };
  const Case cases[] = {
      {invalidArgument("m"), StatusCode::InvalidArgument, "INVALID_ARGUMENT"},
      {notFound("m"), StatusCode::NotFound, "NOT_FOUND"},
      {outOfRange("m"), StatusCode::OutOfRange, "OUT_OF_RANGE"},
      {dataLoss("m"), StatusCode::DataLoss, "DATA_LOSS"},
      {resourceExhausted("m"), StatusCode::ResourceExhausted, "RESOURCE_EXHAUSTED"},
      {unimplemented("m"), StatusCode::Unimplemented, "UNIMPLEMENTED"},
      {internal("m"), StatusCode::Internal, "INTERNAL"},
      {unavailable("m"), StatusCode::Unavailable, "UNAVAILABLE"},
  };
  for (const Case &c : cases) {
    EXPECT_FALSE(c.status.ok()) << c.name;
    EXPECT_EQ(c.status.code(), c.code) << c.name;
    EXPECT_EQ(c.status.message(), "m") << c.name;
    EXPECT_STREQ(statusCodeName(c.code), c.name);
    EXPECT_EQ(c.status.toString(), std::string(c.name) + ": m");
  }
}

TEST(StatusTest, OkCodeDropsMessage) {
  Status s(StatusCode::Ok, "ignored");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.message(), "");
}

TEST(StatusTest, Equality) {
  EXPECT_EQ(notFound("a"), notFound("a"));
  EXPECT_NE(notFound("a"), notFound("b"));
  EXPECT_NE(notFound("a"), dataLoss("a"));
}

TEST(StatusOrTest, HoldsValue) {
  StatusOr<std::string> s(std::string("hello"));
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s.status().ok());
  EXPECT_EQ(s.value(), "hello");
  EXPECT_EQ(*s, "hello");
  EXPECT_EQ(s->size(), 5u);
  EXPECT_EQ(s.valueOr("x"), "hello");
}

TEST(StatusOrTest, HoldsError) {
  StatusOr<int> s(outOfRange("index 7 >= size 3"));
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::OutOfRange);
  EXPECT_EQ(s.status().message(), "index 7 >= size 3");
  EXPECT_EQ(s.valueOr(-1), -1);
}

TEST(StatusOrTest, OkStatusWithoutValueBecomesInternal) {
  StatusOr<int> s(okStatus());
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::Internal);
}

TEST(StatusOrTest, MoveOnlyValue) {
  StatusOr<std::unique_ptr<int>> s(std::make_unique<int>(42));
  ASSERT_TRUE(s.ok());
  std::unique_ptr<int> p = std::move(s).value();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 42);
}

TEST(StatusOrDeathTest, ValueOfErrorAborts) {
  StatusOr<int> s(dataLoss("truncated header in model.rpplan"));
  EXPECT_DEATH((void)s.value(), "DATA_LOSS: truncated header in model.rpplan");
}

//===--- macros -----------------------------------------------------------===//

int gCalls = 0;

Status countedStatus(Status s) {
  ++gCalls;
  return s;
}

Status returnIfError(Status inner, bool *reachedEnd) {
  RP_RETURN_IF_ERROR(countedStatus(std::move(inner)));
  *reachedEnd = true;
  return okStatus();
}

StatusOr<int> half(int x) {
  if (x % 2)
    return invalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

StatusOr<int> quarter(int x) {
  RP_ASSIGN_OR_RETURN(int h, half(x));
  RP_ASSIGN_OR_RETURN(int q, half(h)); // two uses in one scope need distinct temporaries
  return q;
}

Status checkEven(int x) {
  RP_RETURN_IF_ERROR(half(x)); // a StatusOr works too
  return okStatus();
}

TEST(StatusMacroTest, ReturnIfErrorPassesOk) {
  gCalls = 0;
  bool reached = false;
  EXPECT_TRUE(returnIfError(okStatus(), &reached).ok());
  EXPECT_TRUE(reached);
  EXPECT_EQ(gCalls, 1);
}

TEST(StatusMacroTest, ReturnIfErrorReturnsErrorAndEvaluatesOnce) {
  gCalls = 0;
  bool reached = false;
  Status s = returnIfError(notFound("tensor 'w'"), &reached);
  EXPECT_EQ(s, notFound("tensor 'w'"));
  EXPECT_FALSE(reached);
  EXPECT_EQ(gCalls, 1);
}

TEST(StatusMacroTest, ReturnIfErrorAcceptsStatusOr) {
  EXPECT_TRUE(checkEven(4).ok());
  EXPECT_EQ(checkEven(3), invalidArgument("odd: 3"));
}

TEST(StatusMacroTest, AssignOrReturn) {
  StatusOr<int> ok = quarter(12);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 3);
  StatusOr<int> bad = quarter(6);
  EXPECT_EQ(bad.status(), invalidArgument("odd: 3"));
}

} // namespace
} // namespace rp::runtime
