// kernelscan: `serve` runs the daemon; `worker` is started by it, one per device; `submit`,
// `bench`, `jobs`, `results`, `cancel`, `confirm`, `delete`, `rerun`, `devices`, `roofline` and
// `compare` are the command-line client of a running daemon.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "server/cli_commands.hpp"
#include "server/daemon.hpp"
#include "server/worker_main.hpp"

#ifndef KERNELSCAN_VERSION
#define KERNELSCAN_VERSION "dev"
#endif

namespace {

// Settings come from, in order of precedence: the command line, KERNELSCAN_* environment
// variables, the config file (--config FILE or KERNELSCAN_CONFIG), the built-in defaults. The
// file is read with CLI11's TOML reader and its settings become arguments, unless the command
// line or the environment already sets them. (CLI11 2.1 applies a config file before the
// environment, which would let a file override an operator's environment.)
std::vector<std::string> with_config_file(CLI::App& serve, std::vector<std::string> args) {
  std::string path;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config" && i + 1 < args.size()) path = args[i + 1];
    if (args[i].rfind("--config=", 0) == 0) path = args[i].substr(9);
  }
  if (path.empty()) {
    if (const char* env = std::getenv("KERNELSCAN_CONFIG")) path = env;
  }
  if (path.empty()) return args;

  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_file(path);
  } catch (const CLI::Error& e) {
    std::cerr << "config file " << path << ": " << e.what() << "\n";
    std::exit(2);
  }
  for (const auto& item : items) {
    std::string key = item.name;
    std::replace(key.begin(), key.end(), '_', '-');
    const bool section_ok =
        item.parents.empty() || (item.parents.size() == 1 && item.parents[0] == "serve");
    if (item.name == "++" || item.name == "--") continue;  // section markers
    CLI::Option* opt = section_ok ? serve.get_option_no_throw("--" + key) : nullptr;
    if (!opt || key == "config" || key == "help") {
      std::cerr << "config file " << path << ": unknown setting \"" << item.fullname()
                << "\" (settings are serve's long options without the dashes, such as "
                   "listen = \"127.0.0.1:8080\")\n";
      std::exit(2);
    }
    const bool on_command_line = std::any_of(args.begin(), args.end(), [&](const std::string& a) {
      return a == "--" + key || a.rfind("--" + key + "=", 0) == 0;
    });
    const std::string env = opt->get_envname();
    if (on_command_line || (!env.empty() && std::getenv(env.c_str()))) continue;
    const std::string value = item.inputs.empty() ? "" : item.inputs.front();
    if (opt->get_expected_min() == 0) {  // a flag
      if (value == "true" || value == "1") args.push_back("--" + key);
      continue;
    }
    args.push_back("--" + key + "=" + value);
  }
  return args;
}

// `kernelscan --server URL jobs`: --server and --token belong to each client subcommand; given
// before its name they are moved behind it, where its parser reads them.
std::vector<std::string> client_options_behind_command(std::vector<std::string> args,
                                                       const std::set<std::string>& commands) {
  std::size_t at = 0;
  while (at < args.size()) {
    if (args[at] == "--server" || args[at] == "--token") {
      at += 2;
    } else if (args[at].rfind("--server=", 0) == 0 || args[at].rfind("--token=", 0) == 0) {
      at += 1;
    } else {
      break;
    }
  }
  if (at == 0 || at >= args.size() || !commands.count(args[at])) return args;
  std::rotate(args.begin(), args.begin() + at, args.begin() + at + 1);
  return args;
}

// The command a mistyped first argument was meant to be: that argument, where it is neither an
// option nor one of `app`'s subcommands (after any --server and --token the client's commands
// take before their name); empty otherwise. CLI11 would only say that a subcommand is required.
std::string unknown_command(const std::vector<std::string>& args, CLI::App& app) {
  std::size_t at = 0;
  while (at + 1 < args.size() && (args[at] == "--server" || args[at] == "--token"))
    at += 2;
  while (at < args.size() &&
         (args[at].rfind("--server=", 0) == 0 || args[at].rfind("--token=", 0) == 0))
    ++at;
  if (at >= args.size() || args[at].empty() || args[at][0] == '-') return "";
  for (const CLI::App* cmd : app.get_subcommands([](CLI::App*) { return true; }))
    if (cmd->check_name(args[at])) return "";
  return args[at];
}

// The client subcommands' options; the subcommand that was chosen runs with them. Each
// subcommand has its own --server and --token: CLI11 fills an option from its environment
// variable when the option is not on the command line, also for the subcommands that were not
// chosen, so one variable shared by all three would end up with the environment's value
// whenever the chosen one's option was given.
struct client_commands {
  kernelscan::client_options submit_client, jobs_client, results_client, bench_client,
      cancel_client, confirm_client, delete_client, rerun_client, tasks_client, evaluate_client,
      devices_client, roofline_client, compare_client;
  kernelscan::submit_options submit;
  kernelscan::jobs_options jobs;
  kernelscan::results_options results;
  kernelscan::bench_command_options bench;
  std::vector<std::int64_t> cancel_ids;
  std::vector<std::int64_t> confirm_ids;
  kernelscan::delete_options del;
  kernelscan::rerun_options rerun;
  kernelscan::tasks_options tasks;
  kernelscan::evaluate_options evaluate;
  std::string devices_format = "table";
  kernelscan::roofline_options roofline;
  kernelscan::compare_options compare;
  CLI::App* submit_cmd = nullptr;
  CLI::App* jobs_cmd = nullptr;
  CLI::App* results_cmd = nullptr;
  CLI::App* bench_cmd = nullptr;
  CLI::App* cancel_cmd = nullptr;
  CLI::App* confirm_cmd = nullptr;
  CLI::App* delete_cmd = nullptr;
  CLI::App* rerun_cmd = nullptr;
  CLI::App* tasks_cmd = nullptr;
  CLI::App* evaluate_cmd = nullptr;
  CLI::App* devices_cmd = nullptr;
  CLI::App* roofline_cmd = nullptr;
  CLI::App* compare_cmd = nullptr;
};

// A job id as `kernelscan jobs` lists them: a positive integer.
CLI::Validator job_id_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::int64_t id = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
        if (ec == std::errc() && end == text.data() + text.size() && id >= 1) return "";
        return "\"" + text +
               "\" is not a job id (a positive integer, as `kernelscan jobs` lists them)";
      },
      "JOB_ID");
}

// A number from `low` to `high` (an integer where `integer`); CLI::Range says "not in range"
// of a value that is not a number at all.
CLI::Validator number_from(double low, double high, bool integer) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || end != text.data() + text.size())
          return "\"" + text + "\" is not a number";
        if (integer && v != static_cast<double>(static_cast<std::int64_t>(v)))
          return "\"" + text + "\" is not a whole number";
        if (v < low || v > high) {
          std::ostringstream range;
          range.precision(12);
          range << text << " is not from " << low << " to " << high;
          return range.str();
        }
        return "";
      },
      integer ? "INT" : "NUMBER");
}

void add_client_commands(CLI::App& app, client_commands& c) {
  auto common = [](CLI::App* cmd, kernelscan::client_options& client) {
    cmd->add_option("--server", client.server, "URL of the daemon")
        ->envname("KERNELSCAN_SERVER")
        ->capture_default_str();
    cmd->add_option("--token", client.token, "Bearer token, for a daemon started with --token-file")
        ->envname("KERNELSCAN_TOKEN");
    return cmd;
  };
  // --wait [SECONDS] of a command that makes a job (`which`: "the job", "the new job").
  auto wait_for_job = [](CLI::App* cmd, double& wait_s, const std::string& which) {
    cmd->add_option("--wait", wait_s,
                    "Wait for " + which +
                        " to end, in long polls of SECONDS (default 60), then print its results; "
                        "exit 1 unless it succeeded and no point failed verification")
        ->expected(0, 1)
        ->type_name("[SECONDS]")
        ->check(number_from(0.001, 600, false));
  };

  auto& s = c.submit;
  c.submit_cmd =
      common(app.add_subcommand("submit", "Submit a job to a running daemon"), c.submit_client);
  c.submit_cmd->add_option("FILE", s.file, "Job spec (JSON); - reads standard input")->required();
  wait_for_job(c.submit_cmd, s.wait_s, "the job");
  c.submit_cmd->add_option("--idempotency-key", s.idempotency_key,
                           "Sent as Idempotency-Key: a retry with the same key and spec returns "
                           "the job already created");

  auto& j = c.jobs;
  c.jobs_cmd =
      common(app.add_subcommand("jobs", "List a daemon's jobs, newest first"), c.jobs_client);
  j.limit = 20;
  c.jobs_cmd->add_option("--status", j.status,
                         "Only jobs in these states, comma-separated (queued, running, "
                         "succeeded, failed, cancelled)");
  c.jobs_cmd
      ->add_option("--label", j.labels,
                   "Only jobs with this label, KEY=VALUE; repeat to require several")
      ->allow_extra_args(false);
  c.jobs_cmd->add_option("--task", j.task, "Only the jobs submitted to this evaluation task");
  c.jobs_cmd->add_option("--limit", j.limit, "Most jobs to list")
      ->check(number_from(1, 1000000, true))
      ->capture_default_str();
  c.jobs_cmd->add_option("--format", j.format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();

  auto& r = c.results;
  c.results_cmd = common(app.add_subcommand("results", "Print a job's results"), c.results_client);
  r.format = "table";
  c.results_cmd->add_option("ID", r.id, "Job id")->required()->check(job_id_validator());
  c.results_cmd
      ->add_option("--format", r.format,
                   "table (a report), or csv or json as the API gives them, all rows")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  c.results_cmd
      ->add_option("--page-size", r.page_size,
                   "Rows per request: every row is read, in pages of this many")
      ->check(number_from(1, 1000000, true))
      ->capture_default_str();

  auto& b = c.bench;
  auto& bo = b.bench;
  c.bench_cmd = common(app.add_subcommand("bench",
                                          "Measure kernels of a source file (.cu, .hip, .cl) "
                                          "over a sweep, side by side, without writing JSON"),
                       c.bench_client);
  c.bench_cmd
      ->add_option("FILE", bo.file,
                   "Kernel source, or a job file (.json) whose kernels name their source_file")
      ->required();
  c.bench_cmd->add_option("KERNEL", bo.entries,
                          "The kernels to measure (two or more: side by side, one job)");
  c.bench_cmd->add_option("--sweep", bo.sweeps,
                          "NAME=FROM..TO:xMUL, NAME=FROM..TO:+STEP, NAME=V,V,... or NAME=EXPR "
                          "(a name set from others, as M=N); repeat per parameter");
  c.bench_cmd->add_option("--size", bo.sizes,
                          "Elements of a pointer parameter, BUFFER=EXPR, or EXPR for every "
                          "buffer not named");
  c.bench_cmd->add_option("--value", bo.values,
                          "A scalar parameter no sweep parameter names: NAME=EXPR");
  c.bench_cmd->add_option("--output", bo.outputs,
                          "Buffers the kernels write (default: their non-const pointers)");
  c.bench_cmd->add_option("--scratch", bo.scratch,
                          "Workspaces the kernels write, neither input nor output (not checked)");
  c.bench_cmd->add_option("--inout", bo.inouts,
                          "Buffers the kernels read and write in place: they start with random "
                          "data, and are checked (default: a kernel's only buffer)");
  c.bench_cmd->add_option("--block", bo.blocks,
                          "Threads per block X[,Y[,Z]]; KERNEL=X,Y,Z for one kernel");
  c.bench_cmd->add_option("--grid", bo.grids,
                          "Blocks X[,Y[,Z]], expressions such as cdiv(N,16); KERNEL=... for one "
                          "kernel");
  c.bench_cmd->add_option("--option", bo.compile_options,
                          "A compile option (-O3, -DTILE=16, -DTILE=T for a sweep parameter)");
  c.bench_cmd->add_option("--flops", bo.flops, "Floating-point operations per launch (EXPR)");
  c.bench_cmd->add_option("--bytes", bo.bytes, "Bytes moved per launch (EXPR)");
  c.bench_cmd->add_option("--reference", bo.reference,
                          "What the outputs are checked against: a kernel of the file, or a "
                          "JSON object as the job spec's kernel.reference");
  c.bench_cmd->add_option("--baseline", bo.baseline, "The kernel the others are compared with");
  c.bench_cmd->add_option("--dtype", bo.dtype,
                          "Element type of parameters whose type is not built in (a template "
                          "parameter): f32, f16, bf16, f64, i32, ...");
  c.bench_cmd->add_option("--language", bo.language, "hip, cuda or opencl (default: from FILE)")
      ->check(CLI::IsMember({"hip", "cuda", "opencl"}));
  c.bench_cmd->add_option("--engine", bo.engine, "auto, hip, opencl or mock")
      ->check(CLI::IsMember({"auto", "hip", "opencl", "mock"}));
  c.bench_cmd->add_option("--device", bo.device, "any, an index, or NODE/INDEX in a fleet");
  c.bench_cmd->add_option("--l2", bo.l2, "cold (caches flushed before each sample) or hot")
      ->check(CLI::IsMember({"cold", "hot"}));
  c.bench_cmd->add_flag("--no-cache", bo.no_cache,
                        "Measure afresh, even where an identical job's results could answer "
                        "(the result cache)");
  c.bench_cmd->add_option("--name", bo.name, "The job's name (default: file and kernels)");
  c.bench_cmd->add_option("--label", bo.labels, "KEY=VALUE; repeat for several")
      ->allow_extra_args(false);
  c.bench_cmd->add_flag("--dry-run", b.dry_run, "Print the job spec, send nothing");
  c.bench_cmd->add_flag("--no-wait", b.no_wait, "Submit and return, without the report");
  c.bench_cmd->add_option("--wait", b.wait_s, "Seconds each long poll is held")
      ->check(number_from(0.001, 600, false))
      ->capture_default_str();

  c.cancel_cmd = common(app.add_subcommand("cancel", "Cancel jobs"), c.cancel_client);
  c.cancel_cmd->add_option("ID", c.cancel_ids, "Job ids")->required()->check(job_id_validator());

  c.confirm_cmd = common(app.add_subcommand("confirm",
                                            "Confirm jobs' withheld scores (an excessive "
                                            "speedup an operator has looked at)"),
                         c.confirm_client);
  c.confirm_cmd->add_option("ID", c.confirm_ids, "Job ids")->required()->check(job_id_validator());

  c.delete_cmd = common(app.add_subcommand("delete",
                                           "Delete jobs that ended, with their results, spec and "
                                           "labels (it cannot be undone): by id, or every one "
                                           "matching filters"),
                        c.delete_client);
  c.delete_cmd->add_option("ID", c.del.ids, "Job ids (cancel a queued or running job first)")
      ->check(job_id_validator());
  c.delete_cmd->add_option("--status", c.del.status,
                           "Every job that ended in these states, comma-separated (succeeded, "
                           "failed, cancelled; default: all three)");
  c.delete_cmd
      ->add_option("--label", c.del.labels,
                   "Every job that ended with this label, KEY=VALUE; repeat to require several")
      ->allow_extra_args(false);
  c.delete_cmd->add_option("--task", c.del.task,
                           "Every job that ended submitted to this evaluation task");
  c.delete_cmd
      ->add_option("--older-than-days", c.del.older_than_days,
                   "Every job that ended more than this many days ago (fractions allowed)")
      ->check(number_from(0, 36500, false));
  c.delete_cmd->add_flag("--dry-run", c.del.dry_run,
                         "List the jobs the filters match, delete nothing");

  c.rerun_cmd = common(app.add_subcommand("rerun",
                                          "Submit a job's spec again, to be measured afresh "
                                          "(not from the result cache, with inputs of a new seed)"),
                       c.rerun_client);
  c.rerun_cmd->add_option("ID", c.rerun.id, "Job id")->required()->check(job_id_validator());
  wait_for_job(c.rerun_cmd, c.rerun.wait_s, "the new job");

  c.tasks_cmd = common(app.add_subcommand("tasks",
                                          "List the evaluation tasks, or show one: what a "
                                          "candidate kernel must take and how it is scored"),
                       c.tasks_client);
  c.tasks_cmd->add_option("NAME", c.tasks.name, "A task's name (default: list them all)");
  c.tasks_cmd->add_option("--format", c.tasks.format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();

  auto& e = c.evaluate;
  c.evaluate_cmd = common(app.add_subcommand("evaluate",
                                             "Submit a candidate kernel to an evaluation task, "
                                             "wait, and print its results and score"),
                          c.evaluate_client);
  c.evaluate_cmd->add_option("TASK", e.task, "The task's name (kernelscan tasks lists them)")
      ->required();
  c.evaluate_cmd->add_option("FILE", e.file, "The candidate's source")->required();
  c.evaluate_cmd->add_option("--entry", e.entry, "The kernel's name (default: the task's)");
  c.evaluate_cmd->add_option("--block", e.block,
                             "X[,Y[,Z]]: threads a block, numbers or expressions of the sizes "
                             "(default: the task's)");
  c.evaluate_cmd->add_option("--grid", e.grid,
                             "X[,Y[,Z]]: blocks, numbers or expressions (default: the task's)");
  c.evaluate_cmd->add_option("--shared-bytes", e.shared_bytes,
                             "Dynamic shared memory a block, a number or an expression");
  c.evaluate_cmd
      ->add_option("--option", e.compile_options,
                   "A compiler option; repeat for several (replaces the task's)")
      ->allow_extra_args(false);
  c.evaluate_cmd->add_option("--name", e.name, "The job's name");
  c.evaluate_cmd->add_option("--label", e.labels, "KEY=VALUE; repeat for several")
      ->allow_extra_args(false);
  c.evaluate_cmd->add_option("--idempotency-key", e.idempotency_key,
                             "Sent as Idempotency-Key: a retry with the same key is answered "
                             "with the job already made, and counts once");
  c.evaluate_cmd->add_flag("--no-wait", e.no_wait, "Submit and return, without the report");
  c.evaluate_cmd
      ->add_option("--format", e.format,
                   "table (the report and its score) or json (the job, its summary.fitness "
                   "included, for a script)")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  c.evaluate_cmd->add_option("--wait", e.wait_s, "Seconds each long poll is held")
      ->check(number_from(0.001, 600, false))
      ->capture_default_str();

  c.devices_cmd = common(app.add_subcommand("devices", "List the devices (of the whole fleet)"),
                         c.devices_client);
  c.devices_cmd->add_option("--format", c.devices_format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();

  c.roofline_cmd = common(app.add_subcommand("roofline",
                                             "Measure a device's roofline again, between its "
                                             "jobs; with --wait, print its new ceilings"),
                          c.roofline_client);
  c.roofline_cmd->add_option("INDEX", c.roofline.index, "The device's index on its node")
      ->required()
      ->check(number_from(0, 1000000, true));
  c.roofline_cmd->add_option("--node", c.roofline.node,
                             "The device's node in a fleet (default: the daemon's own)");
  c.roofline_cmd->add_flag("--wait", c.roofline.wait, "Wait for the new ceilings and print them");
  c.roofline_cmd->add_option("--timeout", c.roofline.timeout_s, "Seconds the wait may take")
      ->check(number_from(0, 86400, false))
      ->capture_default_str();

  c.compare_cmd = common(app.add_subcommand("compare",
                                            "Compare jobs on the sweep parameters they share, "
                                            "or the variants of one job"),
                         c.compare_client);
  c.compare_cmd->add_option("ID", c.compare.ids, "Job ids: two or more, or one with variants")
      ->required()
      ->check(job_id_validator());
  c.compare_cmd->add_option("--base", c.compare.base,
                            "The baseline: a job id, or a variant's name (default: the first)");
  c.compare_cmd
      ->add_option("--max-slowdown", c.compare.max_slowdown_pct,
                   "A gate: exit 1 where a point is slower than the baseline's by more than "
                   "this many percent beyond their 95% intervals, the geometric mean is, or a "
                   "point failed or had its score voided where the baseline's did not")
      ->check(number_from(0, 100, false));
}

// The exit code of the client subcommand that was chosen, or -1 when none was.
int run_client_command(client_commands& c) {
  using namespace kernelscan;
  if (*c.submit_cmd) {
    c.submit.wait = c.submit_cmd->count("--wait") > 0;
    return run_submit(c.submit_client, c.submit, std::cin, std::cout, std::cerr);
  }
  if (*c.jobs_cmd) return run_jobs(c.jobs_client, c.jobs, std::cout, std::cerr);
  if (*c.results_cmd) return run_results(c.results_client, c.results, std::cout, std::cerr);
  if (*c.bench_cmd) return run_bench(c.bench_client, c.bench, std::cout, std::cerr);
  if (*c.cancel_cmd) return run_cancel(c.cancel_client, c.cancel_ids, std::cout, std::cerr);
  if (*c.confirm_cmd) return run_confirm(c.confirm_client, c.confirm_ids, std::cout, std::cerr);
  if (*c.delete_cmd) return run_delete(c.delete_client, c.del, std::cout, std::cerr);
  if (*c.rerun_cmd) {
    c.rerun.wait = c.rerun_cmd->count("--wait") > 0;
    return run_rerun(c.rerun_client, c.rerun, std::cout, std::cerr);
  }
  if (*c.tasks_cmd) return run_tasks(c.tasks_client, c.tasks, std::cout, std::cerr);
  if (*c.evaluate_cmd) return run_evaluate(c.evaluate_client, c.evaluate, std::cout, std::cerr);
  if (*c.devices_cmd) return run_devices(c.devices_client, c.devices_format, std::cout, std::cerr);
  if (*c.roofline_cmd) return run_roofline(c.roofline_client, c.roofline, std::cout, std::cerr);
  if (*c.compare_cmd) return run_compare(c.compare_client, c.compare, std::cout, std::cerr);
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kernelscan;
  CLI::App app{"kernelscan: a GPU kernel profiling daemon with an HTTP/JSON API", "kernelscan"};
  app.require_subcommand(1);
  app.set_version_flag("--version", KERNELSCAN_VERSION);

  serve_config sc;
  auto* serve = app.add_subcommand("serve", "Run the daemon");
  std::string config_file;
  serve
      ->add_option("--config", config_file,
                   "Config file (TOML: key = value, keys as the long options; see "
                   "deploy/kernelscan.example.toml)")
      ->envname("KERNELSCAN_CONFIG");
  auto env = [](CLI::Option* o, const char* name) {
    return o->envname(name)->capture_default_str();
  };
  env(serve->add_option("--listen", sc.listen, "HOST:PORT to serve on (port 0: any free port)"),
      "KERNELSCAN_LISTEN");
  env(serve->add_option("--data-dir", sc.data_dir, "Directory of the SQLite database"),
      "KERNELSCAN_DATA_DIR");
  env(serve->add_option("--database", sc.database,
                        "PostgreSQL URL (postgresql://USER@HOST/DB): every daemon on one database "
                        "serves one queue (a fleet); without it, SQLite in --data-dir"),
      "KERNELSCAN_DATABASE");
  env(serve
          ->add_option("--database-password-file", sc.database_password_file,
                       "File holding the PostgreSQL password (else the URL's, PGPASSWORD or "
                       "~/.pgpass)")
          ->check(CLI::ExistingFile),
      "KERNELSCAN_DATABASE_PASSWORD_FILE");
  env(serve->add_option("--database-pool", sc.database_pool, "Connections to PostgreSQL")
          ->check(CLI::Range(2, 256)),
      "KERNELSCAN_DATABASE_POOL");
  env(serve->add_option("--node", sc.node,
                        "This daemon's name in the fleet (default: the host name); two live "
                        "daemons on one database must not share one"),
      "KERNELSCAN_NODE");
  env(serve
          ->add_option("--lease-timeout", sc.lease_timeout_s,
                       "Seconds after which a node that stopped renewing its leases (it died, or "
                       "lost the database) loses its jobs to the other nodes")
          ->check(CLI::Range(1.0, 600.0)),
      "KERNELSCAN_LEASE_TIMEOUT");
  env(serve
          ->add_option("--engine", sc.engine,
                       "Devices to serve: auto (the GPUs found through HIP or OpenCL, else mock "
                       "devices), hip (HIP GPUs only), opencl (every OpenCL device, CPUs "
                       "included), mock, or all (every device found, and mock devices)")
          ->check(CLI::IsMember({"auto", "hip", "opencl", "mock", "all"})),
      "KERNELSCAN_ENGINE");
  env(serve->add_option("--mock-devices", sc.mock_devices, "Number of mock devices"),
      "KERNELSCAN_MOCK_DEVICES");
  env(serve->add_option("--mock-model", sc.mock_model, "Catalog GPU the mock devices imitate"),
      "KERNELSCAN_MOCK_MODEL");
  env(serve->add_option("--log-level", sc.log_level, "trace, debug, info, warn, error")
          ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"})),
      "KERNELSCAN_LOG_LEVEL");
  env(serve->add_option("--log-format", sc.log_format, "text, or json: one object per line")
          ->check(CLI::IsMember({"text", "json"})),
      "KERNELSCAN_LOG_FORMAT");
  env(serve->add_option("--web-root", sc.web_root, "Serve the dashboard from this directory"),
      "KERNELSCAN_WEB_ROOT");
  env(serve->add_option("--port-file", sc.port_file, "Write the bound port to this file"),
      "KERNELSCAN_PORT_FILE");
  env(serve->add_flag("--allow-fault-injection", sc.allow_fault_injection,
                      "Accept mock.fault in jobs, and KERNELSCAN_MOCK_ROOFLINE_FAULT=crash on mock "
                      "devices (tests only)"),
      "KERNELSCAN_ALLOW_FAULT_INJECTION");
  env(serve->add_flag("--score-excessive-speedups", sc.score_excessive_speedups,
                      "Score jobs with an excessive_speedup point at once, without waiting for "
                      "an operator to confirm them"),
      "KERNELSCAN_SCORE_EXCESSIVE_SPEEDUPS");
  env(serve->add_option("--http-threads", sc.http_threads, "Threads serving HTTP requests")
          ->check(CLI::Range(4, 1024)),
      "KERNELSCAN_HTTP_THREADS");
  env(serve
          ->add_option("--max-long-polls", sc.max_long_polls,
                       "Requests that may wait on jobs (?wait=) at once")
          ->check(CLI::Range(0, 1000)),
      "KERNELSCAN_MAX_LONG_POLLS");
  env(serve
          ->add_option("--max-event-streams", sc.max_event_streams,
                       "Server-Sent Event streams (GET /api/v1/events) open at once")
          ->check(CLI::Range(0, 1000)),
      "KERNELSCAN_MAX_EVENT_STREAMS");
  env(serve
          ->add_option("--point-timeout", sc.point_timeout_s,
                       "Watchdog seconds per point, on top of twice its timing budget")
          ->check(CLI::Range(0.1, 86400.0)),
      "KERNELSCAN_POINT_TIMEOUT");
  env(serve
          ->add_option("--compile-timeout", sc.compile_timeout_s,
                       "Seconds one user kernel's compile may take (0: no limit)")
          ->check(CLI::Range(0.0, 86400.0)),
      "KERNELSCAN_COMPILE_TIMEOUT");
  env(serve->add_option("--compile-memory", sc.compile_memory_bytes,
                        "Bytes of memory one user kernel's compile may take (0: no limit)"),
      "KERNELSCAN_COMPILE_MEMORY");
  env(serve
          ->add_option("--drain-timeout", sc.drain_timeout_s,
                       "Seconds current points may take to finish on SIGTERM")
          ->check(CLI::Range(0.0, 3600.0)),
      "KERNELSCAN_DRAIN_TIMEOUT");
  env(serve
          ->add_option("--retention-days", sc.retention_days,
                       "Delete the jobs that ended more than this many days ago, with their "
                       "results (fractions allowed; 0: keep every job)")
          ->check(CLI::Range(0.0, 36500.0)),
      "KERNELSCAN_RETENTION_DAYS");
  env(serve
          ->add_option("--token-file", sc.token_file,
                       "Bearer tokens, one per line: POST requests then need one")
          ->check(CLI::ExistingFile),
      "KERNELSCAN_TOKEN_FILE");
  env(serve
          ->add_option("--operator-token-file", sc.operator_token_file,
                       "Operator tokens, one per line: creating and retiring tasks, seeing "
                       "held-out points, confirming withheld scores and deleting jobs then need "
                       "one (they are valid write tokens too)")
          ->check(CLI::ExistingFile),
      "KERNELSCAN_OPERATOR_TOKEN_FILE");
  env(serve->add_flag("--auth-reads", sc.auth_reads, "GET requests need a token too"),
      "KERNELSCAN_AUTH_READS");
  env(serve
          ->add_option("--rate-limit", sc.rate_limit,
                       "Job submissions per minute per client address (0: unlimited)")
          ->check(CLI::Range(0.0, 1e9)),
      "KERNELSCAN_RATE_LIMIT");
  env(serve->add_option("--cors-origin", sc.cors_origin,
                        "Browser origins allowed to call the API: * or a comma-separated list"),
      "KERNELSCAN_CORS_ORIGIN");
  env(serve->add_option("--max-body-bytes", sc.max_body_bytes, "Largest request body")
          ->check(CLI::Range(std::size_t{1024}, k_max_body_bytes_setting)),
      "KERNELSCAN_MAX_BODY_BYTES");
  env(serve->add_option("--max-sweep-points", sc.limits.max_points, "Sweep points per job")
          ->check(CLI::Range(1, 10000000)),
      "KERNELSCAN_MAX_SWEEP_POINTS");
  env(serve
          ->add_option("--max-source-bytes", sc.limits.max_source_bytes,
                       "Largest custom kernel source")
          ->check(CLI::Range(std::size_t{1}, k_max_source_bytes_setting)),
      "KERNELSCAN_MAX_SOURCE_BYTES");
  env(serve->add_option("--max-point-bytes", sc.limits.plan.max_point_bytes,
                        "Device memory one point may allocate (also capped by the device's)"),
      "KERNELSCAN_MAX_POINT_BYTES");

  worker_config wc;
  auto* worker = app.add_subcommand("worker", "Serve one device for the daemon (internal)");
  worker->group("");  // not listed in --help: never started by hand
  auto* device = worker->add_option("--device", wc.device);
  auto* probe = worker->add_flag("--probe", wc.probe, "Report the devices found, then exit");
  device->excludes(probe);
  worker->add_option("--engine", wc.engine)->check(CLI::IsMember({"mock", "hip", "opencl"}));
  worker->add_option("--mock-model", wc.mock_model);
  worker->add_option("--log-level", wc.log_level);
  worker->add_option("--log-format", wc.log_format);
  worker->add_flag("--allow-fault-injection", wc.allow_fault_injection);
  worker->add_option("--point-timeout", wc.point_timeout_s);
  worker->add_option("--compile-timeout", wc.compile_timeout_s);
  worker->add_option("--compile-memory", wc.compile_memory_bytes);
  worker->add_option("--phase-fd", wc.phase_fd);

  client_commands client;
  add_client_commands(app, client);

  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "serve") args = with_config_file(*serve, std::move(args));
  std::set<std::string> client_names;
  for (const CLI::App* cmd :
       {client.submit_cmd, client.jobs_cmd, client.results_cmd, client.bench_cmd, client.cancel_cmd,
        client.confirm_cmd, client.delete_cmd, client.rerun_cmd, client.devices_cmd,
        client.roofline_cmd, client.compare_cmd})
    client_names.insert(cmd->get_name());
  if (const std::string unknown = unknown_command(args, app); !unknown.empty()) {
    std::string commands;
    for (const CLI::App* cmd : app.get_subcommands([](CLI::App*) { return true; })) {
      if (cmd != worker) commands += (commands.empty() ? "" : ", ") + cmd->get_name();
    }
    std::cerr << "kernelscan: \"" << unknown << "\" is not a command (commands: " << commands
              << "; kernelscan --help says what each does)\n";
    return 2;
  }
  args = client_options_behind_command(std::move(args), client_names);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last to first
  try {
    app.parse(args);
  } catch (const CLI::ExtrasError&) {
    // CLI11 names unexpected arguments last to first; say them in the order they were given.
    const std::vector<std::string> extra = app.remaining(true);
    app.exit(CLI::ExtrasError(std::vector<std::string>(extra.rbegin(), extra.rend())));
    return 2;
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2, whatever CLI11's own code.
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (*serve) return run_serve(sc);
  if (*worker) {
    if (!wc.probe && !*device) {
      std::cerr << "worker: --device is required\n";
      return 2;
    }
    return run_worker(wc);
  }
  if (const int code = run_client_command(client); code >= 0) return code;
  return 2;
}
