#pragma once
// The HTTP transport of the API: the only includer of cpp-httplib. It owns the listening server,
// matches requests against a route table, checks access (bearer tokens, operator tokens, the
// submission rate limit, CORS), hands handlers plain request/response structs, and maps what
// they throw to the one error shape (api_error and validation errors to their status, storage
// outages to 503, anything else to 500), httplib's own 404, 405 and 413 answers included.
//
// Threading: construct, bind() then run() on one thread; stop() from any thread. Each connection
// is served by one thread of a pool of `http_threads`, which grows (up to 16 times that, at most
// 1024 and half the open-file limit) while every thread is busy, so slow clients cannot hold up
// the others; past that cap as many connections may wait, and more are answered 503 at once.
// Handlers run on these threads concurrently. A request's line and headers must arrive within
// 10 s, its body within 10 s and a second per 64 KiB (408 otherwise); a body declared over
// `max_body_bytes` is refused (413) before it is read, as is one whose length is not one decimal
// Content-Length (400, 411); the writes of an answer wait for the client 10 s in all and a second
// per 64 KiB written. After a request whose framing is malformed or ambiguous (one httplib cannot
// parse, a refused body, a POST without a length) the connection is closed, so that nothing sent
// after it is read as a request.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/api_error.hpp"
#include "api/json.hpp"
#include "server/access_control.hpp"
#include "server/config.hpp"
#include "server/http_metrics.hpp"

namespace kernelscan {

// A request as handlers see it.
struct request {
  std::string method;
  std::string path;
  std::vector<std::string> captures;  // path parameters, in order
  std::multimap<std::string, std::string> query;
  std::function<std::string(const std::string&)> header;
  std::string body;
  // The caller is an operator (access_control::is_operator): it may create and retire tasks
  // and see held-out points.
  bool operator_access = false;
  // The caller presented an operator token (operator tokens are configured): what holds every
  // other caller, a task's bound on each agent's submissions, does not hold it.
  bool operator_token = false;
  // Who the caller is, for bounds on each agent's submissions (access_control::agent_of).
  std::function<std::string()> agent;
  // Whether the client has gone (closed its side), asked while a streamed answer waits.
  std::function<bool()> hung_up = [] { return false; };
};

struct response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Set instead of body for streamed responses: called until it returns false.
  std::function<bool(std::string& chunk)> stream;
};

// Who may call a route.
enum class route_access {
  open,     // anyone, always: health probes and the page's static files (they carry no data)
  read,     // a token only with --auth-reads
  write,    // a token when tokens are configured
  submit,   // as write, and counted by the per-client submission rate limit
  operate,  // as write, and an operator token where operator tokens are configured
};

struct http_route {
  std::string method;
  std::string path;  // an OpenAPI template: {name} matches one non-empty segment, captured
  route_access access = route_access::read;
  std::function<response(const request&)> handler;
  // A GET route answers HEAD too (its headers, without the body), unless this is false: an
  // event stream, which would be held open for a body never sent.
  bool head = true;
};

response text_response(int status, std::string body);
response json_response(int status, const json& j);
std::optional<std::string> query_value(const request& req, const std::string& key);
api_error bad_parameter(const std::string& name, const std::string& why);
// A query parameter as an integer in [lo, hi]; `fallback` when absent; 400 otherwise.
std::int64_t int_param(const request& req, const std::string& name, std::int64_t lo,
                       std::int64_t hi, std::int64_t fallback);
// If-None-Match: "*", or a list of entity tags, weak (W/"...") or strong; weak comparison.
bool etag_matches(const std::string& header, std::string_view etag);
// Accept-Encoding names gzip (without q=0).
bool accepts_gzip(const std::string& header);
// Segment by segment, without regular expressions; fills `captures` on a match.
bool match_route(std::string_view templ, std::string_view path, std::vector<std::string>& captures);

class http_transport {
 public:
  // `access` and `metrics` must outlive the transport. Routes are tried in order.
  http_transport(std::vector<http_route> routes, access_control& access, http_metrics& metrics,
                 const serve_config& config);
  ~http_transport();

  // Binds the listening socket; returns the port (useful with port 0). Throws
  // std::runtime_error if the address cannot be bound.
  int bind(const std::string& host, int port);
  // Serves until stop(). Returns false if serving failed.
  bool run();
  // Serves one connected socket (which it closes) on the calling thread, as the server's
  // threads serve each accepted connection, until the client closes it: the connection loop
  // without the network, for the fuzzer. After bind() (an unbound server is a stopped one).
  void serve_connection(int fd);
  void stop();

 private:
  struct impl;
  std::unique_ptr<impl> m_impl;
};

}  // namespace kernelscan
