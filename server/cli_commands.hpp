#pragma once
// The client subcommands of `kernelscan`: submit, bench, jobs, results, cancel, confirm, delete,
// rerun, tasks, evaluate, devices, roofline, compare. main.cpp parses the command
// line into these option structs; each run_* talks to the daemon named by client_options and
// returns the process exit code: 0 done (for submit --wait and bench: the job succeeded and no
// point's answers failed verification), 1 the job failed or was cancelled or a point's answers
// failed verification, the daemon answered an error or could not be reached, or the server did
// not answer as a kernelscan daemon does, 2 a usage error (an unreadable spec file or one over
// the daemon's default limits, a bad --server URL, a malformed --label), 128 + the signal where
// SIGINT or SIGTERM ended a wait (submit --wait leaves the job running, bench cancels it).
//
// Output: reports and tables go to `out`, errors to `err`. Threading: one command per process.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "server/cli_bench.hpp"

namespace kernelscan {

struct client_options {
  std::string server = "http://127.0.0.1:8080";
  std::string token;  // sent as Authorization: Bearer when not empty
};

struct submit_options {
  std::string file;  // a job spec JSON file, or "-" for standard input
  bool wait = false;
  double wait_s = 60;  // how long each long poll is held, 0 < wait_s <= 600
  std::string idempotency_key;
};

struct rerun_options {
  std::int64_t id = 0;
  bool wait = false;
  double wait_s = 60;  // as submit's
};

struct jobs_options {
  std::string status;               // comma-separated states; empty: any
  std::vector<std::string> labels;  // KEY=VALUE, all must match
  std::string task;                 // an evaluation task's name; empty: any
  std::int64_t limit = 20;
  std::string format = "table";  // table, json
};

// Jobs to delete: by id, or every job that ended matching filters (as `jobs` takes them).
struct delete_options {
  std::vector<std::int64_t> ids;
  std::string status;               // comma-separated ended states; empty: every ended state
  std::vector<std::string> labels;  // KEY=VALUE, all must match
  std::string task;                 // an evaluation task's name; empty: any
  double older_than_days = -1;      // only jobs that ended longer ago than this; -1: any
  bool dry_run = false;             // list what would be deleted, delete nothing
};

struct results_options {
  std::int64_t id = 0;
  std::string format = "table";   // table, csv, json
  std::int64_t page_size = 1000;  // rows per request
};

struct bench_command_options {
  bench_options bench;
  bool dry_run = false;  // print the spec, send nothing
  bool no_wait = false;  // submit and return
  double wait_s = 60;
};

// `kernelscan tasks [NAME]`: every task, or the one named.
struct tasks_options {
  std::string name;              // empty: list them all
  std::string format = "table";  // table, json
};

// `kernelscan evaluate TASK FILE`: a candidate's source and launch settings submitted to an
// evaluation task; what is not given is the task's default.
struct evaluate_options {
  std::string task;
  std::string file;  // the candidate's source
  std::string entry, shared_bytes, name;
  std::string block, grid;                   // X[,Y[,Z]], numbers or expressions
  std::vector<std::string> compile_options;  // replace the task's, where given
  std::vector<std::string> labels;           // KEY=VALUE
  std::string idempotency_key;
  bool no_wait = false;  // submit and return
  double wait_s = 60;
  std::string format = "table";  // table (the report), json (the job, for a script)
};

struct roofline_options {
  std::int64_t index = 0;  // the device's index on its node
  std::string node;        // empty: the answering daemon's own
  bool wait = false;       // until its new ceilings are in, then print them
  double timeout_s = 600;  // of the wait
  double poll_s = 0.2;     // how often the wait looks at the device
};

struct compare_options {
  std::vector<std::int64_t> ids;  // two or more jobs, or one job with variants
  std::string base;               // a job id or a variant's name; empty: the first
  std::int64_t page_size = 1000;
  double max_slowdown_pct = -1;  // a performance gate (compare_report's); -1: none
};

int run_submit(const client_options& client, const submit_options& opts, std::istream& in,
               std::ostream& out, std::ostream& err);
int run_jobs(const client_options& client, const jobs_options& opts, std::ostream& out,
             std::ostream& err);
int run_results(const client_options& client, const results_options& opts, std::ostream& out,
                std::ostream& err);
// Builds a job from a kernel source (or a job file naming source files), then runs it as
// submit --wait does; --dry-run prints the spec only. Exit 2 for a flag at fault, naming it.
int run_bench(const client_options& client, const bench_command_options& opts, std::ostream& out,
              std::ostream& err);
// Cancels each job; exit 1 when any cancel was refused (a finished job, an unknown id).
int run_cancel(const client_options& client, const std::vector<std::int64_t>& ids,
               std::ostream& out, std::ostream& err);
// Confirms each job's withheld score (an operator's call); exit 1 when any was refused (no
// operator token, a score that is not withheld, an unknown id).
int run_confirm(const client_options& client, const std::vector<std::int64_t>& ids,
                std::ostream& out, std::ostream& err);
// Deletes each job given, or every job that ended matching the filters, with its results; exit 1
// when any delete was refused (a job queued or running, an unknown id, no operator token where
// the daemon has them), 2 for ids and filters together, neither, or a state that has not ended.
int run_delete(const client_options& client, const delete_options& opts, std::ostream& out,
               std::ostream& err);
// Submits job `id`'s spec again as a new job, measured afresh (`cache: false`, a new seed); an
// imported job or a task's candidate is refused (exit 1). Then as submit.
int run_rerun(const client_options& client, const rerun_options& opts, std::ostream& out,
              std::ostream& err);
// The daemon's evaluation tasks as a table, or one task as a candidate's author reads it (or
// either as JSON). Exit 1 for an unknown task.
int run_tasks(const client_options& client, const tasks_options& opts, std::ostream& out,
              std::ostream& err);
// Submits a candidate to a task, then waits and prints its report and score as submit --wait
// does; exit 0 only where the job succeeded and every point is correct (its score is given, or
// withheld for an operator's confirmation), 1 otherwise or where the daemon refused the
// candidate (its fields named), 2 for a flag at fault or a source that cannot be sent.
int run_evaluate(const client_options& client, const evaluate_options& opts, std::ostream& out,
                 std::ostream& err);
// The devices of the daemon (of the fleet), as a table or JSON.
int run_devices(const client_options& client, const std::string& format, std::ostream& out,
                std::ostream& err);
// Asks a device to measure its roofline again (between its jobs); with `wait`, prints its new
// ceilings. Exit 1 when the daemon refuses (an unknown device, a node that is offline), the
// measurement fails, or the wait runs out.
int run_roofline(const client_options& client, const roofline_options& opts, std::ostream& out,
                 std::ostream& err);
int run_compare(const client_options& client, const compare_options& opts, std::ostream& out,
                std::ostream& err);

}  // namespace kernelscan
