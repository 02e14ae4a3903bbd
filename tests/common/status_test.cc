#include "hvd/common/status.h"

#include <gtest/gtest.h>

namespace hvd::common {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.ToString(), "ok");
}

TEST(StatusTest, KeepsCodeAndMessage) {
  Status status = Status::Timeout("waited 5 s");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.code(), Code::kTimeout);
  EXPECT_EQ(status.ToString(), "timeout: waited 5 s");
  Status wrapped = status.WithContext("rendezvous");
  EXPECT_EQ(wrapped.code(), Code::kTimeout);
  EXPECT_EQ(wrapped.message(), "rendezvous: waited 5 s");
}

TEST(StatusTest, ResultHoldsValueOrError) {
  Result<int> value = 7;
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, 7);
  Result<int> error = Status::NotFound("no such key");
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.status().code(), Code::kNotFound);
}

TEST(StatusTest, ResultFromOkStatusIsAnInternalError) {
  Result<int> result = Status::Ok();
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Code::kInternal);
}

}  // namespace
}  // namespace hvd::common
