#include "server/http_transport.hpp"

#include <httplib.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <thread>

#include "api/field_errors.hpp"
#include "server/detail/client_connection.hpp"
#include "server/detail/comma_list.hpp"
#include "server/detail/elastic_pool.hpp"
#include "server/detail/request_head.hpp"
#include "storage/storage_error.hpp"

namespace kernelscan {

using namespace std::chrono_literals;

namespace {

// A request's line and headers must arrive within this of its first byte. httplib's read timeout
// (30 s) bounds each recv, not the head: one header line every few seconds held a thread for as
// long as the client went on.
constexpr auto k_head_timeout = 10s;
// ... and hold at most this many bytes: httplib caps each line (8 KiB), not their number, so a
// fast client could otherwise send headers for the whole 10 s, all of them kept in memory.
constexpr std::size_t k_max_head_bytes = 64 * 1024;
// ... and at most this many a line, its line ending included: httplib's own cap, checked here
// so that the answer says which limit it was (httplib answers a header line past it with a
// bare 400, and a request line cut off by k_max_head_bytes with nothing at all).
constexpr std::size_t k_max_line_bytes = 8 * 1024;
// A request's body must arrive within k_body_timeout of the end of its head, plus a second for
// every k_min_body_rate bytes it declares. httplib's read timeout bounds each recv: a body sent a
// byte every few seconds held a thread for as long as the client went on.
constexpr auto k_body_timeout = 10s;
constexpr std::uint64_t k_min_body_rate = 64 * 1024;  // bytes per second
// How long an answered connection that declared a body over the limit is drained before it is
// closed (see client_connection::close_gracefully).
constexpr auto k_refused_body_drain = 2s;
// An HTTP thread beyond --http-threads ends after this without a connection to serve.
constexpr auto k_extra_thread_linger = 10s;

// The most HTTP threads there may be while clients are slow: 16 times --http-threads, at most
// 1024, and at most half the open-file limit (each thread holds a connection's socket; the rest
// is left to connections waiting their turn, the store and the workers' pipes).
std::size_t http_thread_cap(std::size_t threads) {
  std::size_t cap = std::min<std::size_t>(16 * threads, 1024);
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    cap = std::min<std::size_t>(cap, files.rlim_cur / 2);
  }
  return std::max(cap, threads);
}

// How many connections may wait for an HTTP thread once there are as many as there may be: as
// many as there may be threads, and at most a quarter of the open-file limit (with the threads'
// half, a quarter is left to the store and the workers' pipes however many clients come).
std::size_t http_waiting_cap(std::size_t cap) {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    cap = std::min<std::size_t>(cap, files.rlim_cur / 4);
  }
  return std::max<std::size_t>(cap, 1);
}

// Set while the accepting thread answers a connection the pool refused (connection_pool).
thread_local bool t_overloaded = false;

// Each connection is one task of httplib's accept loop, run for as long as the connection lasts
// (all its keep-alive requests). A fixed pool of N threads was thus held by N slow or idle
// clients, and everyone else waited in its queue; this one grows while all its threads are busy,
// and past its cap lets only so many connections wait (each holds a socket while it waits).
class connection_pool final : public httplib::TaskQueue {
 public:
  connection_pool(std::size_t threads, std::size_t cap, std::size_t max_waiting)
      : m_pool(threads, cap, k_extra_thread_linger, max_waiting) {}
  void enqueue(std::function<void()> fn) override {
    if (m_pool.post(std::move(fn))) return;
    // Refused, `fn` is whole: the connection is answered 503 here and now (http_server).
    t_overloaded = true;
    fn();
    t_overloaded = false;
  }
  void shutdown() override { m_pool.shutdown(); }

 private:
  detail::elastic_pool m_pool;
};

// httplib's view of a client_connection.
class connection_stream final : public httplib::Stream {
 public:
  explicit connection_stream(detail::client_connection& c) : m_connection(c) {}
  bool is_readable() const override { return m_connection.readable(); }
  bool is_writable() const override { return m_connection.writable(); }
  ssize_t read(char* ptr, size_t size) override { return m_connection.read(ptr, size); }
  ssize_t write(const char* ptr, size_t size) override {
    std::string_view data(ptr, size);
    // httplib writes a response's head in one call and states a length even where RFC 9110
    // forbids one (8.6: never in a 204; in a 304 only the length a 200 would have had, not
    // its own empty body's): "Content-Length: 0" is dropped from those heads.
    constexpr std::string_view k_zero_length = "\r\nContent-Length: 0\r\n";
    if (data.starts_with("HTTP/1.1 204 ") || data.starts_with("HTTP/1.1 304 ")) {
      const auto head_end = data.find("\r\n\r\n");
      const auto at = data.find(k_zero_length);
      if (at != std::string_view::npos && head_end != std::string_view::npos && at < head_end) {
        std::string head(data.substr(0, at + 2));
        head += data.substr(at + k_zero_length.size());
        return write_all(head) ? ssize_t(size) : -1;
      }
    }
    return m_connection.write(ptr, size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    m_connection.peer_address(ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    m_connection.local_address(ip, port);
  }
  socket_t socket() const override { return m_connection.fd(); }

 private:
  bool write_all(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = m_connection.write(data.data(), data.size());
      if (n < 0) return false;
      data.remove_prefix(std::size_t(n));
    }
    return true;
  }

  detail::client_connection& m_connection;
};

// The connection this thread serves, for the error handler (which httplib gives only the request
// and the response) to tell a head cut off by its deadline from a malformed one.
thread_local const detail::client_connection* t_connection = nullptr;
// Set once the answer to the request this thread serves is to end its connection (closes_after).
thread_local bool t_closes = false;

// An error's body as JSON text. Its message may quote what the client sent (a path, a query
// value, a header), bytes that need not be UTF-8: they are written as U+FFFD rather than turning
// a 4xx into a 500 (the JSON writer throws on them by default).
std::string error_text(const json& body) {
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Whether `method` is one the API knows: its routes' methods, and HEAD, which a GET route
// answers without its body. Any other is answered 501; a known method that a path does not
// have is 405, with Allow.
bool implemented_method(const std::string& method) {
  static constexpr std::array<std::string_view, 7> k_methods{"GET",   "HEAD",   "POST",   "PUT",
                                                             "PATCH", "DELETE", "OPTIONS"};
  return std::find(k_methods.begin(), k_methods.end(), method) != k_methods.end();
}

// What a 501 says of `method`.
std::string not_implemented_message(const std::string& method) {
  return "the method \"" + method +
         "\" is not implemented by this server, whose routes take GET, HEAD, POST, PUT, PATCH, "
         "DELETE and OPTIONS (methods are case-sensitive)";
}

// Whether httplib 0.11 reads a request line with `method` (it refuses any other as malformed).
bool httplib_method(const std::string& method) {
  static constexpr std::array<std::string_view, 10> k_methods{
      "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "PRI"};
  return std::find(k_methods.begin(), k_methods.end(), method) != k_methods.end();
}

// Whether two header names, or two options of a header's list, are the same (both are
// case-insensitive).
bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Gives `req` the header values its client sent. httplib percent-decodes every header value as
// it reads it, so that `Content-Length: 1%30` framed a 10-byte body, and a bearer token with
// "%41" matched one with "A"; and it drops a field whose value is empty (`Content-Length:`
// framed no body). `head` is the request's head as sent, which has no flaw (its fields are
// those httplib read, in the same order). The entries httplib adds itself (REMOTE_ADDR and
// the like) are added again. Most heads have neither a '%' nor an empty value, and are left as
// httplib read them, which is as sent.
void restore_sent_fields(httplib::Request& req, const detail::request_head& head) {
  if (!head.httplib_reads_otherwise()) return;
  req.headers.clear();
  for (const auto& [name, value] : head.fields()) {
    req.headers.emplace(std::string(name), std::string(value));
  }
  req.headers.emplace("REMOTE_ADDR", req.remote_addr);
  req.headers.emplace("REMOTE_PORT", std::to_string(req.remote_port));
  req.headers.emplace("LOCAL_ADDR", req.local_addr);
  req.headers.emplace("LOCAL_PORT", std::to_string(req.local_port));
}

// The body length `req`'s Content-Length declares: none where it has none or it is not a whole
// number (which is refused: refused_body), the largest length for a number too large to hold.
std::optional<std::uint64_t> declared_length(const httplib::Request& req) {
  const std::string value = req.get_header_value("Content-Length");
  std::uint64_t length = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
  if (ec == std::errc::result_out_of_range) return std::numeric_limits<std::uint64_t>::max();
  if (ec != std::errc() || end != value.data() + value.size()) return std::nullopt;
  return length;
}

// Why the body of a request is refused before it is read.
struct body_refusal {
  int status;
  std::string type;
  std::string message;
  std::vector<field_error> details;
  std::vector<std::pair<std::string, std::string>> headers = {};
};

// Why the body of `req` is refused before it is read, if it is. 411: it comes with a transfer
// coding (chunked), to which httplib 0.11 applies no limit: it would be read whole, however
// large. 400: its length is not one decimal number: Content-Length given twice (httplib reads
// the first; a proxy in front may have framed the body by the other and taken the rest for
// another request), or not a number (httplib reads "-5" as 2^64 - 5 and "abc" as 0, "+72" as
// 72). 413: it declares a body longer than `limit` (httplib would read, and drop, all of it
// before answering, waiting out its read timeout when the client sends nothing). 415: it comes
// with a content coding (httplib would inflate gzip, deflate or br with no limit on what it
// inflates to, past --max-body-bytes), or as multipart/form-data (which httplib would parse
// into parts no route reads, leaving the body empty); the API's bodies are JSON, sent as is.
//
// Its headers are read as sent (restore_sent_fields), not as httplib decodes them.
std::optional<body_refusal> refused_body(const httplib::Request& req, std::size_t limit) {
  if (req.has_header("Transfer-Encoding")) {
    return body_refusal{411,
                        "length_required",
                        "a request body must be sent with a Content-Length (no chunked transfer)",
                        {}};
  }
  if (const auto given = req.headers.count("Content-Length"); given > 1) {
    const std::string why =
        "is given " + std::to_string(given) + " times; a request has one length";
    return body_refusal{400, "invalid_header", "Content-Length " + why, {{"Content-Length", why}}};
  }
  const std::string value = req.get_header_value("Content-Length");
  if (req.has_header("Content-Length") &&
      (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)) {
    const std::string why = "is not a non-negative decimal integer: \"" + value + "\"";
    return body_refusal{400, "invalid_header", "Content-Length " + why, {{"Content-Length", why}}};
  }
  if (const auto length = declared_length(req).value_or(0); length > limit) {
    return body_refusal{413,
                        "payload_too_large",
                        "request body of " + std::to_string(length) +
                            " bytes exceeds this daemon's limit of " + std::to_string(limit) +
                            " bytes (--max-body-bytes)",
                        {}};
  }
  if (req.has_header("Content-Encoding")) {
    const std::string coding = req.get_header_value("Content-Encoding");
    if (!coding.empty() && !same_name(coding, "identity")) {
      const std::string why = "\"" + coding +
                              "\" is not accepted: the API takes request bodies uncompressed "
                              "(no Content-Encoding, or identity)";
      return body_refusal{415,
                          "unsupported_media_type",
                          "Content-Encoding " + why,
                          {{"Content-Encoding", why}},
                          {{"Accept-Encoding", "identity"}}};
    }
  }
  if (const std::string type = req.get_header_value("Content-Type");
      same_name(std::string_view(type).substr(0, 10), "multipart/")) {
    const std::string why =
        "\"" + type + "\" is not accepted: the API takes JSON bodies (application/json)";
    return body_refusal{
        415, "unsupported_media_type", "Content-Type " + why, {{"Content-Type", why}}};
  }
  return std::nullopt;
}

// Whether what follows the head of `req` (whose body is not refused) on its connection is known
// to be its body and then the next request. Not after a POST, PUT or PATCH without a
// Content-Length: its body is read as empty (RFC 9112 §6.3; `curl -X POST .../cancel` sends no
// length), but a client that sends one so may have sent a body all the same, which must not be
// read as a request. Nor after a body declared on a method whose body httplib does not read
// (GET, HEAD, OPTIONS): the body would be read as the next request.
bool next_request_follows(const httplib::Request& req) {
  const std::string& m = req.method;
  if (m == "POST" || m == "PUT" || m == "PATCH") return req.has_header("Content-Length");
  if (m == "DELETE") return true;  // its body is read by its Content-Length, or empty
  return declared_length(req).value_or(0) == 0;
}

// How long the body of `req`, which is not refused, may take to arrive: k_body_timeout, and a
// second more for every k_min_body_rate bytes its Content-Length declares, up to `limit` (a
// longer one is refused, as is one that is not a number).
std::chrono::seconds body_time(const httplib::Request& req, std::size_t limit) {
  const std::uint64_t length = std::min<std::uint64_t>(
      {declared_length(req).value_or(0), limit, std::uint64_t(1) << 40});  // no overflow
  return k_body_timeout + std::chrono::seconds((length + k_min_body_rate - 1) / k_min_body_rate);
}

// Whether the client of `req` asks that its connection end after the answer, by its Connection
// fields as sent (RFC 9112 §9.3): a `close` option, in any case; for HTTP/1.0, no `keep-alive`
// option. httplib decides on the percent-decoded value ("clos%65" closed) and on the spelling
// "close" alone ("Close" kept the connection), and its answer then said nothing of closing.
bool asks_to_close(const httplib::Request& req) {
  bool close = false, keep_alive = false;
  const auto [first, last] = req.headers.equal_range("Connection");
  for (auto it = first; it != last; ++it) {
    for (const auto option : detail::split_commas(it->second)) {
      close = close || same_name(detail::trim_spaces(option), "close");
      keep_alive = keep_alive || same_name(detail::trim_spaces(option), "keep-alive");
    }
  }
  return close || (req.version == "HTTP/1.0" && !keep_alive);
}

// Makes httplib's answer to `req` say "Connection: close" (it says so where the request's field
// reads "close"). The request is httplib's own non-const object (the handlers' const is only the
// signature's).
void says_close(const httplib::Request& req) {
  auto& r = const_cast<httplib::Request&>(req);
  r.headers.erase("Connection");
  r.headers.emplace("Connection", "close");
}

// Makes the answer to `req` say "Connection: close", and the connection end after it
// (http_server), since what follows on it is not known to be a request.
void closes_after(const httplib::Request& req) {
  says_close(req);
  t_closes = true;
}

// httplib's server with its own connection loop. httplib 0.11's accept loop hands each accepted
// socket to process_and_close_socket(), a virtual (and the only place the socket is seen), whose
// loop (process_server_socket) reads requests through a SocketStream until the keep-alive count,
// "Connection: close", an idle keep-alive timeout or stop(). This is that loop with four changes:
// the head of each request must arrive within k_head_timeout in all, its body within body_time();
// a request whose body is refused (refused_body) is answered and its connection closed without
// reading the body; and a request after which what follows is not known to be a request (a
// malformed head, a body without a length: closes_after) is answered once and its connection
// closed. The parsing, routing and writing of each request stay httplib's (process_request).
class http_server final : public httplib::Server {
 public:
  explicit http_server(std::size_t max_body) : m_max_body(max_body) {}

  // Called for each connection answered 503 for want of a thread.
  std::function<void()> on_overloaded;
  // Called for each request answered 414 because its request line was too long.
  std::function<void()> on_request_line_too_long;

  // Serves `sock` as a thread of the pool serves an accepted connection.
  void serve(socket_t sock) { process_and_close_socket(sock); }

  // Accepts connections on the bound socket and hands each to the pool, until halt(). It
  // replaces httplib 0.11's loop (listen_after_bind), which closed the listening socket and
  // returned on any error of accept() but EMFILE: Linux's accept() passes a new connection's
  // pending network error (ENETUNREACH, EHOSTUNREACH, EPROTO, ...) and ECONNABORTED, so one
  // client's ICMP error or abort left the daemon running its jobs without its API. Here such
  // errors are the connection's; want of descriptors or memory pauses accepting for 10 ms.
  // False where the listening socket failed other than by halt().
  bool accept_loop() {
    std::unique_ptr<httplib::TaskQueue> pool(new_task_queue());
    bool ok = true;
    auto last_report = std::chrono::steady_clock::time_point{};
    while (!m_halted) {
      const socket_t listener = svr_sock_;
      if (listener == INVALID_SOCKET) break;
      pollfd ready{listener, POLLIN, 0};
      if (::poll(&ready, 1, 100) <= 0) continue;  // halt() is seen within 100 ms
      const socket_t sock = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (sock == INVALID_SOCKET) {
        const int err = errno;
        const auto action = detail::classify_accept_error(err);
        if (action == detail::accept_failure::retry) continue;
        if (m_halted) break;
        if (action == detail::accept_failure::stop) {
          spdlog::error("HTTP: cannot accept connections: {}", std::strerror(err));
          ok = false;
          break;
        }
        const auto now = std::chrono::steady_clock::now();
        if (now - last_report > std::chrono::seconds(10)) {
          spdlog::warn("HTTP: cannot accept a connection for now ({}); retrying",
                       std::strerror(err));
          last_report = now;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      pool->enqueue([this, sock] { process_and_close_socket(sock); });
    }
    pool->shutdown();
    return ok;
  }

  // Ends accept_loop() and, through svr_sock_, every connection's loop (httplib's stop() does
  // this only where its own loop runs).
  void halt() {
    m_halted = true;
    const socket_t sock = svr_sock_.exchange(INVALID_SOCKET);
    if (sock != INVALID_SOCKET) {
      ::shutdown(sock, SHUT_RDWR);
      ::close(sock);
    }
  }

  // httplib 0.11 listens with a backlog of 5 connections not yet accepted: a burst of clients
  // connecting at once (an agent loop's parallel evaluators) overflowed it, and the kernel
  // dropped their SYNs, each retried after a second. listen() again sets the backlog.
  void widen_backlog() {
    if (svr_sock_ != INVALID_SOCKET && ::listen(svr_sock_, SOMAXCONN) != 0) {
      spdlog::warn("HTTP: cannot widen the listen backlog: {}", std::strerror(errno));
    }
  }

 private:
  bool process_and_close_socket(socket_t sock) override {
    if (t_overloaded) {
      answer_overloaded(sock);
      return false;
    }
    detail::client_connection connection(
        sock,
        {.read = std::chrono::seconds(read_timeout_sec_) +
                 std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::microseconds(read_timeout_usec_)),
         .write = std::chrono::seconds(write_timeout_sec_) +
                  std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::microseconds(write_timeout_usec_)),
         .idle = std::chrono::seconds(keep_alive_timeout_sec_)},
        [this] { return svr_sock_ == INVALID_SOCKET; });
    connection_stream stream(connection);
    struct serving {
      explicit serving(const detail::client_connection& c) { t_connection = &c; }
      ~serving() { t_connection = nullptr; }
    } serving_this(connection);
    bool ok = false;
    for (std::size_t left = keep_alive_max_count_;
         left > 0 && svr_sock_ != INVALID_SOCKET && connection.wait_for_request(); --left) {
      connection.start_head(detail::client_connection::clock::now() + k_head_timeout,
                            k_max_head_bytes, k_max_line_bytes);
      bool closed = false;
      t_closes = false;
      ok = process_request(stream, left == 1, closed, [&](httplib::Request& req) {
        connection.end_head();
        restore_sent_fields(req, connection.head());
        // httplib has decided whether to close from the fields as it read them: decided again
        // from them as sent, and an answer after which the connection ends says so.
        closed = asks_to_close(req);
        if (closed) says_close(req);
        if (!implemented_method(req.method) || refused_body(req, m_max_body)) {
          // Answered before the body (see configure()); then the connection ends, as what
          // follows on it is the body (or, for a method the API does not implement, is not
          // known to be a request), not a request.
          closes_after(req);
          return;
        }
        if (!next_request_follows(req)) closes_after(req);
        connection.start_body(detail::client_connection::clock::now() + body_time(req, m_max_body));
      });
      // httplib reads no request whose request line is too long, and answers nothing.
      if (connection.request_line_too_long()) answer_request_line_too_long(stream);
      if (connection.answer_timed_out()) {
        std::string ip;
        int port = 0;
        connection.peer_address(ip, port);
        spdlog::info("HTTP: {}:{} took its answer too slowly; the connection is closed", ip, port);
      }
      if (connection.head_timed_out() || connection.abandoned()) break;
      // What follows on the connection is a body, the rest of a head or body, or not known to
      // be a request; it is drained so that closing does not reset the answer away.
      if (t_closes || connection.head_too_large() || connection.body_timed_out()) {
        connection.close_gracefully(k_refused_body_drain);
        break;
      }
      if (!ok || closed) break;
    }
    return ok;
  }

  // Answers 414 for a request whose request line ran past k_max_line_bytes, of which httplib
  // has read nothing (it answers a request line too long for its buffer with nothing at all).
  void answer_request_line_too_long(httplib::Stream& stream) {
    static const std::string k_answer = [] {
      const std::string body =
          error_text(error_body("uri_too_long", "the request line takes more than " +
                                                    std::to_string(k_max_line_bytes) + " bytes"));
      return "HTTP/1.1 414 URI Too Long\r\nContent-Type: application/json\r\n"
             "Connection: close\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body;
    }();
    for (std::size_t sent = 0; sent < k_answer.size();) {
      const ssize_t n = stream.write(k_answer.data() + sent, k_answer.size() - sent);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    if (on_request_line_too_long) on_request_line_too_long();
  }

  // Answers a connection no thread can take with 503, without waiting for its request or for
  // room to send (the accepting thread does this), and closes it. What the client has sent by
  // then is read and dropped, so that closing does not reset the answer away.
  void answer_overloaded(socket_t sock) {
    static const std::string k_answer = [] {
      const std::string body =
          R"({"error":{"type":"overloaded","message":"every HTTP thread is busy and as many )"
          R"(connections as may wait are waiting; retry later"}})";
      return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
             "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body;
    }();
    (void)::send(sock, k_answer.data(), k_answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    ::shutdown(sock, SHUT_WR);
    std::array<char, 4096> dropped;
    while (::recv(sock, dropped.data(), dropped.size(), MSG_DONTWAIT) > 0) {
    }
    ::close(sock);
    if (on_overloaded) on_overloaded();
  }

  std::size_t m_max_body;
  std::atomic<bool> m_halted{false};
};

}  // namespace

bool etag_matches(const std::string& header, std::string_view etag) {
  if (header.empty()) return false;
  for (auto tag : detail::split_commas(header)) {
    tag = detail::trim_spaces(tag);
    if (tag.rfind("W/", 0) == 0) tag.remove_prefix(2);
    if (tag == "*" || tag == etag) return true;
  }
  return false;
}

bool accepts_gzip(const std::string& header) {
  for (auto item : detail::split_commas(header)) {
    item = detail::trim_spaces(item);
    const auto semi = item.find(';');
    if (detail::trim_spaces(item.substr(0, semi)) != "gzip") continue;
    if (semi == std::string_view::npos) return true;
    auto q = detail::trim_spaces(item.substr(semi + 1));
    return !(q.rfind("q=0", 0) == 0 && q.find_first_not_of("0.", 2) == std::string_view::npos);
  }
  return false;
}

response text_response(int status, std::string body) {
  response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

response json_response(int status, const json& j) {
  response r;
  r.status = status;
  r.body = j.dump();
  return r;
}

std::optional<std::string> query_value(const request& req, const std::string& key) {
  auto it = req.query.find(key);
  if (it == req.query.end()) return std::nullopt;
  return it->second;
}

api_error bad_parameter(const std::string& name, const std::string& why) {
  return api_error(400, "invalid_parameter", name + ": " + why, {{name, why}});
}

std::int64_t int_param(const request& req, const std::string& name, std::int64_t lo,
                       std::int64_t hi, std::int64_t fallback) {
  auto v = query_value(req, name);
  if (!v) return fallback;
  std::int64_t out = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || end != v->data() + v->size()) {
    throw bad_parameter(name, "\"" + *v + "\" is not an integer");
  }
  if (out < lo || out > hi) {
    throw bad_parameter(name,
                        "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  }
  return out;
}

bool match_route(std::string_view templ, std::string_view path,
                 std::vector<std::string>& captures) {
  captures.clear();
  while (!templ.empty() || !path.empty()) {
    if (templ.empty() || path.empty() || templ[0] != '/' || path[0] != '/') return false;
    templ.remove_prefix(1);
    path.remove_prefix(1);
    const auto t_end = std::min(templ.find('/'), templ.size());
    const auto p_end = std::min(path.find('/'), path.size());
    const auto t_seg = templ.substr(0, t_end), p_seg = path.substr(0, p_end);
    if (!t_seg.empty() && t_seg.front() == '{') {
      if (p_seg.empty()) return false;
      captures.emplace_back(p_seg);
    } else if (t_seg != p_seg) {
      return false;
    }
    templ.remove_prefix(t_end);
    path.remove_prefix(p_end);
  }
  return true;
}

struct http_transport::impl {
  impl(std::vector<http_route> r, access_control& a, http_metrics& m, const serve_config& c)
      : routes(std::move(r)), access(a), requests(m), config(c) {}

  std::vector<http_route> routes;
  access_control& access;
  http_metrics& requests;
  serve_config config;
  http_server server{config.max_body_bytes};

  static void send(const response& r, httplib::Response& res) {
    res.status = r.status;
    for (const auto& [k, v] : r.headers)
      res.set_header(k.c_str(), v.c_str());
    if (r.stream) {
      auto stream = r.stream;
      // httplib calls the provider after the status line is out and outside its exception
      // handler: a throw here would end the process. A stream that fails (a page the store
      // cannot read) ends the response unfinished instead, which the client sees as cut off.
      res.set_chunked_content_provider(
          r.content_type, [stream](std::size_t, httplib::DataSink& sink) {
            std::string chunk;
            try {
              while (chunk.empty()) {
                if (!stream(chunk)) {
                  sink.done();
                  return true;
                }
              }
            } catch (const std::exception& e) {
              spdlog::error("a streamed response ended unfinished: {}", e.what());
              return false;
            }
            return sink.write(chunk.data(), chunk.size());
          });
    } else if (!r.content_type.empty()) {
      res.set_content(r.body, r.content_type.c_str());
    }
  }

  // Answers `req` if it is refused before its body is read: a method the API does not
  // implement (501), a body refused unread (refused_body). True if it is.
  bool refuse_unread(const httplib::Request& req, httplib::Response& res) {
    if (!implemented_method(req.method)) {
      send_error(501, "not_implemented", not_implemented_message(req.method), res);
      observe_unrouted(req.method, 501);
      return true;
    }
    const auto refusal = refused_body(req, config.max_body_bytes);
    if (!refusal) return false;
    for (const auto& [name, value] : refusal->headers)
      res.set_header(name, value);
    send_error(refusal->status, refusal->type, refusal->message, res, refusal->details);
    observe_unrouted(req.method, refusal->status);
    return true;
  }

  static void send_error(int status, const std::string& type, const std::string& message,
                         httplib::Response& res, const std::vector<field_error>& details = {}) {
    res.status = status;
    res.set_content(error_text(error_body(type, message, details)), "application/json");
  }

  // A request answered before any route saw it (a head cut off or too large, a body refused
  // unread, a malformed request), counted under the route "unrouted" with its method where it
  // is one the API knows, else "other": what a malformed request calls its method is no label.
  void observe_unrouted(const std::string& method, int status) {
    requests.observe(implemented_method(method) ? std::string_view(method) : "other", "unrouted",
                     status, 0);
  }

  // Every request comes here: find its route, or answer 404, or 405 with Allow.
  void route_request(const httplib::Request& hreq, httplib::Response& res) {
    const auto started = std::chrono::steady_clock::now();
    const std::string_view templ = handle(hreq, res);
    requests.observe(
        hreq.method, templ, res.status,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }

  // Routes, checks access, and answers; returns the route template (for metrics).
  std::string_view handle(const httplib::Request& hreq, httplib::Response& res) {
    const std::string origin = access.allowed_origin(hreq.get_header_value("Origin"));
    if (!origin.empty()) {
      res.set_header("Access-Control-Allow-Origin", origin);
      res.set_header("Vary", "Origin");
    }
    std::vector<std::string> captures;
    std::string allow;
    const http_route* found = nullptr;
    std::string_view templ = "unmatched";
    // HEAD is a GET whose body is not sent (httplib leaves it out).
    const auto serves = [&](const http_route& r, const std::string& method) {
      return r.method == method || (method == "HEAD" && r.method == "GET" && r.head);
    };
    for (const auto& r : routes) {
      if (!match_route(r.path, hreq.path, captures)) continue;
      templ = r.path;
      if (serves(r, hreq.method)) {
        found = &r;
        break;
      }
      for (const std::string& method : {r.method, std::string("HEAD")}) {
        if (serves(r, method) && allow.find(method) == std::string::npos)
          allow += (allow.empty() ? "" : ", ") + method;
      }
    }
    if (!found) {
      if (!allow.empty() && hreq.method == "OPTIONS" && access.cors_enabled()) {
        // A CORS preflight.
        res.status = 204;
        res.set_header("Access-Control-Allow-Methods", allow);
        res.set_header("Access-Control-Allow-Headers",
                       "Content-Type, Authorization, Idempotency-Key");
        res.set_header("Access-Control-Max-Age", "600");
      } else if (!allow.empty()) {
        res.set_header("Allow", allow);
        send_error(405, "method_not_allowed",
                   hreq.method + " is not allowed on " + hreq.path + " (allowed: " + allow + ")",
                   res);
      } else {
        send_error(404, "not_found", "no route " + hreq.method + " " + hreq.path, res);
      }
      return templ;
    }
    if (needs_token(*found) && !access.authorized(hreq.get_header_value("Authorization"))) {
      res.set_header("WWW-Authenticate", R"(Bearer realm="kernelscan")");
      send_error(401, "unauthorized",
                 hreq.has_header("Authorization")
                     ? "the bearer token is not valid"
                     : "this request needs an Authorization: Bearer <token> header",
                 res);
      return templ;
    }
    const bool operator_access = access.is_operator(hreq.get_header_value("Authorization"));
    if (found->access == route_access::operate && !operator_access) {
      send_error(403, "forbidden",
                 "this request needs an operator token (the daemon's --operator-token-file): "
                 "defining and retiring tasks and confirming withheld scores are an operator's",
                 res);
      return templ;
    }
    if (found->access == route_access::submit) {
      if (const auto wait =
              access.take_submission(hreq.remote_addr, std::chrono::steady_clock::now())) {
        const int seconds = std::max(1, int(std::ceil(*wait)));
        res.set_header("Retry-After", std::to_string(seconds));
        send_error(429, "rate_limited",
                   "too many job submissions from " + hreq.remote_addr + " (limit " +
                       std::to_string(int(config.rate_limit)) + " per minute); retry in " +
                       std::to_string(seconds) + " s",
                   res);
        return templ;
      }
    }
    dispatch(*found, std::move(captures), operator_access, hreq, res);
    return templ;
  }

  // Writes need a token when tokens are configured; reads only with --auth-reads; health
  // probes and the page's static files never (they carry no data).
  bool needs_token(const http_route& r) const {
    if (!access.tokens_configured()) return false;
    if (r.access == route_access::open) return false;
    if (r.access == route_access::read) return access.reads_need_token();
    return true;
  }

  void dispatch(const http_route& route, std::vector<std::string> captures, bool operator_access,
                const httplib::Request& hreq, httplib::Response& res) {
    request req;
    req.method = hreq.method;
    req.path = hreq.path;
    req.captures = std::move(captures);
    req.query.insert(hreq.params.begin(), hreq.params.end());
    req.header = [&hreq](const std::string& name) { return hreq.get_header_value(name.c_str()); };
    req.body = hreq.body;
    req.operator_access = operator_access;
    req.operator_token = operator_access && access.operators_configured();
    req.agent = [this, &hreq] {
      return access.agent_of(hreq.get_header_value("Authorization"), hreq.remote_addr);
    };
    req.hung_up = [] { return t_connection && t_connection->hung_up(); };
    try {
      send(route.handler(req), res);
      // A body that is already encoded (a precompressed asset): httplib would compress it
      // again, as it decides by content type and Accept-Encoding alone. The request is
      // httplib's own non-const object (see configure()).
      if (res.has_header("Content-Encoding")) {
        const_cast<httplib::Request&>(hreq).headers.erase("Accept-Encoding");
      }
    } catch (const api_error& e) {
      res.status = e.status();
      // An error that says when to come back (`retry_after_s`) says it in the header too.
      if (const auto after = e.context().find("retry_after_s");
          after != e.context().end() && after->is_number()) {
        res.set_header("Retry-After", std::to_string(std::max<std::int64_t>(
                                          1, std::int64_t(std::ceil(after->get<double>())))));
      }
      res.set_content(error_text(e.body()), "application/json");
    } catch (const validation_error& e) {
      send_error(422, "invalid_spec", e.what(), res, e.errors());
    } catch (const json_syntax_error& e) {
      send_error(400, "invalid_json", e.what(), res);
    } catch (const storage_error& e) {
      spdlog::error("{} {}: storage: {}", hreq.method, hreq.path, e.what());
      if (e.unavailable()) {
        res.set_header("Retry-After", "5");
        send_error(503, "storage_unavailable", std::string("storage is unavailable: ") + e.what(),
                   res);
      } else {
        send_error(500, "internal", std::string("storage error: ") + e.what(), res);
      }
    } catch (const std::exception& e) {
      spdlog::error("{} {}: {}", hreq.method, hreq.path, e.what());
      send_error(500, "internal", e.what(), res);
    }
  }

  void configure() {
    server.new_task_queue = [n = std::size_t(config.http_threads)] {
      const std::size_t cap = http_thread_cap(n);
      const std::size_t waiting = http_waiting_cap(cap);
      spdlog::info(
          "HTTP: {} threads, growing to at most {} while clients are slow; then at most {} "
          "connections wait for one (503 past that)",
          n, cap, waiting);
      return new connection_pool(n, cap, waiting);
    };
    server.on_overloaded = [this] { observe_unrouted("other", 503); };
    server.on_request_line_too_long = [this] { observe_unrouted("other", 414); };
    // httplib's default options set SO_REUSEPORT, with which a second daemon started on the same
    // address binds it too, and the kernel shares the connections out between the two.
    // SO_REUSEADDR alone lets a restarted daemon bind while its last connections are in
    // TIME_WAIT, and a second one fail to start.
    server.set_socket_options([](socket_t sock) {
      const int yes = 1;
      if (::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes) != 0) {
        spdlog::warn("HTTP: cannot set SO_REUSEADDR: {}", std::strerror(errno));
      }
    });
    server.set_payload_max_length(config.max_body_bytes);
    server.set_keep_alive_max_count(1000);
    // Headers and body go out in separate writes; with Nagle's algorithm and delayed ACKs each
    // keep-alive request would stall ~40 ms (measured: 46 req/s instead of thousands).
    server.set_tcp_nodelay(true);
    server.set_read_timeout(30s);
    server.set_write_timeout(30s);
    // `curl -d @job.json` labels its body application/x-www-form-urlencoded, which httplib caps at
    // 8 KB and parses as a form. The API only takes JSON, so such a body is read as JSON. The
    // request is httplib's own non-const object (the handler type is const only by signature).
    //
    // httplib answers "Accept-Encoding: br" with brotli at its slowest setting (quality 11): a
    // 10,000-point result set took 15 s to compress instead of 0.3 s to send. Browsers always
    // offer br, so "br" is dropped from what the client accepts and gzip (level 6) serves them.
    //
    // A request with neither Content-Length nor Transfer-Encoding has an empty body (RFC 9112
    // §6.3: only a response is read until the connection closes). httplib 0.11 reads such a
    // POST until the connection closes instead, so `curl -X POST .../cancel`, which keeps the
    // connection open, waited out the read timeout and got 400. The pre-routing handler runs
    // before httplib reads the body, so the body's length is stated here. Whether a body was
    // sent all the same cannot be told without waiting for one, so the connection of a POST,
    // PUT or PATCH without a length ends after its answer (next_request_follows), and what the
    // client sent after its head is never read as a request.
    //
    // A request whose body is refused unread (refused_body: a body declared over
    // --max-body-bytes, a Content-Length given twice or not a number, a chunked body) is
    // answered here, before httplib would read the body (the connection then closes:
    // http_server). With "Expect: 100-continue" it is answered instead of "100 Continue", so the
    // client never sends the body.
    server.set_expect_100_continue_handler(
        [this](const httplib::Request& req, httplib::Response& res) {
          // httplib answers with the response as it is.
          return refuse_unread(req, res) ? res.status : 100;
        });
    server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (refuse_unread(req, res)) return httplib::Server::HandlerResponse::Handled;
      auto& r = const_cast<httplib::Request&>(req);
      if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding")) {
        r.headers.emplace("Content-Length", "0");
      }
      if (req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0) {
        r.headers.erase("Content-Type");
        r.headers.emplace("Content-Type", "application/json");
      }
      if (const auto accepted = req.get_header_value("Accept-Encoding");
          accepted.find("br") != std::string::npos) {
        std::string kept;
        for (auto item : detail::split_commas(accepted)) {
          item = detail::trim_spaces(item);
          if (item.empty() || item.rfind("br", 0) == 0) continue;
          if (!kept.empty()) kept += ", ";
          kept += item;
        }
        r.headers.erase("Accept-Encoding");
        r.headers.emplace("Accept-Encoding", kept);
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    const auto all = [this](const httplib::Request& req, httplib::Response& res) {
      route_request(req, res);
    };
    server.Get(".*", all);
    server.Post(".*", all);
    server.Put(".*", all);
    server.Patch(".*", all);
    server.Delete(".*", all);
    server.Options(".*", all);
    httplib::Server::HandlerWithResponse on_error = [this](const httplib::Request& req,
                                                           httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      // httplib answers by itself only a request it could not read whole (a malformed or cut
      // off head, a body it could not read): what follows on the connection is not known to be
      // a request (the rest of this head or body, or anything), so it ends after this answer.
      closes_after(req);
      if (res.status == 400 && t_connection && t_connection->head_timed_out()) {
        send_error(408, "request_timeout",
                   "the request line and headers did not arrive within " +
                       std::to_string(k_head_timeout.count()) + " s",
                   res);
      } else if (res.status == 400 && t_connection && t_connection->body_timed_out()) {
        send_error(408, "request_timeout",
                   "the request body did not arrive within " +
                       std::to_string(body_time(req, config.max_body_bytes).count()) + " s (" +
                       std::to_string(k_body_timeout.count()) + " s and 1 s per " +
                       std::to_string(k_min_body_rate / 1024) + " KiB it declares)",
                   res);
      } else if (res.status == 400 && t_connection && t_connection->header_line_too_long()) {
        send_error(431, "header_fields_too_large",
                   "a header line takes more than " + std::to_string(k_max_line_bytes) + " bytes",
                   res);
      } else if (res.status == 400 && t_connection && t_connection->head_too_large()) {
        send_error(431, "header_fields_too_large",
                   "the request line and headers take more than " +
                       std::to_string(k_max_head_bytes / 1024) + " KiB",
                   res);
      } else if (res.status == 400 && t_connection &&
                 t_connection->head().first_flaw() != detail::request_head::flaw::none) {
        send_error(400, "bad_request", t_connection->head().describe_flaw(), res);
      } else if (res.status == 400 && detail::is_token(req.method) && !httplib_method(req.method) &&
                 (req.version == "HTTP/1.1" || req.version == "HTTP/1.0")) {
        // httplib refuses a request line whose method is not one it knows (a lower-case one,
        // an extension method) before it reads the headers, as malformed.
        send_error(501, "not_implemented", not_implemented_message(req.method), res);
      } else if (res.status == 404) {
        send_error(404, "not_found", "no route " + req.method + " " + req.path, res);
      } else if (res.status == 400) {
        send_error(400, "bad_request", "malformed HTTP request", res);
      } else {
        send_error(res.status, "http_error", "HTTP " + std::to_string(res.status), res);
      }
      observe_unrouted(req.method, res.status);
      return httplib::Server::HandlerResponse::Handled;
    };
    server.set_error_handler(std::move(on_error));
    server.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "unknown error";
          try {
            std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          send_error(500, "internal", what, res);
        });
    server.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      spdlog::debug("{} {} -> {}", req.method, req.path, res.status);
    });
  }
};

http_transport::http_transport(std::vector<http_route> routes, access_control& access,
                               http_metrics& metrics, const serve_config& config)
    : m_impl(std::make_unique<impl>(std::move(routes), access, metrics, config)) {
  m_impl->configure();
}

http_transport::~http_transport() = default;

int http_transport::bind(const std::string& host, int port) {
  errno = 0;
  const int bound = port == 0 ? m_impl->server.bind_to_any_port(host)
                              : (m_impl->server.bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    // httplib reports no reason; errno is still bind(2)'s or listen(2)'s, where one failed.
    const int err = errno;
    const std::string where = "cannot listen on " + host + ":" + std::to_string(port);
    if (err == EADDRINUSE) {
      throw std::runtime_error(where +
                               ": address already in use (is another kernelscan, or "
                               "another server, listening there?)");
    }
    throw std::runtime_error(where + ": " +
                             (err ? std::strerror(err) : "the address cannot be resolved"));
  }
  m_impl->server.widen_backlog();
  return bound;
}

void http_transport::serve_connection(int fd) {
  m_impl->server.serve(fd);
}

bool http_transport::run() {
  return m_impl->server.accept_loop();
}

void http_transport::stop() {
  m_impl->server.halt();
}

}  // namespace kernelscan
