// What crosses an adoptable guard's socket (remote/adopt_socket.h): frames
// that arrive in pieces, refused when malformed, and the socket's name,
// fixed by the job id and the worker id.
#include "remote/adopt_socket.h"

#include <gtest/gtest.h>

#include <string>

namespace hvd::launcher {
namespace {

TEST(AdoptSocketTest, FramesComeBackWholeWhateverTheCuts) {
  const std::string stream =
      EncodeFrame(FrameKind::kStdout, "line one\n") +
      EncodeFrame(FrameKind::kStderr, "") +
      EncodeFrame(FrameKind::kStderr, std::string(kMaxFrameData, 'x')) +
      EncodeFrame(FrameKind::kExit, "137");
  for (size_t cut : {size_t(1), size_t(3), size_t(5), size_t(4096)}) {
    FrameReader reader;
    std::vector<Frame> frames;
    for (size_t at = 0; at < stream.size(); at += cut) {
      reader.Add(std::string_view(stream).substr(at, cut));
      while (auto frame = reader.Next()) frames.push_back(*frame);
    }
    ASSERT_FALSE(reader.malformed()) << cut;
    ASSERT_EQ(frames.size(), 4u) << cut;
    EXPECT_EQ(frames[0].kind, FrameKind::kStdout);
    EXPECT_EQ(frames[0].data, "line one\n");
    EXPECT_EQ(frames[1].kind, FrameKind::kStderr);
    EXPECT_EQ(frames[1].data, "");
    EXPECT_EQ(frames[2].data.size(), kMaxFrameData);
    EXPECT_EQ(frames[3].kind, FrameKind::kExit);
    EXPECT_EQ(frames[3].data, "137");
  }
}

TEST(AdoptSocketTest, AnUnknownKindOrAnOversizedFrameIsMalformed) {
  FrameReader unknown;
  unknown.Add(std::string("\x07\0\0\0\x01x", 6));
  EXPECT_FALSE(unknown.Next().has_value());
  EXPECT_TRUE(unknown.malformed());
  FrameReader oversized;
  std::string header("\x01\0\0\0\0", 5);
  const uint32_t size = kMaxFrameData + 1;
  header[1] = static_cast<char>(size >> 24);
  header[2] = static_cast<char>(size >> 16);
  header[3] = static_cast<char>(size >> 8);
  header[4] = static_cast<char>(size);
  oversized.Add(header);
  EXPECT_FALSE(oversized.Next().has_value());
  EXPECT_TRUE(oversized.malformed());
}

TEST(AdoptSocketTest, TheNameIsFixedShortAndSafeForAnyJobId) {
  EXPECT_EQ(AdoptSocketName("resnet-7", 12), AdoptSocketName("resnet-7", 12));
  EXPECT_NE(AdoptSocketName("resnet-7", 12), AdoptSocketName("resnet-8", 12));
  EXPECT_NE(AdoptSocketName("resnet-7", 12), AdoptSocketName("resnet-7", 13));
  const std::string name = AdoptSocketName(std::string(128, 'j'), 1 << 30);
  EXPECT_TRUE(IsAdoptSocketName(name)) << name;
  EXPECT_LT((AdoptSocketFolder() + "/" + name).size(), 100u);
  for (const char* bad : {"", "../x.sock", "a/b.sock", ".sock", "A.sock"}) {
    EXPECT_FALSE(IsAdoptSocketName(bad)) << bad;
  }
}

}  // namespace
}  // namespace hvd::launcher
