#pragma once
// The store the server keeps jobs and their per-point results in: an interface with two
// implementations, SQLite (sqlite_job_store: one machine, the embedded default) and PostgreSQL
// (postgres_job_store: a fleet of daemons sharing one database). open_store() picks one from
// the configuration. Both behave the same through this interface; one test suite checks both.
//
// Every call is one transaction: a job is durable when submit() returns, points when
// add_results() returns. Calls throw storage_error; `unavailable()` errors (a full disk, a
// database server that is down) are worth retrying.
//
// Threading: implementations are thread-safe. Results and params are JSON text made by the
// caller; a store does not parse them.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/fitness.hpp"
#include "engine/job.hpp"
#include "storage/storage_error.hpp"

namespace kernelscan {

struct job_submission {
  std::string name;
  std::map<std::string, std::string> labels;
  int priority = 0;
  engine_kind engine = engine_kind::any;
  // Placement: a device index, a node, a catalog model; all empty: any device of the fleet.
  std::optional<int> requested_device;
  std::optional<std::string> requested_node;
  std::optional<std::string> requested_model;
  // What its devices must have, as job_needs() bits (engine/device_needs.hpp); 0: nothing.
  std::uint32_t needs = 0;
  std::string op;
  std::uint64_t total_points = 0;
  std::string spec_json;
  std::optional<std::string> idempotency_key;
  std::string request_hash;         // of the request body, to tell a retry from a different request
  std::optional<std::string> task;  // the evaluation task it was submitted against
  // Who submitted it against its task (access_control::agent_of); nullopt for a plain job.
  std::optional<std::string> agent;
  // The task's bound on the agent's submissions, checked in the transaction that would store
  // the job: at most `limit` jobs of this task and agent created at `since_ms` or later
  // (0: ever). nullopt: none (an operator, or a task without one).
  struct bound {
    std::int64_t limit = 0;
    std::int64_t since_ms = 0;
  };
  std::optional<bound> agent_bound;
};

// The jobs one agent submitted against one task since a time (job_store::agent_submissions).
struct agent_count {
  std::int64_t jobs = 0;
  std::optional<std::int64_t> oldest_ms;  // the creation time of the oldest of them
};

// An evaluation task (README "Tasks"): what an operator fixes of the jobs agents submit
// against it. The store keeps its template as JSON text made by the caller.
struct task_record {
  std::string name;  // unique, also once retired
  std::string description;
  std::string template_json;
  std::int64_t created_ms = 0;
  std::optional<std::int64_t> retired_ms;  // set once retired: no new submissions
};

enum class retire_outcome { retired, already_retired, not_found };

struct submit_outcome {
  std::int64_t id = 0;
  bool created = false;   // false: the idempotency key named an existing job
  bool conflict = false;  // the key exists with a different request body
  // The job's task is retired (checked in the transaction that would store it, so a retire
  // that committed first always wins): nothing was stored.
  bool task_retired = false;
  // The agent had already submitted as many jobs as the task's bound allows (nothing was
  // stored); `counted` says how many, and since when.
  bool over_bound = false;
  agent_count counted;

  static submit_outcome stored(std::int64_t id) { return with(id, true, false); }
  // The job an idempotency key created before; `conflict`: for a different request.
  static submit_outcome known(std::int64_t id, bool conflict) { return with(id, false, conflict); }
  static submit_outcome retired() {
    submit_outcome o;
    o.task_retired = true;
    return o;
  }
  static submit_outcome bounded(const agent_count& counted) {
    submit_outcome o;
    o.over_bound = true;
    o.counted = counted;
    return o;
  }

 private:
  static submit_outcome with(std::int64_t id, bool created, bool conflict) {
    submit_outcome o;
    o.id = id;
    o.created = created;
    o.conflict = conflict;
    return o;
  }
};

struct list_filter {
  std::vector<job_status> statuses;                         // any of these; empty: all
  std::vector<std::pair<std::string, std::string>> labels;  // all of these
  std::size_t limit = 50;
  std::optional<std::int64_t> before_id;  // cursor: jobs older than this id
  std::optional<std::string> task;        // only jobs submitted against this task
};

// A device of a node offering to run a job (job_store::claim).
struct claim_request {
  std::string node;
  int device = 0;      // its index on the node
  std::string engine;  // what it runs: to_string(engine_kind), "mock", "hip", ...
  std::string model;   // its catalog key; empty when the part is not in the catalog
  // The needs it cannot meet, as device_lacks() bits: it is offered no job needing one.
  std::uint32_t lacks = 0;
  std::int64_t lease_ms = 30000;
  std::int64_t now_ms = 0;  // the job's start time, if it is its first
};

// A node's hold on a running job: the claim it made, numbered so that a node whose lease ran
// out (and whose job another node claimed since) can no longer change the job.
struct job_lease {
  std::int64_t job_id = 0;
  std::int64_t attempt = 0;  // 1 for the first claim, +1 for every claim after a requeue
  bool operator==(const job_lease&) const = default;
};

struct claimed_job {
  job_lease lease;
  std::string spec_json;
  bool cancel_requested = false;
};

struct lease_renewal {
  std::vector<std::int64_t> lost;              // no longer this node's: stop them, store nothing
  std::vector<std::int64_t> cancel_requested;  // cancelled since: stop after the current point
};

// One measured point, as the scheduler hands it to the store. `score` and `flags` repeat what
// the row's JSON says, so that a job's summary is computed without parsing its rows.
struct result_row {
  std::int64_t job_id = 0;
  // The row's place in the job: the point's index, or for a job with variants point * variants
  // + the variant's position.
  std::uint64_t index = 0;
  std::optional<std::string> variant;  // the row's variant; nullopt for a job without
  // The sweep point a row of a variant measured (index / variants); nullopt: `index` is it. The
  // job's best point names it.
  std::optional<std::uint64_t> point;
  bool ok = false;
  std::optional<double> median_us;
  // cost_of() the row: the job's best point is its ok row of the lowest cost (best_cost()).
  std::optional<double> cost;
  std::string params_json;
  std::string result_json;
  scored_point score;              // score.ok is `ok`
  std::vector<std::string> flags;  // the row's "flags"
  // False: never the job's best point. A held-out point of a task whose held-out scores are
  // private: a best point named held out would tell a candidate how it did there.
  bool rankable = true;
};

// What ranks a row for its job's best point: its cost, or without one its median; nullopt for a
// row that is never the best: not ok, without a median, with a flag that voids its score (a
// wrong answer, however fast, is no kernel's best point), or not rankable.
inline std::optional<double> best_cost(const result_row& row) {
  if (!row.ok || !row.median_us || any_voids_score(row.flags) || !row.rankable) {
    return std::nullopt;
  }
  return row.cost ? row.cost : row.median_us;
}

struct stored_result {
  std::uint64_t index = 0;
  std::string params_json;
  std::string result_json;
};

enum class cancel_outcome { cancelled, requested, already_finished, not_found };

enum class delete_outcome { deleted, not_finished, not_found };

// A daemon of the fleet (DESIGN.md §7), as the store knows it.
struct node_record {
  std::string name;
  std::string instance;  // the running process: a random id per start
  std::string version;
  std::int64_t started_ms = 0;
  // Read back: time since its last heartbeat, by the store's clock, and whether it left cleanly.
  std::int64_t heartbeat_age_ms = 0;
  bool stopped = false;
};

// A device as its node reports it with every heartbeat.
struct device_record {
  std::string node;
  int index = 0;
  std::string engine;  // to_string(engine_kind)
  std::string model;   // catalog key or empty
  std::string state;   // idle, busy, ... (device_state)
  std::optional<std::int64_t> current_job;
  std::string info_json;  // the device as the API shows it, JSON made by its node
  // Read back: time since its node's last heartbeat, and whether its node left cleanly.
  std::int64_t heartbeat_age_ms = 0;
  bool node_stopped = false;
};

// Another live node has this name (two daemons were given one --node).
class node_conflict : public storage_error {
 public:
  explicit node_conflict(const std::string& message) : storage_error(message, false) {}
};

// A change one node announces to the others (DESIGN.md §7: events cross nodes).
struct store_event {
  std::string type;  // "job", "points", ...
  std::string data;  // JSON, small (PostgreSQL carries at most 8000 bytes)
};

// A figure for GET /metrics (Prometheus text): a gauge or counter the store keeps.
struct store_metric {
  std::string name;  // kernelscan_...
  std::string help;
  std::string type;  // gauge or counter
  double value = 0;
};

class job_store {
 public:
  virtual ~job_store() = default;

  // "sqlite" or "postgresql".
  virtual std::string_view backend() const = 0;

  virtual submit_outcome submit(const job_submission& job, std::int64_t now_ms) = 0;
  // Stores a job that ran elsewhere (POST /api/v1/imports): `succeeded`, started and finished at
  // `now_ms` on no device of ours, with every row of `rows` (their job_id is ignored) and its
  // progress and best point as add_results() would leave them. One transaction, as durable as
  // submit(): the job is stored whole or not at all. The idempotency key works as there.
  virtual submit_outcome import_job(const job_submission& job, std::span<const result_row> rows,
                                    std::int64_t now_ms) = 0;
  virtual std::optional<job_record> get(std::int64_t id) = 0;
  // Whether job `id` is stored (not deleted), without reading it.
  virtual bool exists(std::int64_t id) = 0;
  // Newest first; records carry no spec_json.
  virtual std::vector<job_record> list(const list_filter& filter) = 0;
  virtual std::optional<std::string> spec_json(std::int64_t id) = 0;
  // The job an idempotency key created, with the hash of the request that created it.
  virtual std::optional<std::pair<std::int64_t, std::string>> find_by_idempotency_key(
      const std::string& key) = 0;

  // Evaluation tasks. create_task() returns false (and stores nothing) when the name is taken,
  // by a live or a retired task. tasks() lists them by name, retired ones included.
  virtual bool create_task(const task_record& task) = 0;
  virtual std::optional<task_record> task(const std::string& name) = 0;
  virtual std::vector<task_record> tasks() = 0;
  virtual retire_outcome retire_task(const std::string& name, std::int64_t now_ms) = 0;
  // The jobs `agent` submitted against `task` created at `since_ms` or later, deleted ones too.
  virtual agent_count agent_submissions(const std::string& task, const std::string& agent,
                                        std::int64_t since_ms) = 0;

  // Dispatch and leases (DESIGN.md §7). A node claims the first queued job, by priority then
  // submission order, that the offered device can run (the job's engine is `auto` or the
  // device's, and the device is the one it asks for, if any): the job becomes running on that
  // node and device under a lease of `lease_ms`, which the node renews (renew_leases) until the
  // job ends. A job whose lease runs out is queued again (expire_leases) and resumes on the
  // next node that claims it. Jobs are claimed by one node at a time, whatever the number of
  // nodes claiming at once. SQLite measures leases with the `now_ms` given; PostgreSQL with its
  // own clock, so that the nodes' clocks need not agree.
  virtual std::optional<claimed_job> claim(const claim_request& request) = 0;
  // Extends the leases the node holds by `lease_ms` and says which it lost and which jobs have
  // been asked to cancel since.
  virtual lease_renewal renew_leases(const std::string& node, std::span<const job_lease> held,
                                     std::int64_t lease_ms, std::int64_t now_ms) = 0;
  // Requeues running jobs whose lease has run out; returns their ids.
  virtual std::vector<std::int64_t> expire_leases(std::int64_t now_ms) = 0;
  // A node starting: the jobs a previous run of it left running are queued again (those with a
  // cancel request end cancelled) without waiting for their leases. Returns their ids.
  virtual std::vector<std::int64_t> recover_node(const std::string& node, std::int64_t now_ms) = 0;
  // running -> queued, for a job interrupted by a shutdown; false if the lease was lost.
  virtual bool requeue(const std::string& node, const job_lease& lease) = 0;
  // running -> succeeded | failed | cancelled; false (and nothing changed) if the lease was lost.
  // `fitness_json`: the job's fitness summary (summarize_fitness), JSON; `variants_json`: the
  // summary of a job's variants (variant_summary.hpp), JSON.
  virtual bool finish(const std::string& node, const job_lease& lease, job_status status,
                      const std::optional<point_error>& error, std::int64_t now_ms,
                      const std::optional<std::string>& fitness_json = std::nullopt,
                      const std::optional<std::string>& variants_json = std::nullopt) = 0;

  // Replaces the fitness summary of a job that ended (an operator confirming its speedups);
  // false, and nothing changed, if there is no such job or it has not ended.
  virtual bool set_fitness(std::int64_t job_id, const std::string& fitness_json) = 0;

  // Each stored point's fitness and flags, in index order.
  virtual std::vector<scored_point> scored_points(std::int64_t job_id) = 0;

  // The result cache (DESIGN.md §4): a job records what it measures where; a later job with the
  // same key is answered from the newest complete, succeeded one.
  virtual void set_cache_key(std::int64_t id, const std::string& key) = 0;
  virtual std::optional<std::int64_t> find_cached(const std::string& key,
                                                  std::int64_t except_id) = 0;
  // Copies job `from`'s results into `to`, each read back with {"cache":{"hit":true,
  // "job_id":N}} as its last member, with its progress and best point, in one transaction.
  // Returns N: the job that measured them, or nothing (and nothing copied) if `from` was
  // deleted meanwhile.
  virtual std::optional<std::int64_t> copy_cached_results(std::int64_t from, std::int64_t to,
                                                          std::int64_t now_ms) = 0;

  // Each device's measured roofline, JSON, by a key naming the device.
  virtual std::optional<std::string> roofline(const std::string& device_key) = 0;
  virtual void put_roofline(const std::string& device_key, const std::string& roofline_json,
                            std::int64_t measured_ms) = 0;
  virtual cancel_outcome cancel(std::int64_t id, std::int64_t now_ms) = 0;
  // Deletes a job that ended (succeeded, failed or cancelled) with its spec, labels and results,
  // in one transaction; a queued or running one is left as it is (not_finished). A task's job
  // stays counted against its agent's bound on submissions (agent_submissions). A result cache
  // row copied from it keeps naming it as the job that measured it.
  virtual delete_outcome delete_job(std::int64_t id) = 0;
  // The ids of up to `limit` jobs that ended before `before_ms`, those that ended first first
  // (for a retention sweep, which deletes them one by one with delete_job).
  virtual std::vector<std::int64_t> ended_before(std::int64_t before_ms, std::size_t limit) = 0;

  // Stores points and advances their jobs' progress, all in one transaction (group commit: one
  // commit costs about as much as tens of rows). A point already stored is left as it was, and
  // counted once: writing a point twice is harmless. A point of a job that was deleted is
  // dropped.
  virtual void add_results(std::span<const result_row> rows, std::int64_t now_ms) = 0;
  virtual std::vector<std::uint64_t> result_indices(std::int64_t job_id) = 0;
  virtual std::vector<stored_result> results(std::int64_t job_id, std::uint64_t offset,
                                             std::uint64_t limit) = 0;
  // Rows with index > after_index, in index order: the next page of a long read without
  // OFFSET's cost of walking every row before it.
  virtual std::vector<stored_result> results_after(std::int64_t job_id, std::uint64_t after_index,
                                                   std::uint64_t limit) = 0;

  // Nodes and their devices. join() registers a starting node (throws node_conflict when a
  // live node has its name), heartbeat() says it is alive and how its devices are, leave() that
  // it stopped cleanly. A node is live while its heartbeats are younger than its lease.
  virtual void join(const node_record& node, std::int64_t now_ms) = 0;
  virtual void heartbeat(const std::string& node, std::span<const device_record> devices,
                         std::int64_t now_ms) = 0;
  virtual void leave(const std::string& node, std::int64_t now_ms) = 0;
  virtual std::vector<node_record> nodes(std::int64_t now_ms) = 0;
  // Every node's devices, by node then index.
  virtual std::vector<device_record> devices(std::int64_t now_ms) = 0;

  // Events across nodes: publish_event() hands an event to every other node sharing the store,
  // whose subscriber (set once, before join) is called with it on a thread of the store's. A
  // store only one daemon uses (SQLite) has no other nodes and drops them. After the store lost
  // its connection to the other nodes and has it again, the subscriber gets an event of type
  // "reset" (data {}): what they announced meanwhile is lost. When, reconnecting, it finds that
  // another live daemon took the node's name meanwhile, it gets "name_lost" (data: the reason,
  // as text) and keeps trying to take the name back.
  virtual void publish_event(const store_event& event) = 0;
  virtual void subscribe(std::function<void(const store_event&)> on_event) = 0;

  virtual std::map<job_status, std::int64_t> count_by_status() = 0;
  // Reads one row: throws storage_error if the database cannot be read (readiness).
  virtual void ping() = 0;
  // What the store reports for GET /metrics.
  virtual std::vector<store_metric> metrics() = 0;
};

}  // namespace kernelscan
