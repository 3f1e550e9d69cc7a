#include "storage/database.hpp"

#include <spdlog/spdlog.h>
#include <sqlite3.h>

namespace kernelscan {
namespace {

// 'KSN1': marks the file as kernelscan's, so pointing --data-dir at another application's
// database fails loudly instead of migrating it.
constexpr int k_application_id = 0x4B534E31;

[[noreturn]] void fail(sqlite3* db, int code, std::string_view what) {
  std::string msg(what);
  msg += ": ";
  msg += db ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  throw sqlite_error(code, msg);
}

}  // namespace

std::int64_t sqlite_memory_used() {
  return sqlite3_memory_used();
}

storage_error sqlite_error(int code, const std::string& message) {
  switch (code & 0xff) {
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_NOMEM:
      return storage_error(message, true);
    default:
      return storage_error(message, false);
  }
}

statement::statement(sqlite3* db, std::string_view sql) : m_db(db) {
  const int rc = sqlite3_prepare_v3(db, sql.data(), int(sql.size()), SQLITE_PREPARE_PERSISTENT,
                                    &m_stmt, nullptr);
  if (rc != SQLITE_OK) fail(db, rc, "prepare \"" + std::string(sql.substr(0, 60)) + "\"");
}

statement::~statement() {
  sqlite3_finalize(m_stmt);
}

statement& statement::bind(int index, std::int64_t value) {
  const int rc = sqlite3_bind_int64(m_stmt, index, value);
  if (rc != SQLITE_OK) fail(m_db, rc, "bind");
  return *this;
}

statement& statement::bind(int index, double value) {
  const int rc = sqlite3_bind_double(m_stmt, index, value);
  if (rc != SQLITE_OK) fail(m_db, rc, "bind");
  return *this;
}

statement& statement::bind(int index, std::string_view value) {
  const int rc =
      sqlite3_bind_text64(m_stmt, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) fail(m_db, rc, "bind");
  return *this;
}

statement& statement::bind(int index, std::nullptr_t) {
  const int rc = sqlite3_bind_null(m_stmt, index);
  if (rc != SQLITE_OK) fail(m_db, rc, "bind");
  return *this;
}

bool statement::step() {
  const int rc = sqlite3_step(m_stmt);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(m_db, rc, "step");
}

void statement::run() {
  while (step()) {
  }
}

void statement::reset() noexcept {
  sqlite3_reset(m_stmt);
  sqlite3_clear_bindings(m_stmt);
}

bool statement::is_null(int column) const {
  return sqlite3_column_type(m_stmt, column) == SQLITE_NULL;
}

std::int64_t statement::int64(int column) const {
  return sqlite3_column_int64(m_stmt, column);
}

double statement::real(int column) const {
  return sqlite3_column_double(m_stmt, column);
}

std::string_view statement::text(int column) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, column));
  if (!p) return {};
  return {p, std::size_t(sqlite3_column_bytes(m_stmt, column))};
}

std::optional<std::int64_t> statement::opt_int64(int column) const {
  if (is_null(column)) return std::nullopt;
  return int64(column);
}

std::optional<double> statement::opt_real(int column) const {
  if (is_null(column)) return std::nullopt;
  return real(column);
}

std::optional<std::string> statement::opt_text(int column) const {
  if (is_null(column)) return std::nullopt;
  return std::string(text(column));
}

database::database(const std::string& path, std::span<const std::string_view> migrations) {
  const int rc =
      sqlite3_open_v2(path.c_str(), &m_db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = "open " + path + ": " + (m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc));
    sqlite3_close(m_db);
    m_db = nullptr;
    throw sqlite_error(rc, msg);
  }
  try {
    sqlite3_busy_timeout(m_db, 5000);
    sqlite3_extended_result_codes(m_db, 1);
    // A new file frees pages incrementally (give_back_free_pages), so that deleting jobs
    // shrinks it; this can only be chosen before its first page is written (WAL writes one).
    if (pragma("page_count") == 0) exec("PRAGMA auto_vacuum=INCREMENTAL");
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=NORMAL");
    exec("PRAGMA foreign_keys=ON");

    const auto id = pragma("application_id");
    const int version = user_version();
    if (id != 0 && id != k_application_id) {
      throw sqlite_error(SQLITE_NOTADB, path + " is not a kernelscan database (application_id " +
                                            std::to_string(id) + ")");
    }
    if (id == 0 && version != 0) {
      throw sqlite_error(SQLITE_NOTADB,
                         path + " holds another application's tables; refusing to migrate it");
    }
    if (version > int(migrations.size())) {
      throw sqlite_error(SQLITE_MISMATCH, path + " has schema version " + std::to_string(version) +
                                              ", newer than this kernelscan knows (" +
                                              std::to_string(migrations.size()) +
                                              "); upgrade kernelscan");
    }
    for (int v = version; v < int(migrations.size()); ++v) {
      transaction tx(*this);
      exec(std::string(migrations[std::size_t(v)]));
      exec("PRAGMA application_id=" + std::to_string(k_application_id));
      exec("PRAGMA user_version=" + std::to_string(v + 1));
      tx.commit();
      spdlog::info("storage: migrated {} to schema version {}", path, v + 1);
    }
  } catch (...) {
    m_cache.clear();
    sqlite3_close(m_db);
    m_db = nullptr;
    throw;
  }
}

database::~database() {
  m_cache.clear();  // statements must be finalised before the connection closes
  if (m_db) sqlite3_close(m_db);
}

database::lease database::prepare(const std::string& sql) {
  auto it = m_cache.find(sql);
  if (it == m_cache.end()) {
    it = m_cache.emplace(sql, std::make_unique<statement>(m_db, sql)).first;
  }
  return lease(*it->second);
}

void database::exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw sqlite_error(rc, "exec \"" + sql.substr(0, 60) + "\": " + msg);
  }
}

std::int64_t database::last_insert_rowid() const {
  return sqlite3_last_insert_rowid(m_db);
}

int database::changes() const {
  return sqlite3_changes(m_db);
}

std::int64_t database::pragma(const char* name) {
  statement s(m_db, std::string("PRAGMA ") + name);
  s.step();
  return s.int64(0);
}

std::int64_t database::give_back_free_pages(std::int64_t most) {
  const std::int64_t before = pragma("freelist_count");
  if (before == 0) return 0;
  exec("PRAGMA incremental_vacuum(" + std::to_string(most) + ")");
  return before - pragma("freelist_count");
}

int database::user_version() {
  return int(pragma("user_version"));
}

database::transaction::transaction(database& db) : m_db(db) {
  m_db.exec("BEGIN IMMEDIATE");
}

database::transaction::~transaction() {
  if (m_done) return;
  char* err = nullptr;
  if (sqlite3_exec(m_db.m_db, "ROLLBACK", nullptr, nullptr, &err) != SQLITE_OK) {
    spdlog::error("storage: rollback failed: {}", err ? err : "?");
    sqlite3_free(err);
  }
}

void database::transaction::commit() {
  m_db.exec("COMMIT");
  m_done = true;
}

}  // namespace kernelscan
