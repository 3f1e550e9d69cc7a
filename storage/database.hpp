#pragma once
// One SQLite connection done the careful way: WAL, synchronous=NORMAL, foreign keys, a busy
// timeout, an application_id check, migrations by user_version, statements prepared once and
// cached, and a transaction guard that rolls back unless committed.
//
// Threading: a database is not thread-safe; its owner serialises access (job_store holds a
// mutex). Statements handed out are valid until the database is destroyed.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "storage/storage_error.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace kernelscan {

// A failed SQLite call as a storage_error: unavailable for conditions outside the program's
// control (disk full, I/O error, read-only or locked database), which the API reports as 503.
storage_error sqlite_error(int code, const std::string& message);

class statement {
 public:
  statement(sqlite3* db, std::string_view sql);
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;
  ~statement();

  statement& bind(int index, std::int64_t value);
  statement& bind(int index, int value) { return bind(index, std::int64_t(value)); }
  statement& bind(int index, double value);
  statement& bind(int index, std::string_view value);  // copied by SQLite
  statement& bind(int index, std::nullptr_t);
  template <class T>
  statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind(index, nullptr);
  }

  // Advances; true while a row is available. Throws storage_error on failure.
  bool step();
  // Runs a statement that returns no rows.
  void run();
  void reset() noexcept;

  bool is_null(int column) const;
  std::int64_t int64(int column) const;
  double real(int column) const;
  std::string_view text(int column) const;  // valid until the next step/reset
  std::optional<std::int64_t> opt_int64(int column) const;
  std::optional<double> opt_real(int column) const;
  std::optional<std::string> opt_text(int column) const;

 private:
  sqlite3* m_db;
  sqlite3_stmt* m_stmt = nullptr;
};

// Bytes SQLite holds in this process (page caches, statements, schema), all connections.
std::int64_t sqlite_memory_used();

class database {
 public:
  // Opens or creates the file and brings its schema up to date with `migrations` (ordered SQL
  // steps; step i moves user_version from i to i + 1). ":memory:" works. Throws storage_error,
  // also for a file that belongs to another application or to a newer kernelscan.
  database(const std::string& path, std::span<const std::string_view> migrations);
  database(const database&) = delete;
  database& operator=(const database&) = delete;
  ~database();

  // Resets the statement (and clears its bindings) when it goes out of scope.
  class lease {
   public:
    explicit lease(statement& s) : m_stmt(&s) {}
    lease(lease&& o) noexcept : m_stmt(std::exchange(o.m_stmt, nullptr)) {}
    lease(const lease&) = delete;
    ~lease() {
      if (m_stmt) m_stmt->reset();
    }
    statement* operator->() const { return m_stmt; }
    statement& operator*() const { return *m_stmt; }

   private:
    statement* m_stmt;
  };

  // The cached statement for `sql`, prepared on first use.
  lease prepare(const std::string& sql);
  void exec(const std::string& sql);
  std::int64_t last_insert_rowid() const;
  int changes() const;
  int user_version();
  // Gives up to `most` free pages back to the file system (the file shrinks at the next
  // checkpoint); the number given. None in a file made before it freed pages incrementally
  // (PRAGMA auto_vacuum=NONE, until a VACUUM after setting it INCREMENTAL).
  std::int64_t give_back_free_pages(std::int64_t most);

  class transaction {
   public:
    // BEGIN IMMEDIATE: takes the write lock up front, so a write never fails half way with
    // SQLITE_BUSY on lock upgrade.
    explicit transaction(database& db);
    transaction(const transaction&) = delete;
    transaction& operator=(const transaction&) = delete;
    ~transaction();
    void commit();

   private:
    database& m_db;
    bool m_done = false;
  };

 private:
  // The value of `PRAGMA name` (page_count, freelist_count, user_version, ...).
  std::int64_t pragma(const char* name);

  sqlite3* m_db = nullptr;
  std::unordered_map<std::string, std::unique_ptr<statement>> m_cache;
};

}  // namespace kernelscan
