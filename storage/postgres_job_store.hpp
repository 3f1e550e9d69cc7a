#pragma once
// The job store in PostgreSQL: what many daemons share as one fleet (DESIGN.md §7). The same
// behaviour as the SQLite store (see job_store.hpp), with PostgreSQL doing what a shared queue
// needs: every state change is one transaction, a batch of points is one statement, and
// concurrent writers are kept apart by row locks.
//
// Connecting: `url` is a libpq connection URI or key=value string (postgresql://user@host/db,
// with sslmode=verify-full and friends for TLS); libpq's environment (PGPASSWORD, PGSSLMODE, ...)
// and ~/.pgpass apply too. A password given apart (read from a file) overrides the URL's. The
// connection settings are never logged. Everything lives in the schema `kernelscan`, created
// and migrated on open.
//
// Threading: thread-safe; calls take a connection from a pool of `pool_size`. A call made while
// the server is unreachable throws storage_error (unavailable); the pool reconnects by itself
// once it is back.

#include <atomic>
#include <memory>
#include <string>

#include "storage/detail/pg_connection.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

struct postgres_options {
  std::string url;
  std::string password;  // empty: the URL's, PGPASSWORD or ~/.pgpass
  std::size_t pool_size = 8;
  std::string application_name = "kernelscan";
};

class postgres_job_store final : public job_store {
 public:
  // Connects and brings the schema up to date. Throws storage_error: the server cannot be
  // reached, the login is refused, the schema belongs to another application or to a newer
  // kernelscan.
  explicit postgres_job_store(const postgres_options& options);
  ~postgres_job_store() override;

  std::string_view backend() const override { return "postgresql"; }
  submit_outcome submit(const job_submission& job, std::int64_t now_ms) override;
  submit_outcome import_job(const job_submission& job, std::span<const result_row> rows,
                            std::int64_t now_ms) override;
  std::optional<job_record> get(std::int64_t id) override;
  bool exists(std::int64_t id) override;
  std::vector<job_record> list(const list_filter& filter) override;
  std::optional<std::string> spec_json(std::int64_t id) override;
  std::optional<std::pair<std::int64_t, std::string>> find_by_idempotency_key(
      const std::string& key) override;
  bool create_task(const task_record& task) override;
  std::optional<task_record> task(const std::string& name) override;
  std::vector<task_record> tasks() override;
  retire_outcome retire_task(const std::string& name, std::int64_t now_ms) override;
  agent_count agent_submissions(const std::string& task, const std::string& agent,
                                std::int64_t since_ms) override;
  std::optional<claimed_job> claim(const claim_request& request) override;
  lease_renewal renew_leases(const std::string& node, std::span<const job_lease> held,
                             std::int64_t lease_ms, std::int64_t now_ms) override;
  std::vector<std::int64_t> expire_leases(std::int64_t now_ms) override;
  std::vector<std::int64_t> recover_node(const std::string& node, std::int64_t now_ms) override;
  bool requeue(const std::string& node, const job_lease& lease) override;
  bool finish(const std::string& node, const job_lease& lease, job_status status,
              const std::optional<point_error>& error, std::int64_t now_ms,
              const std::optional<std::string>& fitness_json,
              const std::optional<std::string>& variants_json = std::nullopt) override;
  bool set_fitness(std::int64_t job_id, const std::string& fitness_json) override;
  std::vector<scored_point> scored_points(std::int64_t job_id) override;
  void set_cache_key(std::int64_t id, const std::string& key) override;
  std::optional<std::int64_t> find_cached(const std::string& key, std::int64_t except_id) override;
  std::optional<std::int64_t> copy_cached_results(std::int64_t from, std::int64_t to,
                                                  std::int64_t now_ms) override;
  std::optional<std::string> roofline(const std::string& device_key) override;
  void put_roofline(const std::string& device_key, const std::string& roofline_json,
                    std::int64_t measured_ms) override;
  cancel_outcome cancel(std::int64_t id, std::int64_t now_ms) override;
  delete_outcome delete_job(std::int64_t id) override;
  std::vector<std::int64_t> ended_before(std::int64_t before_ms, std::size_t limit) override;
  void add_results(std::span<const result_row> rows, std::int64_t now_ms) override;
  std::vector<std::uint64_t> result_indices(std::int64_t job_id) override;
  std::vector<stored_result> results(std::int64_t job_id, std::uint64_t offset,
                                     std::uint64_t limit) override;
  std::vector<stored_result> results_after(std::int64_t job_id, std::uint64_t after_index,
                                           std::uint64_t limit) override;
  // The node's name is held by a session-level advisory lock on a connection of its own, which
  // PostgreSQL releases when that connection ends (the process died, the network is gone): a
  // second live daemon with the name cannot take it. That connection also LISTENs for events.
  void join(const node_record& node, std::int64_t now_ms) override;
  void heartbeat(const std::string& node, std::span<const device_record> devices,
                 std::int64_t now_ms) override;
  void leave(const std::string& node, std::int64_t now_ms) override;
  std::vector<node_record> nodes(std::int64_t now_ms) override;
  std::vector<device_record> devices(std::int64_t now_ms) override;
  // NOTIFY on one channel, sent and received by the session thread. Events published while the
  // server is unreachable are dropped (a reconnecting event stream reloads what it missed).
  void publish_event(const store_event& event) override;
  void subscribe(std::function<void(const store_event&)> on_event) override;
  std::map<job_status, std::int64_t> count_by_status() override;
  void ping() override;
  std::vector<store_metric> metrics() override;

 private:
  // With a connection inside a transaction.
  static std::optional<submit_outcome> insert_job(detail::pg_connection& c,
                                                  const job_submission& job, job_status status,
                                                  std::int64_t now_ms,
                                                  std::optional<std::int64_t> finished_ms);
  static void insert_rows(detail::pg_connection& c, std::span<const result_row> rows,
                          std::optional<std::int64_t> job_id, std::int64_t now_ms);

  class session;

  detail::pg_pool m_pool;
  std::function<void(const store_event&)> m_on_event;
  std::unique_ptr<session> m_session;  // from join() on
  // Jobs this process deleted.
  std::atomic<std::uint64_t> m_deleted{0};
};

// Migrates the schema on `c` (see postgres_migrations.hpp). Throws storage_error.
void migrate_postgres(detail::pg_connection& c);

// The connection settings for libpq: defaults (timeouts, keep-alives, the application name),
// then the URL, then the password. For pg_connection and pg_pool.
std::vector<std::pair<std::string, std::string>> postgres_settings(const postgres_options& options);

// The PostgreSQL advisory lock (a 64-bit key) a live node holds on its name.
std::int64_t postgres_node_lock_key(const std::string& name);

}  // namespace kernelscan
