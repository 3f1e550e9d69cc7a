#include "storage/detail/pg_connection.hpp"

#include <spdlog/spdlog.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace kernelscan::detail {
namespace {

// SQLSTATEs a retry may cure: connection exceptions (08), insufficient resources (53: disk
// full, out of memory, too many connections), operator intervention (57P01 admin shutdown,
// 57P02 crash shutdown, 57P03 cannot connect now), system errors (58: I/O), serialisation
// failures and deadlocks (40001, 40P01), a read-only standby after a failover (25006), and a
// lock not available (55P03).
bool transient(std::string_view state) {
  if (state.size() != 5) return false;
  const auto cls = state.substr(0, 2);
  return cls == "08" || cls == "53" || cls == "58" || cls == "57" || state == "40001" ||
         state == "40P01" || state == "25006" || state == "55P03";
}

std::string trimmed(const char* message) {
  std::string m = message ? message : "";
  while (!m.empty() && (m.back() == '\n' || m.back() == ' '))
    m.pop_back();
  return m;
}

}  // namespace

pg_param::pg_param(double v) {
  if (std::isnan(v)) {
    m_text = "NaN";
  } else if (std::isinf(v)) {
    m_text = v > 0 ? "Infinity" : "-Infinity";
  } else {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest exact form
    m_text = std::string(buf, ec == std::errc() ? end : buf);
  }
}

std::string pg_array(std::span<const pg_param> elements) {
  std::string out = "{";
  for (std::size_t i = 0; i < elements.size(); ++i) {
    if (i) out += ',';
    const auto& t = elements[i].text();
    if (!t) {
      out += "NULL";
      continue;
    }
    out += '"';
    for (char c : *t) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

pg_result::~pg_result() {
  if (m_res) PQclear(m_res);
}

int pg_result::rows() const {
  return PQntuples(m_res);
}

std::int64_t pg_result::affected() const {
  const char* n = PQcmdTuples(m_res);
  return n && *n ? std::strtoll(n, nullptr, 10) : 0;
}

bool pg_result::is_null(int row, int column) const {
  return PQgetisnull(m_res, row, column) != 0;
}

std::string_view pg_result::text(int row, int column) const {
  return {PQgetvalue(m_res, row, column), std::size_t(PQgetlength(m_res, row, column))};
}

std::int64_t pg_result::int64(int row, int column) const {
  const auto t = text(row, column);
  std::int64_t v = 0;
  std::from_chars(t.data(), t.data() + t.size(), v);
  return v;
}

double pg_result::real(int row, int column) const {
  const auto t = text(row, column);
  if (t == "NaN") return std::nan("");
  if (t == "Infinity") return INFINITY;
  if (t == "-Infinity") return -INFINITY;
  double v = 0;
  std::from_chars(t.data(), t.data() + t.size(), v);
  return v;
}

bool pg_result::boolean(int row, int column) const {
  return text(row, column) == "t";
}

std::optional<std::int64_t> pg_result::opt_int64(int row, int column) const {
  if (is_null(row, column)) return std::nullopt;
  return int64(row, column);
}

std::optional<double> pg_result::opt_real(int row, int column) const {
  if (is_null(row, column)) return std::nullopt;
  return real(row, column);
}

std::optional<std::string> pg_result::opt_text(int row, int column) const {
  if (is_null(row, column)) return std::nullopt;
  return std::string(text(row, column));
}

pg_connection::pg_connection(const std::vector<std::pair<std::string, std::string>>& settings) {
  std::vector<const char*> keys, values;
  for (const auto& [k, v] : settings) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  // expand_dbname: a "dbname" holding a URL or a key=value string is read as one; settings
  // after it override what it says, settings before it are defaults it may override.
  m_conn = PQconnectdbParams(keys.data(), values.data(), 1);
  if (!m_conn || PQstatus(m_conn) != CONNECTION_OK) {
    std::string msg = m_conn ? trimmed(PQerrorMessage(m_conn)) : "out of memory";
    PQfinish(m_conn);
    m_conn = nullptr;
    throw storage_error("cannot connect to PostgreSQL: " + msg, true);
  }
  // Notices (a NOTICE from CREATE ... IF NOT EXISTS) are not worth a line each.
  PQsetNoticeProcessor(
      m_conn, [](void*, const char* m) { spdlog::debug("postgresql: {}", trimmed(m)); }, nullptr);
}

pg_connection::~pg_connection() {
  if (m_conn) PQfinish(m_conn);
}

bool pg_connection::ok() const {
  return m_conn && PQstatus(m_conn) == CONNECTION_OK;
}

int pg_connection::socket() const {
  return PQsocket(m_conn);
}

void pg_connection::fail(PGresult* res, std::string_view what) {
  const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  std::string msg = trimmed(res ? PQresultErrorMessage(res) : nullptr);
  if (msg.empty()) msg = trimmed(PQerrorMessage(m_conn));
  const bool lost = PQstatus(m_conn) != CONNECTION_OK;
  const bool retry = lost || (state && transient(state));
  if (res) PQclear(res);
  throw storage_error(std::string(what) + ": " + (msg.empty() ? "no answer from the server" : msg),
                      retry);
}

pg_result pg_connection::exec(const std::string& sql, std::span<const pg_param> params) {
  if (!ok()) throw storage_error("the connection to PostgreSQL was lost", true);
  auto it = m_prepared.find(sql);
  if (it == m_prepared.end()) {
    std::string name = "ks" + std::to_string(m_prepared.size());
    PGresult* r = PQprepare(m_conn, name.c_str(), sql.c_str(), 0, nullptr);
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
      fail(r, "prepare \"" + sql.substr(0, 60) + "\"");
    }
    PQclear(r);
    it = m_prepared.emplace(sql, std::move(name)).first;
  }
  std::vector<const char*> values;
  std::vector<int> lengths;
  values.reserve(params.size());
  lengths.reserve(params.size());
  for (const auto& p : params) {
    values.push_back(p.text() ? p.text()->c_str() : nullptr);
    lengths.push_back(p.text() ? int(p.text()->size()) : 0);
  }
  PGresult* r = PQexecPrepared(m_conn, it->second.c_str(), int(params.size()), values.data(),
                               lengths.data(), nullptr, 0);
  const auto status = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    fail(r, "\"" + sql.substr(0, 60) + "\"");
  }
  return pg_result(r);
}

void pg_connection::exec_script(const std::string& sql) {
  if (!ok()) throw storage_error("the connection to PostgreSQL was lost", true);
  PGresult* r = PQexec(m_conn, sql.c_str());
  const auto status = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    fail(r, "\"" + sql.substr(0, 60) + "\"");
  }
  PQclear(r);
}

std::vector<pg_notification> pg_connection::notifications() {
  if (!ok() || PQconsumeInput(m_conn) == 0) {
    throw storage_error("the connection to PostgreSQL was lost: " + trimmed(PQerrorMessage(m_conn)),
                        true);
  }
  std::vector<pg_notification> out;
  while (PGnotify* n = PQnotifies(m_conn)) {
    out.push_back({n->relname ? n->relname : "", n->extra ? n->extra : ""});
    PQfreemem(n);
  }
  return out;
}

pg_transaction::~pg_transaction() {
  if (m_done) return;
  try {
    m_conn.exec_script("ROLLBACK");
  } catch (const storage_error& e) {
    spdlog::debug("postgresql: rollback: {}", e.what());  // a lost connection rolls back anyway
  }
}

void pg_transaction::commit() {
  m_conn.exec_script("COMMIT");
  m_done = true;
}

pg_pool::pg_pool(std::vector<std::pair<std::string, std::string>> settings, std::size_t size,
                 std::chrono::milliseconds wait)
    : m_settings(std::move(settings)), m_size(std::max<std::size_t>(size, 1)), m_wait(wait) {}

std::unique_ptr<pg_connection> pg_pool::connect() const {
  return std::make_unique<pg_connection>(m_settings);
}

pg_pool::lease pg_pool::acquire() {
  std::unique_lock lock(m_mutex);
  const bool got = m_cv.wait_for(lock, m_wait, [&] { return !m_idle.empty() || m_open < m_size; });
  if (!got) {
    throw storage_error("no PostgreSQL connection was free within " +
                            std::to_string(m_wait.count()) + " ms (all " + std::to_string(m_size) +
                            " busy)",
                        true);
  }
  while (!m_idle.empty()) {
    auto c = std::move(m_idle.back());
    m_idle.pop_back();
    if (c->ok()) return lease(*this, std::move(c));
    --m_open;  // lost while idle (the server restarted): make a new one
  }
  if (std::chrono::steady_clock::now() < m_retry_after) throw storage_error(m_last_failure, true);
  ++m_open;
  ++m_connects;
  lock.unlock();
  try {
    return lease(*this, connect());
  } catch (const storage_error& e) {
    lock.lock();
    --m_open;
    m_retry_after = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    m_last_failure = e.what();
    m_cv.notify_one();
    throw;
  }
}

void pg_pool::give_back(std::unique_ptr<pg_connection> c) {
  std::lock_guard lock(m_mutex);
  if (c->ok()) {
    m_idle.push_back(std::move(c));
  } else {
    --m_open;
  }
  m_cv.notify_one();
}

std::size_t pg_pool::open() const {
  std::lock_guard lock(m_mutex);
  return m_open;
}

std::uint64_t pg_pool::connects() const {
  std::lock_guard lock(m_mutex);
  return m_connects;
}

pg_pool::lease::~lease() {
  if (m_conn) m_pool->give_back(std::move(m_conn));
}

}  // namespace kernelscan::detail
