#pragma once
// A thin layer over libpq for the PostgreSQL store: a connection that runs parameterised
// statements (prepared once per connection and reused), results read by row and column, a
// transaction guard that rolls back unless committed, and a pool of connections shared by
// threads. Values travel in PostgreSQL's text format.
//
// Errors are storage_error: unavailable() for what a retry may cure (the server is down,
// restarting, out of connections or disk, a lost connection, a serialisation conflict), not for
// a statement the server refuses (a bug). Messages never carry the connection string.
//
// Threading: a pg_connection is used by one thread at a time; pg_pool is thread-safe.

#include <libpq-fe.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/storage_error.hpp"

namespace kernelscan::detail {

// One argument of a statement, as text; an empty optional is SQL NULL.
class pg_param {
 public:
  pg_param(std::nullptr_t) {}
  pg_param(std::int64_t v) : m_text(std::to_string(v)) {}
  pg_param(int v) : m_text(std::to_string(v)) {}
  pg_param(std::uint64_t v) : m_text(std::to_string(v)) {}
  pg_param(double v);
  pg_param(bool v) : m_text(v ? "t" : "f") {}
  pg_param(std::string_view v) : m_text(std::string(v)) {}
  pg_param(const std::string& v) : m_text(v) {}
  pg_param(const char* v) : m_text(std::string(v)) {}
  template <class T>
  pg_param(const std::optional<T>& v) {
    if (v) m_text = pg_param(*v).m_text;
  }
  const std::optional<std::string>& text() const { return m_text; }

 private:
  std::optional<std::string> m_text;
};

// A one-dimensional array literal ({"a","b",NULL}) for a text[], bigint[], float8[] or
// boolean[] parameter, each element quoted and escaped.
std::string pg_array(std::span<const pg_param> elements);

class pg_result {
 public:
  explicit pg_result(PGresult* r) : m_res(r) {}
  pg_result(pg_result&& o) noexcept : m_res(o.m_res) { o.m_res = nullptr; }
  pg_result(const pg_result&) = delete;
  pg_result& operator=(const pg_result&) = delete;
  ~pg_result();

  int rows() const;
  // Rows an INSERT, UPDATE or DELETE touched.
  std::int64_t affected() const;
  bool is_null(int row, int column) const;
  std::string_view text(int row, int column) const;
  std::int64_t int64(int row, int column) const;
  double real(int row, int column) const;
  bool boolean(int row, int column) const;
  std::optional<std::int64_t> opt_int64(int row, int column) const;
  std::optional<double> opt_real(int row, int column) const;
  std::optional<std::string> opt_text(int row, int column) const;

 private:
  PGresult* m_res;
};

struct pg_notification {
  std::string channel;
  std::string payload;
};

class pg_connection {
 public:
  // Connects with libpq's keywords and values (see pg_pool). Throws storage_error
  // (unavailable) when the server cannot be reached or refuses the login.
  pg_connection(const std::vector<std::pair<std::string, std::string>>& settings);
  pg_connection(const pg_connection&) = delete;
  pg_connection& operator=(const pg_connection&) = delete;
  ~pg_connection();

  // Runs one statement with $1.. parameters; prepared on this connection the first time.
  pg_result exec(const std::string& sql, std::span<const pg_param> params);
  pg_result exec(const std::string& sql, std::initializer_list<pg_param> params = {}) {
    return exec(sql, std::span<const pg_param>(params.begin(), params.size()));
  }
  // Runs one or more statements without parameters, unprepared (migrations, BEGIN, LISTEN).
  void exec_script(const std::string& sql);

  // False once the connection is lost; it is then discarded.
  bool ok() const;
  int socket() const;
  // Reads whatever the server has sent without waiting, and returns the notifications among
  // it. Throws storage_error if the connection is lost.
  std::vector<pg_notification> notifications();

 private:
  [[noreturn]] void fail(PGresult* res, std::string_view what);

  PGconn* m_conn = nullptr;
  std::unordered_map<std::string, std::string> m_prepared;  // sql -> statement name
};

// BEGIN now; ROLLBACK when destroyed unless commit() ran.
class pg_transaction {
 public:
  explicit pg_transaction(pg_connection& c) : m_conn(c) { m_conn.exec_script("BEGIN"); }
  pg_transaction(const pg_transaction&) = delete;
  pg_transaction& operator=(const pg_transaction&) = delete;
  ~pg_transaction();
  void commit();

 private:
  pg_connection& m_conn;
  bool m_done = false;
};

// Up to `size` connections made on demand and reused; a caller holds one for as long as its
// lease lives. A connection found broken is dropped and the next caller makes a new one, so
// the pool reconnects by itself when the server comes back.
class pg_pool {
 public:
  pg_pool(std::vector<std::pair<std::string, std::string>> settings, std::size_t size,
          std::chrono::milliseconds wait);
  pg_pool(const pg_pool&) = delete;
  pg_pool& operator=(const pg_pool&) = delete;

  class lease {
   public:
    lease(pg_pool& pool, std::unique_ptr<pg_connection> c) : m_pool(&pool), m_conn(std::move(c)) {}
    lease(lease&& o) noexcept = default;
    lease(const lease&) = delete;
    ~lease();
    pg_connection& operator*() const { return *m_conn; }
    pg_connection* operator->() const { return m_conn.get(); }

   private:
    pg_pool* m_pool;
    std::unique_ptr<pg_connection> m_conn;
  };

  // A connection; waits up to `wait` for one to be free. Throws storage_error (unavailable)
  // when none is free in time or the server cannot be reached.
  lease acquire();
  std::unique_ptr<pg_connection> connect() const;

  std::size_t open() const;
  std::uint64_t connects() const;

 private:
  void give_back(std::unique_ptr<pg_connection> c);

  const std::vector<std::pair<std::string, std::string>> m_settings;
  const std::size_t m_size;
  const std::chrono::milliseconds m_wait;
  mutable std::mutex m_mutex;
  std::condition_variable m_cv;
  std::vector<std::unique_ptr<pg_connection>> m_idle;
  std::size_t m_open = 0;  // idle and leased
  std::uint64_t m_connects = 0;
  // After a failed connect, callers fail at once for a second instead of each waiting out the
  // connect timeout (a server that drops packets would stall every thread for seconds).
  std::chrono::steady_clock::time_point m_retry_after{};
  std::string m_last_failure;
};

}  // namespace kernelscan::detail
