// libFuzzer target: the bytes a client sends on one connection, through the HTTP server's own
// connection loop (buffered reads, the head's and body's deadlines and limits, refused bodies,
// keep-alive and pipelining), httplib's parser and the transport's routing, access checks and
// error answers, to routes shaped like the API's (path captures, query integers, JSON bodies, a
// streamed answer). Invariants beyond "no crash" and "no hang": the server answers only with
// HTTP/1.1 status lines, and never with a 5xx but 501 (a method the server does not implement,
// which is the client's to fix): nothing a client sends is an internal error.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

#include "api/field_errors.hpp"
#include "api/json.hpp"
#include "server/http_transport.hpp"

using namespace kernelscan;

namespace {

std::vector<http_route> routes() {
  std::vector<http_route> r;
  r.push_back({"GET", "/healthz", route_access::open, [](const request&) {
                 return json_response(200, {{"status", "ok"}});
               }});
  r.push_back({"GET", "/api/v1/items/{id}", route_access::read, [](const request& req) {
                 const std::string& id = req.captures.at(0);
                 if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos ||
                     id.size() > 18) {
                   throw bad_parameter("id", "\"" + id + "\" is not an item id");
                 }
                 const auto limit = int_param(req, "limit", 1, 1000, 100);
                 return json_response(200, {{"id", std::stoll(id)}, {"limit", limit}});
               }});
  r.push_back({"POST", "/api/v1/items", route_access::submit, [](const request& req) {
                 const json body = parse_json(req.body);
                 if (!body.is_object()) {
                   throw validation_error({{"body", "must be a JSON object"}});
                 }
                 return json_response(201, {{"fields", body.size()}});
               }});
  r.push_back({"GET", "/api/v1/stream", route_access::read, [](const request&) {
                 response out;
                 out.content_type = "text/plain";
                 auto left = std::make_shared<int>(3);
                 out.stream = [left](std::string& chunk) {
                   if ((*left)-- == 0) return false;
                   chunk = "chunk\n";
                   return true;
                 };
                 return out;
               }});
  return r;
}

struct server {
  server() : access(access_control::options{}), transport(routes(), access, metrics, config()) {
    transport.bind("127.0.0.1", 0);  // bound, not listening: a running server for the loop
  }
  static serve_config config() {
    serve_config c;
    c.max_body_bytes = 4096;
    return c;
  }
  access_control access;
  http_metrics metrics;
  http_transport transport;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static server s;
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::abort();
  const int client = fds[1];
  std::thread writer([&] {
    std::size_t sent = 0;
    while (sent < size) {
      const ssize_t n = ::send(client, data + sent, size - sent, MSG_NOSIGNAL);
      if (n <= 0) break;  // the server closed (it refused a body, or the head was too large)
      sent += std::size_t(n);
    }
    ::shutdown(client, SHUT_WR);
  });
  std::string answers;
  std::thread reader([&] {
    char buf[8192];
    ssize_t n;
    while ((n = ::recv(client, buf, sizeof buf, 0)) > 0)
      answers.append(buf, std::size_t(n));
  });
  s.transport.serve_connection(fds[0]);  // closes fds[0]
  writer.join();
  reader.join();
  ::close(client);
  if (answers.empty()) return 0;
  if (answers.rfind("HTTP/1.1 ", 0) != 0) std::abort();
  // Every answer's status line (answers follow one another; no body here holds "\r\nHTTP/1.1").
  for (std::size_t at = 0; at != std::string::npos; at = answers.find("\r\nHTTP/1.1 ", at + 1)) {
    const std::string_view line = std::string_view(answers).substr(at == 0 ? 0 : at + 2);
    if (line.size() > 11 && line[9] == '5' && line.substr(9, 3) != "501") {
      std::abort();  // a 5xx: an internal error
    }
  }
  return 0;
}
