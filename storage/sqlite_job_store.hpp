#pragma once
// The job store in one SQLite file (the embedded default, one machine): see job_store.hpp for
// what each call does.
//
// Threading: thread-safe. Writes are serialised on one connection; reads of a file database
// use a pool of further connections, so HTTP threads read while the scheduler writes (WAL) and
// do not queue behind each other. An in-memory database has one connection for both.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "storage/database.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

class sqlite_job_store : public job_store {
 public:
  // Opens (creating) the database file; ":memory:" for tests. Throws storage_error.
  explicit sqlite_job_store(const std::string& path);
  ~sqlite_job_store() override;

  std::string_view backend() const override { return "sqlite"; }
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
  void join(const node_record& node, std::int64_t now_ms) override;
  void heartbeat(const std::string& node, std::span<const device_record> devices,
                 std::int64_t now_ms) override;
  void leave(const std::string& node, std::int64_t now_ms) override;
  std::vector<node_record> nodes(std::int64_t now_ms) override;
  std::vector<device_record> devices(std::int64_t now_ms) override;
  // One daemon uses a SQLite file: there is no other node to tell.
  void publish_event(const store_event&) override {}
  void subscribe(std::function<void(const store_event&)>) override {}
  std::map<job_status, std::int64_t> count_by_status() override;
  void ping() override;
  std::vector<store_metric> metrics() override;

 private:
  // A connection to read with, for as long as it lives.
  class reader {
   public:
    explicit reader(sqlite_job_store& store);
    reader(const reader&) = delete;
    reader& operator=(const reader&) = delete;
    ~reader();
    database* operator->() const { return m_db; }
    database& operator*() const { return *m_db; }

   private:
    sqlite_job_store& m_store;
    std::unique_ptr<database> m_own;
    std::unique_lock<std::mutex> m_writer_lock;
    database* m_db = nullptr;
  };

  class durable_commits;

  static job_record read_row(statement& s);
  static agent_count count_agent(database& db, const std::string& task, const std::string& agent,
                                 std::int64_t since_ms);
  // With m_mutex held, inside a transaction.
  std::optional<submit_outcome> find_key(const job_submission& job);
  std::int64_t insert_job(const job_submission& job, job_status status, std::int64_t now_ms,
                          std::optional<std::int64_t> finished_ms);
  void store_row(const result_row& row, std::int64_t job_id, std::int64_t now_ms);
  // Deletes the result rows of deleted job `id`, k_reap_rows a transaction, then its entry in
  // deleted_jobs, then gives the free pages back to the file system k_vacuum_pages at a time;
  // reap_deleted() those of every job there. Take m_mutex for each transaction.
  void reap(std::int64_t id);
  void reap_deleted();
  static constexpr std::size_t k_reap_rows = 1000;
  static constexpr std::int64_t k_vacuum_pages = 256;

  std::string m_path;
  bool m_shared_reads;  // in-memory: another connection would be another database
  std::mutex m_mutex;   // the writer connection
  database m_db;
  std::mutex m_pool_mutex;
  std::vector<std::unique_ptr<database>> m_idle_readers;
  std::atomic<std::uint64_t> m_deleted{0};  // jobs this process deleted
};

}  // namespace kernelscan
