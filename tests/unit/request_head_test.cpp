#include "server/detail/request_head.hpp"

#include <gtest/gtest.h>

#include <string>

namespace kernelscan::detail {
namespace {

using namespace std::string_literals;
using flaw = request_head::flaw;

request_head taken(const std::string& text) {
  request_head head;
  head.take(text);
  return head;
}

TEST(RequestHead, AWellFormedHeadHasNoFlawAndItsFieldsAsSent) {
  const auto head = taken(
      "POST /x HTTP/1.1\r\nHost:  example \t\r\nContent-Length: 1%30\r\nX-Empty:\r\n"
      "Referer: http://a/b%20c:d\r\n\r\n");
  EXPECT_EQ(head.first_flaw(), flaw::none);
  EXPECT_EQ(head.describe_flaw(), "");
  EXPECT_TRUE(head.at_line_start());
  const auto fields = head.fields();
  ASSERT_EQ(fields.size(), 4u);
  EXPECT_EQ(fields[0].first, "Host");
  EXPECT_EQ(fields[0].second, "example");
  EXPECT_EQ(fields[1].second, "1%30");
  EXPECT_EQ(fields[2].first, "X-Empty");
  EXPECT_EQ(fields[2].second, "");
  EXPECT_EQ(fields[3].second, "http://a/b%20c:d");
}

TEST(RequestHead, EachFlawIsFoundWithItsLine) {
  struct expected {
    std::string text;
    flaw f;
    std::size_t line;
  };
  for (const auto& [text, f, line] : std::vector<expected>{
           {"GET / HTTP/1.1\n", flaw::bare_lf, 1},
           {"GET / HTTP/1.1\r\nA: b\n", flaw::bare_lf, 2},
           {"GET / HTTP/1.1\r\nA: b\r\n\n", flaw::bare_lf, 3},
           {"GET / HTTP/1.1\r\nA: b\rc\r\n", flaw::bare_cr, 2},
           {"GET / HTTP/1.1\r\nA: b\r\r\n", flaw::bare_cr, 2},
           {"GET /\r HTTP/1.1\r\n", flaw::bare_cr, 1},
           {"GET / HTTP/1.1\r\nA: b\0c\r\n"s, flaw::nul, 2},
           {"GET / HTTP/1.1\r\nA: b\r\n c\r\n", flaw::folded_line, 3},
           {"GET / HTTP/1.1\r\n\tA: b\r\n", flaw::folded_line, 2},
           {"GET / HTTP/1.1\r\nContent-Length : 5\r\n", flaw::bad_field_name, 2},
           {"GET / HTTP/1.1\r\n: 5\r\n", flaw::bad_field_name, 2},
           {"GET / HTTP/1.1\r\nA\"b: 5\r\n", flaw::bad_field_name, 2},
           {"GET / HTTP/1.1\r\nHost x\r\n", flaw::bad_field_name, 2},
           {"GET / HTTP/1.1\r\nA: b\r\nNoColon\r\n", flaw::no_colon, 3},
       }) {
    SCOPED_TRACE(text);
    const auto head = taken(text);
    EXPECT_EQ(head.first_flaw(), f);
    EXPECT_EQ(head.flaw_line(), line);
    EXPECT_NE(head.describe_flaw().find("line " + std::to_string(line) + " "), std::string::npos)
        << head.describe_flaw();
  }
}

TEST(RequestHead, BytesTakenOneAtATimeAreCheckedAsAWhole) {
  // httplib reads a head a byte at a time: a CR is judged by the byte that follows it.
  request_head head;
  const std::string text = "GET / HTTP/1.1\r\nA: b\r\nC: d\re\r\n";
  for (std::size_t i = 0; i < text.size(); ++i) {
    head.take(text.substr(i, 1));
    if (i < text.find("\re")) {
      EXPECT_EQ(head.first_flaw(), flaw::none) << i;
    }
  }
  EXPECT_EQ(head.first_flaw(), flaw::bare_cr);
  EXPECT_EQ(head.flaw_line(), 3u);
  EXPECT_EQ(head.text(), text);
  // The first flaw is kept; clear() forgets it and the bytes.
  head.take("\n");
  EXPECT_EQ(head.first_flaw(), flaw::bare_cr);
  head.clear();
  EXPECT_EQ(head.first_flaw(), flaw::none);
  EXPECT_EQ(head.text(), "");
  head.take("GET / HTTP/1.1\r\n");
  EXPECT_EQ(head.first_flaw(), flaw::none);
}

TEST(RequestHead, SaysWhetherHttplibReadsItsFieldsOtherwise) {
  EXPECT_FALSE(taken("GET /%41 HTTP/1.1\r\nHost: x\r\nA:  b \r\n\r\n").httplib_reads_otherwise());
  EXPECT_TRUE(taken("GET / HTTP/1.1\r\nHost: x\r\nA: 1%30\r\n\r\n").httplib_reads_otherwise());
  EXPECT_TRUE(taken("GET / HTTP/1.1\r\nA:\r\nHost: x\r\n\r\n").httplib_reads_otherwise());
  EXPECT_TRUE(taken("GET / HTTP/1.1\r\nA: \t \r\n\r\n").httplib_reads_otherwise());
  request_head head = taken("GET / HTTP/1.1\r\nA: %\r\n\r\n");
  head.clear();
  head.take("GET / HTTP/1.1\r\nA: b\r\n\r\n");
  EXPECT_FALSE(head.httplib_reads_otherwise());
}

TEST(RequestHead, AtLineStartOnlyBetweenLines) {
  request_head head;
  EXPECT_TRUE(head.at_line_start());
  head.take("GET / HT");
  EXPECT_FALSE(head.at_line_start());
  head.take("TP/1.1\r");
  EXPECT_FALSE(head.at_line_start());
  head.take("\n");
  EXPECT_TRUE(head.at_line_start());
}

}  // namespace
}  // namespace kernelscan::detail
