#pragma once
// Jobs and their per-point results in SQLite. Every call is one transaction: a job is durable
// when submit() returns, points when add_results() returns.
//
// Threading: thread-safe. Writes are serialised on one connection; reads of a file database
// use a pool of further connections, so HTTP threads read while the scheduler writes (WAL) and
// do not queue behind each other. An in-memory database has one connection for both. Results and
// params are JSON text made by the caller; the store does not parse them.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/fitness.hpp"
#include "engine/job.hpp"
#include "storage/database.hpp"

namespace kernelscan {

struct job_submission {
  std::string name;
  std::map<std::string, std::string> labels;
  int priority = 0;
  engine_kind engine = engine_kind::any;
  std::optional<int> requested_device;
  std::string op;
  std::uint64_t total_points = 0;
  std::string spec_json;
  std::optional<std::string> idempotency_key;
  std::string request_hash;  // of the request body, to tell a retry from a different request
};

struct submit_outcome {
  std::int64_t id = 0;
  bool created = false;   // false: the idempotency key named an existing job
  bool conflict = false;  // the key exists with a different request body
};

struct list_filter {
  std::vector<job_status> statuses;                         // any of these; empty: all
  std::vector<std::pair<std::string, std::string>> labels;  // all of these
  std::size_t limit = 50;
  std::optional<std::int64_t> before_id;  // cursor: jobs older than this id
};

// What the scheduler needs of an unfinished job.
struct pending_job {
  std::int64_t id = 0;
  int priority = 0;
  engine_kind engine = engine_kind::any;
  std::optional<int> requested_device;
  job_status status = job_status::queued;
  bool cancel_requested = false;
};

// One measured point, as the scheduler hands it to the store.
struct result_row {
  std::int64_t job_id = 0;
  std::uint64_t index = 0;
  bool ok = false;
  std::optional<double> median_us;
  std::string params_json;
  std::string result_json;
};

struct stored_result {
  std::uint64_t index = 0;
  std::string params_json;
  std::string result_json;
};

enum class cancel_outcome { cancelled, requested, already_finished, not_found };

class job_store {
 public:
  // Opens (creating) the database file; ":memory:" for tests. Throws storage_error.
  explicit job_store(const std::string& path);
  ~job_store();

  submit_outcome submit(const job_submission& job, std::int64_t now_ms);
  // Stores a job that ran elsewhere (POST /api/v1/imports): `succeeded`, started and finished at
  // `now_ms` on no device of ours, with every row of `rows` (their job_id is ignored) and its
  // progress and best point as add_results() would leave them. One transaction, synced to disk
  // like submit(): the job is stored whole or not at all. The idempotency key works as there.
  submit_outcome import_job(const job_submission& job, std::span<const result_row> rows,
                            std::int64_t now_ms);
  std::optional<job_record> get(std::int64_t id);
  // Newest first; records carry no spec_json.
  std::vector<job_record> list(const list_filter& filter);
  std::optional<std::string> spec_json(std::int64_t id);
  // The job an idempotency key created, with the hash of the request that created it.
  std::optional<std::pair<std::int64_t, std::string>> find_by_idempotency_key(
      const std::string& key);

  // Queued and running jobs, oldest first.
  std::vector<pending_job> pending();
  // queued -> running on `device`; false if the job is no longer queued (cancelled meanwhile).
  bool start(std::int64_t id, int device, std::int64_t now_ms);
  // running -> queued, for jobs interrupted by a shutdown or crash; they resume later.
  void requeue(std::int64_t id);
  // `fitness_json`: the job's fitness summary (summarize_fitness), JSON.
  void finish(std::int64_t id, job_status status, const std::optional<point_error>& error,
              std::int64_t now_ms, const std::optional<std::string>& fitness_json = std::nullopt);
  // Each stored point's fitness, in index order, and every flag any point raised.
  std::vector<scored_point> scored_points(std::int64_t job_id);
  std::vector<std::string> result_flags(std::int64_t job_id);

  // The result cache (DESIGN.md §4): a job records what it measures where; a later job with the
  // same key is answered from the newest complete, succeeded one.
  void set_cache_key(std::int64_t id, const std::string& key);
  std::optional<std::int64_t> find_cached(const std::string& key, std::int64_t except_id);
  // Copies job `from`'s results into `to`, each marked {"cache":{"hit":true,"job_id":N}}, with
  // its progress and best point, in one transaction. Returns N: the job that measured them.
  std::int64_t copy_cached_results(std::int64_t from, std::int64_t to, std::int64_t now_ms);

  // Each device's measured roofline, JSON, by a key naming the device.
  std::optional<std::string> roofline(const std::string& device_key);
  void put_roofline(const std::string& device_key, const std::string& roofline_json,
                    std::int64_t measured_ms);
  cancel_outcome cancel(std::int64_t id, std::int64_t now_ms);

  // Stores points and advances their jobs' progress, all in one transaction (group commit: one
  // commit costs about as much as tens of rows). A point already stored is left as it was.
  void add_results(std::span<const result_row> rows, std::int64_t now_ms);
  std::vector<std::uint64_t> result_indices(std::int64_t job_id);
  std::vector<stored_result> results(std::int64_t job_id, std::uint64_t offset,
                                     std::uint64_t limit);
  // Rows with index > after_index, in index order: the next page of a long read without
  // OFFSET's cost of walking every row before it.
  std::vector<stored_result> results_after(std::int64_t job_id, std::uint64_t after_index,
                                           std::uint64_t limit);

  std::map<job_status, std::int64_t> count_by_status();
  // Reads one row: throws storage_error if the database cannot be read (readiness).
  void ping();

 private:
  // A connection to read with, for as long as it lives.
  class reader {
   public:
    explicit reader(job_store& store);
    reader(const reader&) = delete;
    reader& operator=(const reader&) = delete;
    ~reader();
    database* operator->() const { return m_db; }

   private:
    job_store& m_store;
    std::unique_ptr<database> m_own;
    std::unique_lock<std::mutex> m_writer_lock;
    database* m_db = nullptr;
  };

  class durable_commits;

  static job_record read_row(statement& s);
  // With m_mutex held, inside a transaction.
  std::optional<submit_outcome> find_key(const job_submission& job);
  std::int64_t insert_job(const job_submission& job, job_status status, std::int64_t now_ms,
                          std::optional<std::int64_t> finished_ms);
  void store_row(const result_row& row, std::int64_t job_id, std::int64_t now_ms);

  std::string m_path;
  bool m_shared_reads;  // in-memory: another connection would be another database
  std::mutex m_mutex;   // the writer connection
  database m_db;
  std::mutex m_pool_mutex;
  std::vector<std::unique_ptr<database>> m_idle_readers;
};

}  // namespace kernelscan
