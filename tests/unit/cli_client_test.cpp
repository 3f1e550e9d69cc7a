// The client's pieces that need no daemon; the rest is in tests/integration/cli_test.cpp.
#include <gtest/gtest.h>

#include "server/cli_client.hpp"

namespace kernelscan {
namespace {

TEST(cli_client, PercentEncodesQueryValues) {
  EXPECT_EQ(percent_encode("queued,running"), "queued%2Crunning");
  EXPECT_EQ(percent_encode("label.a b=&c"), "label.a%20b%3D%26c");
  EXPECT_EQ(percent_encode("µ"), "%C2%B5");
}

TEST(cli_client, ServerUrls) {
  // Constructing connects to nothing; only the URL is checked.
  EXPECT_NO_THROW(api_client("http://127.0.0.1:8080", ""));
  EXPECT_NO_THROW(api_client("127.0.0.1:8080", ""));  // http:// is implied
  EXPECT_NO_THROW(api_client("https://ks.example.com/kernelscan/", "token"));
  EXPECT_THROW(api_client("ftp://127.0.0.1", ""), std::invalid_argument);
  EXPECT_THROW(api_client("http://", ""), std::invalid_argument);
}

}  // namespace
}  // namespace kernelscan
