#include "negotiation/message.h"

#include <gtest/gtest.h>

namespace hvd::runtime {
namespace {

Request Sample(const std::string& name) {
  Request r;
  r.type = OpType::kBroadcast;
  r.dtype = DataType::kFloat16;
  r.op = ReduceOp::kProduct;
  r.root = 3;
  r.prescale = 0.25;
  r.postscale = -2.5;
  r.name = name;
  r.shape = {4, 0, 1LL << 40};
  r.device = 7;
  return r;
}

TEST(MessageTest, RequestListRoundTrips) {
  RequestList list;
  list.shutdown = true;
  list.requests = {Sample("a"), Sample(std::string("with\0nul", 8))};
  RequestList back;
  ASSERT_TRUE(Decode(Encode(list), &back).ok());
  EXPECT_TRUE(back.shutdown);
  ASSERT_EQ(back.requests.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const Request& got = back.requests[i];
    const Request& want = list.requests[i];
    EXPECT_EQ(got.type, want.type);
    EXPECT_EQ(got.dtype, want.dtype);
    EXPECT_EQ(got.op, want.op);
    EXPECT_EQ(got.root, want.root);
    EXPECT_EQ(got.prescale, want.prescale);
    EXPECT_EQ(got.postscale, want.postscale);
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.shape, want.shape);
    EXPECT_EQ(got.device, want.device);
  }
}

TEST(MessageTest, RequestListFlagsRoundTripEachAlone) {
  for (bool shutdown : {false, true}) {
    for (bool waiting : {false, true}) {
      RequestList list;
      list.shutdown = shutdown;
      list.waiting = waiting;
      RequestList back;
      back.shutdown = !shutdown;
      back.waiting = !waiting;
      ASSERT_TRUE(Decode(Encode(list), &back).ok());
      EXPECT_EQ(back.shutdown, shutdown);
      EXPECT_EQ(back.waiting, waiting);
    }
  }
}

TEST(MessageTest, RequestListFromBeforeTheWaitingFlagReadsTheSame) {
  // The first byte was the shutdown byte, 0 or 1.
  RequestList back;
  ASSERT_TRUE(Decode(std::string("\x01\0\0\0\0", 5), &back).ok());
  EXPECT_TRUE(back.shutdown);
  EXPECT_FALSE(back.waiting);
}

TEST(MessageTest, RequestListWithAnUnknownFlagIsRefused) {
  RequestList back;
  common::Status status = Decode(std::string("\x04\0\0\0\0", 5), &back);
  EXPECT_EQ(status.code(), common::Code::kInternal);
  EXPECT_NE(status.message().find("unknown flags"), std::string::npos)
      << status.message();
}

TEST(MessageTest, ResponseListRoundTrips) {
  ResponseList list;
  Response run;
  run.request = Sample("gather.me");
  run.request.type = OpType::kAlltoall;
  run.request.splits = {1, 0, 2};
  run.request.group = "gather.me+2";
  run.sizes = {0, 5, 2};
  Response error;
  error.kind = Response::Kind::kError;
  error.request.name = "bad";
  error.error_code = common::Code::kMismatch;
  error.error_message = "ranks disagree";
  list.responses = {run, error};
  ResponseList back;
  ASSERT_TRUE(Decode(Encode(list), &back).ok());
  EXPECT_FALSE(back.shutdown);
  ASSERT_EQ(back.responses.size(), 2u);
  EXPECT_EQ(back.responses[0].kind, Response::Kind::kRun);
  EXPECT_EQ(back.responses[0].request.type, OpType::kAlltoall);
  EXPECT_EQ(back.responses[0].request.splits, run.request.splits);
  EXPECT_EQ(back.responses[0].request.group, run.request.group);
  EXPECT_EQ(back.responses[0].request.shape, run.request.shape);
  EXPECT_EQ(back.responses[0].sizes, run.sizes);
  EXPECT_EQ(back.responses[1].kind, Response::Kind::kError);
  EXPECT_EQ(back.responses[1].error_code, common::Code::kMismatch);
  EXPECT_EQ(back.responses[1].error_message, "ranks disagree");
}

TEST(MessageTest, EveryTruncationIsRefused) {
  RequestList list;
  list.requests = {Sample("tensor")};
  const std::string bytes = Encode(list);
  for (size_t size = 0; size < bytes.size(); ++size) {
    RequestList back;
    common::Status status = Decode(bytes.substr(0, size), &back);
    EXPECT_EQ(status.code(), common::Code::kInternal) << size;
  }
  RequestList back;
  EXPECT_FALSE(Decode(bytes + "x", &back).ok()) << "trailing bytes";
}

TEST(MessageTest, OutOfRangeEnumIsRefused) {
  RequestList list;
  list.requests = {Sample("t")};
  std::string bytes = Encode(list);
  bytes[5] = 99;  // the first request's op type
  RequestList back;
  EXPECT_FALSE(Decode(bytes, &back).ok());
}

TEST(MessageTest, HugeCountDoesNotAllocate) {
  // A count of 2^32-1 requests with no bytes behind it fails cleanly.
  std::string bytes = {0, '\xff', '\xff', '\xff', '\xff'};
  RequestList back;
  EXPECT_FALSE(Decode(bytes, &back).ok());
}

TEST(MessageTest, UnnamedNamesCarryTheirOpAndNumber) {
  EXPECT_EQ(UnnamedName(OpType::kAllgather, 12), "allgather.noname.12");
  EXPECT_EQ(UnnamedNumber(OpType::kAllgather, "allgather.noname.12"), 12);
  // Another op's name, a user's name, a number with anything after it.
  EXPECT_EQ(UnnamedNumber(OpType::kAllreduce, "allgather.noname.12"),
            std::nullopt);
  EXPECT_EQ(UnnamedNumber(OpType::kAllgather, "weights"), std::nullopt);
  EXPECT_EQ(UnnamedNumber(OpType::kAllgather, "allgather.noname."),
            std::nullopt);
  EXPECT_EQ(UnnamedNumber(OpType::kAllgather, "allgather.noname.1x"),
            std::nullopt);
}

}  // namespace
}  // namespace hvd::runtime
