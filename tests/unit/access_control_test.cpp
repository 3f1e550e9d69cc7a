#include "server/access_control.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace kernelscan {
namespace {

using namespace std::chrono_literals;

class TokenFile : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    std::ofstream(m_path) << text;
    return m_path;
  }
  void TearDown() override { std::filesystem::remove(m_path); }
  std::string m_path = (std::filesystem::temp_directory_path() /
                        ("ks-tokens-" + std::to_string(::getpid()) + ".txt"))
                           .string();
};

TEST_F(TokenFile, TokensAreReadSkippingCommentsAndBlankLines) {
  access_control a(
      {write("# operators\n\n  abcdefghijklmnop  \nqrstuvwxyz0123456789\n"), false, 0, "", ""});
  EXPECT_TRUE(a.tokens_configured());
  EXPECT_TRUE(a.authorized("Bearer abcdefghijklmnop"));
  EXPECT_TRUE(a.authorized("bearer qrstuvwxyz0123456789"));  // the scheme is case-insensitive
  EXPECT_FALSE(a.authorized("Bearer abcdefghijklmno"));      // a prefix is not the token
  EXPECT_FALSE(a.authorized("Bearer abcdefghijklmnopq"));
  EXPECT_FALSE(a.authorized("Basic abcdefghijklmnop"));
  EXPECT_FALSE(a.authorized("abcdefghijklmnop"));
  EXPECT_FALSE(a.authorized(""));
  EXPECT_FALSE(a.reads_need_token());
}

// An agent is its token where it presents a valid one (hashed: the token itself is never the
// agent), else its address.
TEST_F(TokenFile, AnAgentIsItsTokensHashElseItsAddress) {
  access_control a({write("abcdefghijklmnop\nqrstuvwxyz0123456789\n"), false, 0, "", ""});
  const std::string one = a.agent_of("Bearer abcdefghijklmnop", "10.0.0.1");
  // SHA-256("abcdefghijklmnop"), its first 16 bytes.
  EXPECT_EQ(one, "token:f39dac6cbaba535e2c207cd0cd8f1549");
  EXPECT_EQ(a.agent_of("bearer abcdefghijklmnop", "10.0.0.2"), one);  // the same, from anywhere
  EXPECT_NE(a.agent_of("Bearer qrstuvwxyz0123456789", "10.0.0.1"), one);
  EXPECT_EQ(a.agent_of("Bearer not-a-token-at-all-here", "10.0.0.1"), "address:10.0.0.1");
  EXPECT_EQ(a.agent_of("", "::1"), "address:::1");
  access_control open({"", false, 0, "", ""});
  EXPECT_EQ(open.agent_of("Bearer abcdefghijklmnop", "10.0.0.1"), "address:10.0.0.1");
}

TEST_F(TokenFile, BadTokenFilesAreErrors) {
  EXPECT_THROW(access_control({write("# nothing\n\n"), false, 0, "", ""}), std::runtime_error);
  EXPECT_THROW(access_control({write("short\n"), false, 0, "", ""}), std::runtime_error);
  EXPECT_THROW(access_control({"/no/such/file", false, 0, "", ""}), std::runtime_error);
  EXPECT_THROW(access_control({"", true, 0, "", ""}), std::runtime_error);  // auth_reads alone
}

TEST_F(TokenFile, OperatorTokensAreOperatorsAndWritersWhileWriteTokensAreNot) {
  const std::string writers = write("writer-token-0123456789\n");
  const std::string operators = writers + ".operators";
  std::ofstream(operators) << "operator-token-0123456789\n";
  access_control a({writers, false, 0, "", operators});
  EXPECT_TRUE(a.operators_configured());
  EXPECT_TRUE(a.authorized("Bearer writer-token-0123456789"));
  EXPECT_TRUE(a.authorized("Bearer operator-token-0123456789"));  // also a write token
  EXPECT_FALSE(a.is_operator("Bearer writer-token-0123456789"));
  EXPECT_TRUE(a.is_operator("Bearer operator-token-0123456789"));
  EXPECT_FALSE(a.is_operator(""));
  // Operator tokens alone: writes need one of them.
  access_control only({"", false, 0, "", operators});
  EXPECT_TRUE(only.tokens_configured());
  EXPECT_TRUE(only.authorized("Bearer operator-token-0123456789"));
  EXPECT_FALSE(only.authorized("Bearer writer-token-0123456789"));
  // Without operator tokens, whoever may write is an operator.
  access_control writers_only({writers, false, 0, "", ""});
  EXPECT_TRUE(writers_only.is_operator("Bearer writer-token-0123456789"));
  EXPECT_FALSE(writers_only.is_operator("Bearer nobody-0123456789"));
  EXPECT_TRUE(access_control({"", false, 0, "", ""}).is_operator(""));
  EXPECT_THROW(access_control({"", false, 0, "", "/no/such/file"}), std::runtime_error);
  std::filesystem::remove(operators);
}

TEST(AccessControl, NoTokensMeansNoAuthentication) {
  access_control a({"", false, 0, "", ""});
  EXPECT_FALSE(a.tokens_configured());
  EXPECT_FALSE(a.reads_need_token());
}

TEST(AccessControl, SubmissionsAreLimitedPerClientWithABurstAndRefill) {
  access_control a({"", false, 60, "", ""});  // one per second, bursts of 6
  const auto t0 = access_control::clock::time_point{} + 1h;
  for (int i = 0; i < 6; ++i)
    EXPECT_FALSE(a.take_submission("10.0.0.1", t0)) << i;
  const auto wait = a.take_submission("10.0.0.1", t0);
  ASSERT_TRUE(wait);
  EXPECT_NEAR(*wait, 1.0, 1e-9);
  EXPECT_FALSE(a.take_submission("10.0.0.2", t0));  // another client has its own bucket
  EXPECT_TRUE(a.take_submission("10.0.0.1", t0 + 500ms));
  EXPECT_FALSE(a.take_submission("10.0.0.1", t0 + 1100ms));  // refilled one
  EXPECT_TRUE(a.take_submission("10.0.0.1", t0 + 1100ms));
  // A long pause refills only up to the burst.
  for (int i = 0; i < 6; ++i)
    EXPECT_FALSE(a.take_submission("10.0.0.1", t0 + 1h)) << i;
  EXPECT_TRUE(a.take_submission("10.0.0.1", t0 + 1h));
}

TEST(AccessControl, ZeroRateIsUnlimited) {
  access_control a({"", false, 0, "", ""});
  const auto t0 = access_control::clock::now();
  for (int i = 0; i < 1000; ++i)
    ASSERT_FALSE(a.take_submission("c", t0));
}

TEST(AccessControl, CorsOrigins) {
  access_control none({"", false, 0, "", ""});
  EXPECT_FALSE(none.cors_enabled());
  EXPECT_EQ(none.allowed_origin("https://a.example"), "");

  access_control some({"", false, 0, " https://a.example , https://b.example", ""});
  EXPECT_TRUE(some.cors_enabled());
  EXPECT_EQ(some.allowed_origin("https://a.example"), "https://a.example");
  EXPECT_EQ(some.allowed_origin("https://b.example"), "https://b.example");
  EXPECT_EQ(some.allowed_origin("https://c.example"), "");
  EXPECT_EQ(some.allowed_origin(""), "");

  access_control any({"", false, 0, "*", ""});
  EXPECT_EQ(any.allowed_origin("https://anything.example"), "*");
}

}  // namespace
}  // namespace kernelscan
