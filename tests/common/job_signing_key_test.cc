// The job's Ed25519 signing key (issue 33): the same for every hvdrun of a
// job, checkable with the public half alone, and nothing else verifies.
#include "hvd/common/job_signing_key.h"

#include <gtest/gtest.h>

namespace hvd::common {
namespace {

TEST(JobSigningKeyTest, OneSecretMakesOneKeyPair) {
  auto first = JobSigningKey::FromSecret("s3cret");
  auto again = JobSigningKey::FromSecret("s3cret");
  auto other = JobSigningKey::FromSecret("other");
  ASSERT_TRUE(first.ok() && again.ok() && other.ok());
  EXPECT_EQ(first->public_key().size(), kJobPublicKeyDigits);
  EXPECT_EQ(first->public_key(), again->public_key()) << "a standby's too";
  EXPECT_NE(first->public_key(), other->public_key());
  // Ed25519 signs deterministically: either hvdrun's signature is the same.
  EXPECT_EQ(first->Sign("m"), again->Sign("m"));
}

TEST(JobSigningKeyTest, OnlyTheJobsSignatureOfTheSameMessageVerifies) {
  auto key = JobSigningKey::FromSecret("s3cret");
  auto other = JobSigningKey::FromSecret("other");
  ASSERT_TRUE(key.ok() && other.ok());
  const std::string signature = key->Sign("driver 10.0.0.1:4000");
  EXPECT_EQ(signature.size(), kJobSignatureDigits);
  EXPECT_TRUE(
      VerifyJobSignature(key->public_key(), "driver 10.0.0.1:4000", signature)
          .ok());
  for (auto [public_key, message, sig] :
       {std::tuple{key->public_key(), "driver 10.0.0.6:4000", signature},
        std::tuple{other->public_key(), "driver 10.0.0.1:4000", signature},
        std::tuple{key->public_key(), "driver 10.0.0.1:4000",
                   other->Sign("driver 10.0.0.1:4000")},
        std::tuple{key->public_key(), "driver 10.0.0.1:4000",
                   signature.substr(1) + "0"},
        std::tuple{key->public_key(), "driver 10.0.0.1:4000",
                   std::string(kJobSignatureDigits, 'x')},
        std::tuple{std::string("short"), "driver 10.0.0.1:4000", signature},
        std::tuple{key->public_key(), "driver 10.0.0.1:4000", std::string()}}) {
    Status checked = VerifyJobSignature(public_key, message, sig);
    EXPECT_EQ(checked.code(), Code::kUnauthenticated) << message << " " << sig;
  }
}

}  // namespace
}  // namespace hvd::common
