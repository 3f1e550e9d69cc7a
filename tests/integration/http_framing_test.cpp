// Requests whose framing is malformed or ambiguous, against a real daemon: each is answered once,
// in the API's error shape, and its connection closed, so that nothing the client sent after it
// (a body, the rest of a head, a request hidden in either) is read as another request.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/daemon_process.hpp"
#include "tests/support/raw_client.hpp"

namespace kernelscan::testing {
namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;
using clock = std::chrono::steady_clock;

const std::string k_job = R"({"kernel": {"op": "stream", "variant": "copy", "n": 4096}})";
const std::string k_healthz = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

// How many answers `received` holds.
std::size_t answers(const std::string& received) {
  std::size_t n = 0;
  for (auto at = received.find("HTTP/1.1 "); at != std::string::npos;
       at = received.find("HTTP/1.1 ", at + 1))
    ++n;
  return n;
}

// The JSON body of the one answer in `received`.
json body_of(const std::string& received) {
  const auto at = received.find("\r\n\r\n");
  if (at == std::string::npos) return nullptr;
  return json::parse(received.substr(at + 4), nullptr, false);
}

// Sends `request` on a new connection; what the daemon answered before it closed it. Closing
// takes well under the 5 s a connection may idle between requests.
std::string answered_and_closed(const daemon_process& daemon, const std::string& request) {
  const auto t0 = clock::now();
  std::string received = exchange_until_closed(daemon.port(), request, 10s);
  EXPECT_LT(clock::now() - t0, 3s) << "not closed at once: " << received;
  EXPECT_EQ(answers(received), 1u) << received;
  EXPECT_NE(received.find("\r\nConnection: close\r\n"), std::string::npos) << received;
  return received;
}

std::string post_job(const std::vector<std::string>& content_lengths) {
  std::string head = "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
  for (const auto& length : content_lengths)
    head += "Content-Length: " + length + "\r\n";
  return head + "\r\n" + k_job;
}

std::string unrouted_count(const daemon_process& daemon, const std::string& method, int code) {
  const std::string text = daemon.get("/metrics").text;
  const std::string series = "kernelscan_http_requests_total{method=\"" + method +
                             "\",route=\"unrouted\",code=\"" + std::to_string(code) + "\"} ";
  const auto at = text.find(series);
  if (at == std::string::npos) return "none";
  return text.substr(at + series.size(), text.find('\n', at) - at - series.size());
}

TEST(HttpFraming, ContentLengthGivenTwiceIsRefused400) {
  daemon_process daemon;
  daemon.start();
  const std::string length = std::to_string(k_job.size());
  // Two lengths (a proxy in front may frame the body by either), or the same one twice.
  for (const auto& lengths :
       {std::vector<std::string>{length, "5"}, {"5", length}, {length, length}}) {
    const auto received = answered_and_closed(daemon, post_job(lengths));
    EXPECT_EQ(received.rfind("HTTP/1.1 400", 0), 0u) << received;
    const json body = body_of(received);
    EXPECT_EQ(body["error"]["type"], "invalid_header") << received;
    EXPECT_EQ(body["error"]["message"], "Content-Length is given 2 times; a request has one length")
        << received;
    EXPECT_EQ(body["error"]["details"][0]["field"], "Content-Length") << received;
  }
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 0u);
  EXPECT_EQ(unrouted_count(daemon, "POST", 400), "3");
}

TEST(HttpFraming, AContentLengthThatIsNotADecimalNumberIsRefused400AtOnce) {
  daemon_process daemon;
  daemon.start();
  const std::string length = std::to_string(k_job.size());
  // Read as sent: "5%39" is not 59, though httplib percent-decodes header values; an empty one
  // is not none.
  const std::string encoded = length.substr(0, 1) + "%3" + length.substr(1);
  for (const std::string& value : std::vector<std::string>{
           "-5", "abc", "+" + length, "0x48", length + " 0", length + ".0", encoded, ""}) {
    SCOPED_TRACE(value);
    const auto received = answered_and_closed(daemon, post_job({value}));
    EXPECT_EQ(received.rfind("HTTP/1.1 400", 0), 0u) << received;
    const json body = body_of(received);
    EXPECT_EQ(body["error"]["type"], "invalid_header") << received;
    EXPECT_EQ(body["error"]["message"],
              "Content-Length is not a non-negative decimal integer: \"" + value + "\"")
        << received;
    EXPECT_EQ(body["error"]["details"][0]["field"], "Content-Length") << received;
  }
  // With "Expect: 100-continue" it is answered instead of "100 Continue".
  const auto expecting =
      answered_and_closed(daemon,
                          "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n"
                          "Expect: 100-continue\r\n\r\n");
  EXPECT_EQ(expecting.rfind("HTTP/1.1 400", 0), 0u) << expecting;
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 0u);
}

TEST(HttpFraming, AMalformedRequestIsAnsweredOnceAndClosed) {
  daemon_process daemon;
  daemon.start();
  for (const std::string& request :
       std::vector<std::string>{"GET /healthz HTTP/1.1\nHost: x\nConnection: close\n\n",
                                "GET /healthz HTTP/9.9\r\nHost: x\r\nConnection: close\r\n\r\n",
                                "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "GET\r\n\r\n",
                                // Nor is a request that follows read.
                                "GET / HTTP/9.9\r\nHost: x\r\n\r\n" + k_healthz}) {
    SCOPED_TRACE(request);
    const auto received = answered_and_closed(daemon, request);
    EXPECT_EQ(received.rfind("HTTP/1.1 400", 0), 0u) << received;
    EXPECT_EQ(body_of(received)["error"]["type"], "bad_request") << received;
  }
}

TEST(HttpFraming, ABodyWithoutAContentLengthIsNeverReadAsARequest) {
  daemon_process daemon;
  daemon.start();
  // A POST without a Content-Length has an empty body; what follows its head is not read.
  const auto received = answered_and_closed(
      daemon, "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\r\n" +
                  k_healthz);
  EXPECT_EQ(received.rfind("HTTP/1.1 400", 0), 0u) << received;
  EXPECT_EQ(body_of(received)["error"]["type"], "invalid_json") << received;
  // Without a body, as `curl -X POST` cancels a job, it is answered as before.
  const std::int64_t id = daemon.submit(stream_sweep(200, 100));
  const auto cancelled = answered_and_closed(
      daemon, "POST /api/v1/jobs/" + std::to_string(id) + "/cancel HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(cancelled.rfind("HTTP/1.1 200", 0), 0u) << cancelled;
  // A body declared on a GET, which no route reads, is not read as a request either.
  const auto got =
      answered_and_closed(daemon, "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                      std::to_string(k_healthz.size()) + "\r\n\r\n" + k_healthz);
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  // Requests that say how long their body is keep their connection.
  const std::string two = "POST /api/v1/jobs/" + std::to_string(id) +
                          "/cancel HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" +
                          "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  const auto both = exchange_until_closed(daemon.port(), two, 10s);
  EXPECT_EQ(answers(both), 2u) << both;
}

TEST(HttpFraming, AHeaderLineOver8KiBIsAnswered431) {
  daemon_process daemon;
  daemon.start();
  const std::string head = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Long: ";
  // 8 KiB with its CRLF is the most a line may take.
  const auto longest =
      exchange_until_closed(daemon.port(), head + std::string(8182, 'a') + "\r\n\r\n", 10s);
  EXPECT_EQ(longest.rfind("HTTP/1.1 200", 0), 0u) << longest.substr(0, 200);
  const auto received = answered_and_closed(daemon, head + std::string(9000, 'a') + "\r\n\r\n");
  EXPECT_EQ(received.rfind("HTTP/1.1 431", 0), 0u) << received;
  const json body = body_of(received);
  EXPECT_EQ(body["error"]["type"], "header_fields_too_large") << received;
  EXPECT_EQ(body["error"]["message"], "a header line takes more than 8192 bytes") << received;
  EXPECT_EQ(unrouted_count(daemon, "GET", 431), "1");
}

TEST(HttpFraming, ARequestLineOver8KiBIsAnswered414InTheApisErrorShape) {
  daemon_process daemon;
  daemon.start();
  const std::string start = "GET /api/v1/jobs?label.team=";
  const std::string end = " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  // 8 KiB with its CRLF is the most a request line may take.
  const auto longest = exchange_until_closed(
      daemon.port(), start + std::string(8192 - start.size() - 11, 'x') + end, 10s);
  EXPECT_EQ(longest.rfind("HTTP/1.1 200", 0), 0u) << longest.substr(0, 200);
  // Past the head's 64 KiB too, where no answer came.
  for (const std::size_t length : {8200u, 20'000u, 66'000u, 100'000u}) {
    SCOPED_TRACE(length);
    const auto received = answered_and_closed(daemon, start + std::string(length, 'x') + end);
    EXPECT_EQ(received.rfind("HTTP/1.1 414", 0), 0u) << received.substr(0, 200);
    const json body = body_of(received);
    EXPECT_EQ(body["error"]["type"], "uri_too_long") << received;
    EXPECT_EQ(body["error"]["message"], "the request line takes more than 8192 bytes") << received;
  }
  EXPECT_EQ(unrouted_count(daemon, "other", 414), "4");
}

// The one answer in `received`, which must be `status` with the error `type` and `message`.
void expect_error(const std::string& received, int status, const std::string& type,
                  const std::string& message) {
  EXPECT_EQ(received.rfind("HTTP/1.1 " + std::to_string(status), 0), 0u) << received;
  const json body = body_of(received);
  EXPECT_EQ(body["error"]["type"], type) << received;
  EXPECT_EQ(body["error"]["message"], message) << received;
}

TEST(HttpFraming, AHeadWithABareLfABareCrOrANulIsRefused400AndClosed) {
  daemon_process daemon;
  daemon.start();
  const std::string length = std::to_string(k_job.size());
  const std::string post = "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\n";
  struct refused {
    std::string request, message;
  };
  for (const auto& [request, message] : std::vector<refused>{
           // httplib skipped a header line ending in a bare LF: no length, so the body was the
           // next request (here a GET's), or the POST's body was read as empty.
           {"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                std::to_string(k_healthz.size()) + "\n\r\n" + k_healthz,
            "line 3 of the request's head ends in a bare LF (lines end in CRLF)"},
           {post + "Content-Length: " + length + "\n\r\n" + k_job,
            "line 3 of the request's head ends in a bare LF (lines end in CRLF)"},
           {post + "Transfer-Encoding: chunked\n\r\n5\r\nhello\r\n0\r\n\r\n",
            "line 3 of the request's head ends in a bare LF (lines end in CRLF)"},
           {"GET /healthz HTTP/1.1\nHost: x\r\n\r\n",
            "line 1 of the request's head ends in a bare LF (lines end in CRLF)"},
           {"GET /healthz HTTP/1.1\r\nHost: x\r\n\n" + k_healthz,
            "line 3 of the request's head ends in a bare LF (lines end in CRLF)"},
           {"GET /healthz HTTP/1.1\r\nHost: x\rContent-Length: 5\r\n\r\nhello",
            "line 2 of the request's head has a CR that is not followed by LF"},
           {"GET /heal\rthz HTTP/1.1\r\nHost: x\r\n\r\n",
            "line 1 of the request's head has a CR that is not followed by LF"},
           {"GET /healthz HTTP/1.1\r\nX-A: a\0b\r\nHost: x\r\n\r\n"s,
            "line 2 of the request's head has a NUL byte"},
       }) {
    SCOPED_TRACE(request);
    expect_error(answered_and_closed(daemon, request), 400, "bad_request", message);
  }
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 0u);
  EXPECT_EQ(unrouted_count(daemon, "GET", 400), "5");
  EXPECT_EQ(unrouted_count(daemon, "POST", 400), "2");
}

TEST(HttpFraming, AFoldedHeaderLineOrOneThatIsNotNameColonValueIsRefused400AndClosed) {
  daemon_process daemon;
  daemon.start();
  const std::string length = std::to_string(k_job.size());
  struct refused {
    std::string request, message;
  };
  for (const auto& [request, message] : std::vector<refused>{
           {"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\n\r\n",
            "line 4 of the request's head begins with whitespace (obsolete line folding is not "
            "accepted)"},
           {"GET /healthz HTTP/1.1\r\n\tHost: x\r\n\r\n",
            "line 2 of the request's head begins with whitespace (obsolete line folding is not "
            "accepted)"},
           // httplib read "Content-Length " as another header than Content-Length.
           {"POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length : " + length + "\r\n\r\n" +
                k_job,
            "line 3 of the request's head has a field name that is not a token (no whitespace "
            "may precede its colon)"},
           {"GET /healthz HTTP/1.1\r\n: x\r\n\r\n",
            "line 2 of the request's head has a field name that is not a token (no whitespace "
            "may precede its colon)"},
           {"GET /healthz HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n",
            "line 3 of the request's head is not a header field (name: value)"},
       }) {
    SCOPED_TRACE(request);
    expect_error(answered_and_closed(daemon, request), 400, "bad_request", message);
  }
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 0u);
  // Whitespace around a value, an empty value and a colon in a value are well formed.
  const auto fine = exchange_until_closed(
      daemon.port(),
      "GET /healthz HTTP/1.1\r\nHost: \t x:1 \t\r\nX-Empty:\r\nConnection: close\r\n\r\n", 10s);
  EXPECT_EQ(fine.rfind("HTTP/1.1 200", 0), 0u) << fine;
}

TEST(HttpFraming, HeaderValuesAreReadAsSentNotPercentDecoded) {
  daemon_process daemon;
  daemon.start();
  // A percent sign where a browser sends one (a Referer) is no error.
  const auto referred =
      exchange_until_closed(daemon.port(),
                            "GET /healthz HTTP/1.1\r\nHost: x\r\nReferer: http://x/a%20b?q=%ZZ\r\n"
                            "Connection: close\r\n\r\n",
                            10s);
  EXPECT_EQ(referred.rfind("HTTP/1.1 200", 0), 0u) << referred;
  // An Idempotency-Key is a key as sent: "k%31" and "k1" are two keys, two jobs.
  const auto with_key = [&](const std::string& key) {
    return exchange_until_closed(daemon.port(),
                                 "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " +
                                     key + "\r\nContent-Length: " + std::to_string(k_job.size()) +
                                     "\r\nConnection: close\r\n\r\n" + k_job,
                                 10s);
  };
  const json first = body_of(with_key("k%31")), second = body_of(with_key("k1"));
  EXPECT_NE(first["id"], second["id"]) << first << second;
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 2u);
}

// Whether the connection ends after an answer is read from the Connection field as sent, its
// options in any case, and an answer after which it ends says "Connection: close".
TEST(HttpFraming, TheConnectionFieldIsReadAsSent) {
  daemon_process daemon;
  daemon.start();
  // Asked to close, in any spelling the standard allows: one answer, which says so; the request
  // after it is not read.
  for (const std::string field : {"Connection: Close", "Connection: keep-alive, CLOSE",
                                  "Connection: x\r\nConnection: close"}) {
    SCOPED_TRACE(field);
    const auto received = answered_and_closed(
        daemon, "GET /healthz HTTP/1.1\r\nHost: x\r\n" + field + "\r\n\r\n" + k_healthz);
    EXPECT_EQ(received.rfind("HTTP/1.1 200", 0), 0u) << received;
  }
  // "clos%65" is no "close" (httplib percent-decodes header values): the connection is kept,
  // and the request after it answered.
  const auto both =
      exchange_until_closed(daemon.port(),
                            "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: clos%65\r\n\r\n"
                            "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                            10s);
  EXPECT_EQ(answers(both), 2u) << both;
  const auto first = both.substr(0, both.find("HTTP/1.1 ", 1));
  EXPECT_EQ(first.find("Connection: close"), std::string::npos) << both;
  // HTTP/1.0 closes unless kept alive, in any case; an answer before closing says so.
  const auto closing = answered_and_closed(daemon, "GET /healthz HTTP/1.0\r\n\r\n" + k_healthz);
  EXPECT_EQ(closing.rfind("HTTP/1.1 200", 0), 0u) << closing;
  EXPECT_EQ(answers(exchange_until_closed(daemon.port(),
                                          "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                                          "GET /healthz HTTP/1.0\r\n\r\n",
                                          10s)),
            2u);
}

TEST(HttpFraming, ABodyWithAContentCodingOrMultipartIsRefused415Unread) {
  daemon_process daemon;
  daemon.start();
  const std::string length = std::to_string(k_job.size());
  // Before any coding is applied, httplib would have inflated a gzip body (past the body
  // limit: a small body can inflate to gigabytes). A refusal names the header.
  for (const std::string coding : {"gzip", "deflate", "br", "x-unknown", "identity, gzip"}) {
    SCOPED_TRACE(coding);
    const auto received = answered_and_closed(
        daemon, "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Encoding: " + coding +
                    "\r\nContent-Length: " + length + "\r\n\r\n" + k_job);
    const std::string why = "\"" + coding +
                            "\" is not accepted: the API takes request bodies uncompressed (no "
                            "Content-Encoding, or identity)";
    expect_error(received, 415, "unsupported_media_type", "Content-Encoding " + why);
    EXPECT_EQ(body_of(received)["error"]["details"][0]["field"], "Content-Encoding");
    EXPECT_NE(received.find("\r\nAccept-Encoding: identity\r\n"), std::string::npos) << received;
  }
  for (const std::string type : {"multipart/form-data; boundary=XX", "Multipart/Mixed"}) {
    SCOPED_TRACE(type);
    const auto received = answered_and_closed(
        daemon, "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: " + type +
                    "\r\nContent-Length: 10\r\n\r\n--XX--\r\n\r\n");
    expect_error(received, 415, "unsupported_media_type",
                 "Content-Type \"" + type +
                     "\" is not accepted: the API takes JSON bodies (application/json)");
    EXPECT_EQ(body_of(received)["error"]["details"][0]["field"], "Content-Type");
  }
  // With "Expect: 100-continue" it is answered instead of "100 Continue".
  const auto expecting = answered_and_closed(
      daemon,
      "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: 10\r\n"
      "Expect: 100-continue\r\n\r\n");
  EXPECT_EQ(expecting.rfind("HTTP/1.1 415", 0), 0u) << expecting;
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 0u);
  EXPECT_EQ(unrouted_count(daemon, "POST", 415), "8");
  // The identity coding, and JSON however it is labelled, are the body as sent.
  for (const std::string head :
       {"Content-Encoding: identity\r\n", "Content-Type: application/json; charset=utf-8\r\n",
        "Content-Type: text/plain\r\n", "Content-Type: application/x-www-form-urlencoded\r\n"}) {
    SCOPED_TRACE(head);
    const auto received = exchange_until_closed(daemon.port(),
                                                "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\n" + head +
                                                    "Content-Length: " + length +
                                                    "\r\nConnection: close\r\n\r\n" + k_job,
                                                10s);
    EXPECT_EQ(received.rfind("HTTP/1.1 201", 0), 0u) << received;
  }
}

TEST(HttpFraming, AMethodTheApiDoesNotImplementIsAnswered501AndClosed) {
  daemon_process daemon;
  daemon.start();
  for (const std::string method : {"TRACE", "CONNECT", "PRI", "get", "Post", "FOO", "PROPFIND"}) {
    SCOPED_TRACE(method);
    const std::string target = method == "CONNECT" ? "x:443" : "/api/v1/jobs";
    // Nor is what follows read: a body it may have, or a request.
    const auto received = answered_and_closed(
        daemon, method + " " + target + " HTTP/1.1\r\nHost: x\r\n\r\n" + k_healthz);
    expect_error(received, 501, "not_implemented",
                 "the method \"" + method +
                     "\" is not implemented by this server, whose routes take GET, HEAD, POST, "
                     "PUT, PATCH, DELETE and OPTIONS (methods are case-sensitive)");
  }
  EXPECT_EQ(unrouted_count(daemon, "other", 501), "7");
  // A method the API serves elsewhere, on a path that does not have it, is 405 with Allow.
  const auto wrong = answered_and_closed(
      daemon, "DELETE /api/v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  expect_error(wrong, 405, "method_not_allowed",
               "DELETE is not allowed on /api/v1/jobs (allowed: GET, HEAD, POST)");
  EXPECT_NE(wrong.find("\r\nAllow: GET, HEAD, POST\r\n"), std::string::npos) << wrong;
  // HEAD is a GET without its body: its status and headers, nothing after them, and the
  // connection goes on to the next request.
  const auto head = exchange_until_closed(daemon.port(),
                                          "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                                          "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: "
                                          "close\r\n\r\n",
                                          10s);
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
  const auto head_end = head.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << head;
  EXPECT_NE(head.substr(0, head_end).find("\r\nContent-Length: "), std::string::npos) << head;
  EXPECT_EQ(head.find("HTTP/1.1 200", head_end), head_end + 4) << head;  // the GET's, at once
  // Not on the event stream, which would be held open for a body never sent.
  const auto stream = exchange_until_closed(
      daemon.port(), "HEAD /api/v1/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 10s);
  EXPECT_EQ(stream.rfind("HTTP/1.1 405", 0), 0u) << stream;
  EXPECT_NE(stream.find("\r\nAllow: GET\r\n"), std::string::npos) << stream;
}

}  // namespace
}  // namespace kernelscan::testing
