#pragma once
// One accepted connection of the HTTP server, read and written the way httplib's request parser
// needs (http_transport adapts it to httplib::Stream):
// - reads are buffered, because httplib reads a request's line and headers one byte at a time;
// - each read waits at most the read timeout, and while a request's head or body is being read
//   (start_head() to end_head(), start_body() to the next request) never past its deadline, so
//   that a client trickling its headers or its body holds the thread serving it until that
//   deadline and no longer;
// - each write waits at most the write timeout, and fails once the client has closed; and the
//   writes of one request's answer wait for the client, in all, at most `answer_wait` and a
//   second more per `answer_rate` bytes written, so that a client taking its answer a few bytes at
//   a time holds the thread for seconds, not hours (an event stream whose client keeps up never
//   waits).
//
// Ownership: owns the socket; the destructor shuts it down and closes it. Threading: one thread at
// a time (the one serving the connection), which also calls `stopping`.

#include <sys/socket.h>
#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>

#include "server/detail/request_head.hpp"

namespace kernelscan::detail {

class client_connection {
 public:
  using clock = std::chrono::steady_clock;
  struct timeouts {
    std::chrono::milliseconds read{30000};         // each read
    std::chrono::milliseconds write{30000};        // each write
    std::chrono::milliseconds idle{5000};          // waiting for the next request
    std::chrono::milliseconds answer_wait{10000};  // the writes of an answer, waiting in all
    std::uint64_t answer_rate = 64 * 1024;         // ... a second more per this many bytes
  };

  // `stopping` is asked while no request is under way (waiting for one, or reading its head or
  // body: a request is taken only once all of it is here); once it says true, the connection is
  // abandoned at once rather than after its timeouts.
  client_connection(int fd, timeouts t, std::function<bool()> stopping);
  ~client_connection();
  client_connection(const client_connection&) = delete;
  client_connection& operator=(const client_connection&) = delete;

  int fd() const { return m_fd; }

  // Waits for the next request: true once a byte of it is here, or the client closed (which the
  // next read reports); false after the idle timeout, or when stopping.
  bool wait_for_request();

  // A request's head begins (its first byte is here) and must end by `deadline`, within
  // `max_bytes` in all and `max_line` bytes a line, its line feed included (httplib caps each
  // line, not their number, and its read of a request line cut by the head's bytes answers
  // nothing). Its bytes are kept and checked as they are read (head()): once it has a flaw,
  // the read that would begin its next line fails, so that httplib, which would skip or
  // misread the flawed line, reads no further and answers 400 (a line of it ends first, so
  // that a request line httplib can parse is answered too).
  void start_head(clock::time_point deadline,
                  std::size_t max_bytes = std::numeric_limits<std::size_t>::max(),
                  std::size_t max_line = std::numeric_limits<std::size_t>::max());
  void end_head();
  // The head is being read: start_head() was called and end_head() not yet.
  bool reading_head() const { return m_reading == part::head; }
  // A request's body begins (its head has been read) and must end by `deadline`. The deadline
  // holds until the next request's wait or head.
  void start_body(clock::time_point deadline);
  // A write failed because the answer's writes had waited for the client as long as they may.
  bool answer_timed_out() const { return m_answer_timed_out; }
  // A read failed because the head's deadline passed.
  bool head_timed_out() const { return m_timed_out == part::head; }
  // A read failed because the body's deadline passed.
  bool body_timed_out() const { return m_timed_out == part::body; }
  // A read failed because the head ran past its bytes, or one of its lines past its own.
  bool head_too_large() const { return m_head_too_large != too_large::no; }
  // ... because the request line (the head's first line) ran past a line's bytes.
  bool request_line_too_long() const { return m_head_too_large == too_large::request_line; }
  // ... because a header line ran past a line's bytes.
  bool header_line_too_long() const { return m_head_too_large == too_large::header_line; }
  // The bytes of the head being read, or of the last one, as sent, and its first flaw.
  const request_head& head() const { return m_head; }
  // The server stopped while the head was being read: reads and writes fail from then on.
  bool abandoned() const { return m_abandoned; }

  // As recv(2): bytes read, 0 at the end of the stream, -1 on an error or a timeout.
  ssize_t read(char* out, std::size_t size);
  // As send(2), once there is room; -1 when the client has closed or the timeout passed.
  ssize_t write(const char* data, std::size_t size);
  // Input is buffered, or arrives within the read timeout.
  bool readable() const;
  // The client has closed its side or the connection is gone, as far as can be told now
  // without waiting or reading: a streamed answer (the event stream, idle between events)
  // ends then rather than at its next write.
  bool hung_up() const;
  // There is room to write within the write timeout and what is left of the answer's wait, and
  // the client has not closed.
  bool writable();

  // The numeric address and port of each end; left as they are where there is none.
  void peer_address(std::string& ip, int& port) const;
  void local_address(std::string& ip, int& port) const;

  // Ends the connection without resetting it: sends FIN, then reads and drops what the client
  // still sends until it closes or `limit` passes. Closing a socket with unread input makes the
  // kernel send RST, which can destroy an answer the client has not read yet (a 413 sent before
  // the body it refuses).
  void close_gracefully(std::chrono::milliseconds limit);

 private:
  enum class waited { ready, timeout, stopped, failed };
  // The part of a request being read, which has a deadline.
  enum class part { none, head, body };
  // Which of the head's limits a read ran past.
  enum class too_large { no, head, request_line, header_line };
  // read() without the head's byte limit.
  ssize_t read_some(char* out, std::size_t size);
  // One recv(2) with `flags`, into the caller's buffer or through m_buffer.
  ssize_t receive(char* out, std::size_t size, int flags);
  // Waits for room to write, within the write timeout and what is left of the answer's wait.
  bool wait_for_room();
  // Waits for `events` until `until`; when `stoppable`, in slices that ask `stopping` between.
  waited wait(short events, clock::time_point until, bool stoppable) const;

  int m_fd;
  timeouts m_timeouts;
  std::function<bool()> m_stopping;
  part m_reading = part::none;
  clock::time_point m_deadline{};  // of m_reading
  part m_timed_out = part::none;   // whose deadline a read ran past
  // The answer to the current request: bytes written, and how long writes waited for room.
  std::uint64_t m_answer_bytes = 0;
  clock::duration m_answer_waited{};
  bool m_answer_timed_out = false;
  std::size_t m_head_left = 0;  // bytes the head may still take
  std::size_t m_max_line = 0;   // bytes a line of the head may take, its line feed included
  std::size_t m_line = 0;       // bytes of the head's current line read so far
  bool m_first_line = false;    // the current line is the request line
  too_large m_head_too_large = too_large::no;
  request_head m_head;
  bool m_abandoned = false;
  struct address {
    std::string ip;
    int port = -1;  // none known
  };
  mutable std::optional<address> m_peer, m_local;  // asked of the socket once
  // `known`, asked of the socket with `ask` (getpeername, getsockname) the first time.
  void known_address(std::optional<address>& known, int (*ask)(int, sockaddr*, socklen_t*),
                     std::string& ip, int& port) const;
  std::array<char, 4096> m_buffer{};
  std::size_t m_begin = 0, m_end = 0;  // the buffered input not yet read
};

// What the accepting thread does after accept() failed with `err`.
enum class accept_failure {
  retry,  // the connection's own failure (Linux passes its pending network error, or an abort)
  pause,  // want of descriptors or memory: wait a little, and accept again
  stop,   // the listening socket is gone (closed by stop()) or unusable
};
accept_failure classify_accept_error(int err);

}  // namespace kernelscan::detail
