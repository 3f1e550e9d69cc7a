#include "server/cli_commands.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <variant>

#include "api/detail/utf8.hpp"
#include "api/json.hpp"
#include "engine/device_catalog.hpp"
#include "server/cli_client.hpp"
#include "server/cli_compare.hpp"
#include "server/cli_interrupt.hpp"
#include "server/cli_job_table.hpp"
#include "server/cli_report.hpp"
#include "server/cli_task_report.hpp"
#include "server/config.hpp"
#include "server/detail/text_table.hpp"

namespace kernelscan {
namespace {

constexpr int k_ok = 0;
constexpr int k_failed = 1;
constexpr int k_usage = 2;

bool terminal(const json& job) {
  const std::string s = job.value("status", "");
  return s == "succeeded" || s == "failed" || s == "cancelled";
}

// `about`, where given, says which of several requests failed ("job 7").
void print_failure(std::ostream& err, const api_failure& e, const std::string& about = "") {
  err << "kernelscan: " << (about.empty() ? "" : about + ": ") << e.type() << " (HTTP "
      << e.status() << "): " << e.what() << "\n";
  // One {field, message} per problem; the message already says the first, so one problem
  // that it says is not said again.
  const auto& details = e.details();
  const auto line = [](const auto& d) {
    return (d.field.empty() ? "" : d.field + ": ") + d.message;
  };
  if (details.size() > 1 || (details.size() == 1 && line(details.front()) != e.what())) {
    for (const auto& d : details)
      err << "  " << line(d) << "\n";
  }
  if (e.status() == 401) {
    err << "  the token is given with --token TOKEN, or KERNELSCAN_TOKEN in the environment\n";
  }
}

// Runs `body` with a client for `opts`, turning the client's errors into messages and exit
// codes.
int with_client(const client_options& opts, std::ostream& err,
                const std::function<int(api_client&)>& body) {
  std::unique_ptr<api_client> client;
  try {
    client = std::make_unique<api_client>(opts.server, opts.token);
  } catch (const std::invalid_argument& e) {
    err << "kernelscan: " << e.what() << "\n";
    return k_usage;
  }
  try {
    return body(*client);
  } catch (const api_failure& e) {
    print_failure(err, e);
  } catch (const connection_error& e) {
    err << "kernelscan: " << e.what() << "\n";
  } catch (const foreign_answer& e) {
    err << "kernelscan: " << e.what() << "\n";
  } catch (const json::exception& e) {  // an answer without a field the command reads
    err << "kernelscan: the server at " << opts.server
        << " did not answer like a kernelscan daemon (an answer lacks what the command reads: "
        << untagged_json_error(e.what()) << ")\n";
  } catch (const std::exception& e) {  // an answer that is not what the API promises
    err << "kernelscan: the server at " << opts.server
        << " did not answer like a kernelscan daemon (" << e.what() << ")\n";
  }
  return k_failed;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Prints the job's report (its logs naming the source `source_name`, where given); returns its
// rows.
json print_report(api_client& client, const json& job, std::int64_t page_size, std::ostream& out,
                  const std::string& source_name = "") {
  json page = client.results_json(job.at("id").get<std::int64_t>(), page_size);
  out << results_report(job, page.at("results"), source_name);
  return std::move(page.at("results"));
}

// A waited-for job's exit code: 0 only where it succeeded and no point's answers were wrong (an
// ok point that failed verification is a kernel that does not work, however fast).
int outcome(const json& job, const json& rows) {
  if (job.value("status", "") != "succeeded") return k_failed;
  const bool wrong = std::any_of(rows.begin(), rows.end(), failed_verification);
  return wrong ? k_failed : k_ok;
}

// What a wait does with its job when SIGINT or SIGTERM comes: `bench` made the job for the
// report it prints and cancels it; `submit --wait` leaves it be (the job may be wanted) and says
// how to stop it.
enum class on_interrupt { leave, cancel };

// The job after one long poll, or nullopt where a signal came first. The poll runs on a thread of
// its own so that the wait looks at `watch` every 100 ms, however long the daemon holds the poll;
// a signal ends the poll by shutting the client's connection.
std::optional<json> poll_job(api_client& client, std::int64_t id, double wait_s,
                             const interrupt_watch& watch) {
  auto poll = std::async(std::launch::async, [&] { return client.job(id, wait_s); });
  constexpr auto k_look = std::chrono::milliseconds(100);
  while (poll.wait_for(k_look) != std::future_status::ready) {
    if (!watch.received()) continue;
    // Again until the poll ends: a request that had not begun the first time ends the next.
    do {
      client.interrupt();
    } while (poll.wait_for(k_look) != std::future_status::ready);
    client.resume();
    try {
      poll.get();
    } catch (const std::exception&) {  // the poll just ended
    }
    return std::nullopt;
  }
  return poll.get();
}

// The job's fate after a signal, said on `err`; the exit code of a command ended by `signal`.
int interrupted(api_client& client, const json& job, on_interrupt what, const char* command,
                int signal_number, std::ostream& err) {
  const std::string id = std::to_string(job.at("id").get<std::int64_t>());
  const std::string status = job.value("status", "running");
  err << "kernelscan " << command << ": interrupted: ";
  if (what == on_interrupt::leave) {
    err << "job " << id << " is still " << status << "; kernelscan cancel " << id << " stops it\n";
  } else {
    try {
      const json after = client.cancel(job.at("id").get<std::int64_t>());
      err << "cancelled job " << id
          << (after.value("status", "") == "running" ? " (it stops after the point being measured)"
                                                     : "")
          << "\n";
    } catch (const api_failure& e) {
      if (e.type() == "job_finished") {
        err << "job " << id << " had already ended\n";
      } else {
        err << "cancelling job " << id << " failed: " << e.type() << " (HTTP " << e.status()
            << "): " << e.what() << "; kernelscan cancel " << id << " stops it\n";
      }
    } catch (const std::exception& e) {  // unreachable, or not answering as the daemon does
      err << "cancelling job " << id << " failed: " << e.what() << "; kernelscan cancel " << id
          << " stops it\n";
    }
  }
  return 128 + signal_number;
}

// What a command submits.
struct job_request {
  std::string body{};             // the job spec, or a candidate's submission to `task`
  std::string idempotency_key{};  // "" for none
  // The evaluation task `body` is a candidate's submission to, where one is: the exit code then
  // says whether the candidate is correct everywhere (its fitness), not only whether its answers
  // passed verification.
  std::string task{};
  std::string source_name{};  // the file its kernel came from, where one did, for the report
};

// How a command waits for the job it submitted, and what it prints.
struct report_options {
  bool wait = true;
  double wait_s = 60;                                 // how long each long poll is held
  on_interrupt if_interrupted = on_interrupt::leave;  // what a signal during the wait does
  const char* command = "";                           // the command's name, for messages
  bool as_json = false;  // stdout gets the job as the API gives it, once (the ended job where
                         // it waits), and nothing else
};

// Submits `what`, prints the job's line, and with `how.wait` waits for its end and prints its
// report.
int submit_and_report(api_client& client, const job_request& what, const report_options& how,
                      std::ostream& out, std::ostream& err) {
  const bool wait = how.wait, as_json = how.as_json;
  std::optional<interrupt_watch> watch;
  if (wait) watch.emplace();  // before the submission: its job is then known to the wait
  auto [job, replayed] = client.submit(what.body, what.idempotency_key, what.task);
  if (!as_json) {
    out << job_summary_line(job)
        << (replayed ? " (submitted before with this Idempotency-Key)" : "") << "\n";
  }
  if (!wait) {
    if (as_json) out << job.dump() << "\n";
    return k_ok;
  }
  out.flush();  // the summary shows while the job runs
  const std::int64_t id = job.at("id").get<std::int64_t>();
  while (!terminal(job)) {
    std::optional<json> now;
    if (!watch->received()) now = poll_job(client, id, how.wait_s, *watch);
    if (!now) {
      const int signal_number = watch->received();
      watch->restore();  // a second Ctrl-C ends the client at once
      out.flush();
      return interrupted(client, job, how.if_interrupted, how.command, signal_number, err);
    }
    job = std::move(*now);
  }
  watch->restore();
  json rows = json::array();
  if (as_json) {
    out << job.dump() << "\n";
  } else {
    out << "\n";
    rows = print_report(client, job, results_options{}.page_size, out, what.source_name);
  }
  if (!what.task.empty()) {
    const json::json_pointer correct{"/summary/fitness/correct"};
    return job.value("status", "") == "succeeded" && job.contains(correct) && job[correct] == true
               ? k_ok
               : k_failed;
  }
  return outcome(job, rows);
}

// What the client reads of a file is held to the most any daemon may be set to take: a file
// within that is sent, and the daemon refuses what is over its own limits, naming them.
const std::size_t k_max_spec_bytes = k_max_body_bytes_setting;      // --max-body-bytes
const std::size_t k_max_source_bytes = k_max_source_bytes_setting;  // --max-source-bytes

// "4 MiB", "256 KiB".
std::string limit_text(std::size_t bytes) {
  return bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                : std::to_string(bytes >> 10) + " KiB";
}

// At most `limit` bytes of `in` into `text`; false where there is more (one byte past the limit
// is read to tell).
bool read_at_most(std::istream& in, std::size_t limit, std::string& text) {
  text.clear();
  char buf[65536];
  while (text.size() <= limit && in.read(buf, sizeof buf).gcount() > 0) {
    text.append(buf, std::min(static_cast<std::size_t>(in.gcount()), limit + 1 - text.size()));
  }
  return text.size() <= limit;
}

enum class read_result { ok, unreadable, too_large };

// `path` as text, at most `limit` bytes. unreadable with errno set where it cannot be read (a
// directory opens, but its read throws).
read_result read_text_file(const std::string& path, std::size_t limit, std::string& text) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return read_result::unreadable;
  try {
    file.exceptions(std::ios::badbit);
    return read_at_most(file, limit, text) ? read_result::ok : read_result::too_large;
  } catch (const std::ios_base::failure&) {
    if (errno == 0) errno = EIO;
    return read_result::unreadable;
  }
}

// Why `path` was not read, for an error message.
std::string unread_reason(read_result r, const std::string& path, std::size_t limit,
                          const char* limit_name) {
  if (r == read_result::too_large) {
    return path + " is larger than " + limit_text(limit) + ", the most a daemon takes as " +
           limit_name;
  }
  return "cannot read " + path + ": " + std::strerror(errno);
}

// Why a kernel source read from `path` cannot be sent, where it is not UTF-8 text: it travels
// in JSON, which holds nothing else.
std::optional<std::string> not_utf8_reason(const std::string& path, const std::string& text) {
  const std::size_t at = detail::first_invalid_utf8(text);
  if (at == std::string::npos) return std::nullopt;
  const std::size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
  const std::size_t column = at - (line_start == std::string::npos || at == 0 ? 0 : line_start + 1);
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[at]));
  return path + " is not UTF-8 text: byte " + byte + " at line " +
         std::to_string(std::count(text.begin(), text.begin() + std::ptrdiff_t(at), '\n') + 1) +
         ", column " + std::to_string(column + 1) +
         " (a kernel source travels in JSON, which holds UTF-8 only; save the file as UTF-8)";
}

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

}  // namespace

int run_submit(const client_options& client_opts, const submit_options& opts, std::istream& in,
               std::ostream& out, std::ostream& err) {
  std::string spec;
  const read_result read =
      opts.file == "-"
          ? (read_at_most(in, k_max_spec_bytes, spec) ? read_result::ok : read_result::too_large)
          : read_text_file(opts.file, k_max_spec_bytes, spec);
  if (read != read_result::ok) {
    err << "kernelscan submit: "
        << unread_reason(read, opts.file == "-" ? "standard input" : opts.file, k_max_spec_bytes,
                         "a request body (--max-body-bytes)")
        << "\n";
    return k_usage;
  }
  return with_client(client_opts, err, [&](api_client& client) {
    return submit_and_report(client, {.body = spec, .idempotency_key = opts.idempotency_key},
                             {.wait = opts.wait, .wait_s = opts.wait_s, .command = "submit"}, out,
                             err);
  });
}

int run_jobs(const client_options& client_opts, const jobs_options& opts, std::ostream& out,
             std::ostream& err) {
  job_filter filter{opts.status, {}, opts.task};
  for (const auto& l : opts.labels) {
    try {
      filter.labels.push_back(label_pair(l));
    } catch (const bench_error& e) {
      err << "kernelscan jobs: " << e.what() << "\n";
      return k_usage;
    }
  }
  return with_client(client_opts, err, [&](api_client& client) {
    const json list = client.jobs(filter, opts.limit);
    if (opts.format == "json") {
      out << list.dump(2) << "\n";
    } else {
      out << job_table(list.at("jobs"), now_ms());
    }
    return k_ok;
  });
}

int run_results(const client_options& client_opts, const results_options& opts, std::ostream& out,
                std::ostream& err) {
  return with_client(client_opts, err, [&](api_client& client) {
    if (opts.format == "csv") {
      out << client.results_csv(opts.id, opts.page_size);
    } else if (opts.format == "json") {
      out << client.results_json(opts.id, opts.page_size).dump() << "\n";
    } else {
      print_report(client, client.job(opts.id), opts.page_size, out);
    }
    return k_ok;
  });
}

int run_bench(const client_options& client_opts, const bench_command_options& opts,
              std::ostream& out, std::ostream& err) {
  const bench_options& b = opts.bench;
  json spec;
  std::string source_name = b.file;  // the kernels' file, as compile logs name it
  std::set<std::string> source_files;
  try {
    std::string text;
    const bool job_file = b.file.size() > 5 && b.file.substr(b.file.size() - 5) == ".json";
    if (const read_result r = job_file ? read_text_file(b.file, k_max_spec_bytes, text)
                                       : read_text_file(b.file, k_max_source_bytes, text);
        r != read_result::ok) {
      throw bench_error("FILE", job_file ? unread_reason(r, b.file, k_max_spec_bytes,
                                                         "a request body (--max-body-bytes)")
                                         : unread_reason(r, b.file, k_max_source_bytes,
                                                         "a kernel source (--max-source-bytes)"));
    }
    if (job_file) {
      // A job file: the kernel and its sweep are in it; only where it runs may be added.
      const std::pair<const char*, bool> shaping[] = {{"KERNEL", !b.entries.empty()},
                                                      {"--sweep", !b.sweeps.empty()},
                                                      {"--size", !b.sizes.empty()},
                                                      {"--value", !b.values.empty()},
                                                      {"--output", !b.outputs.empty()},
                                                      {"--block", !b.blocks.empty()},
                                                      {"--grid", !b.grids.empty()},
                                                      {"--option", !b.compile_options.empty()},
                                                      {"--language", !b.language.empty()},
                                                      {"--dtype", !b.dtype.empty()},
                                                      {"--flops", !b.flops.empty()},
                                                      {"--bytes", !b.bytes.empty()},
                                                      {"--reference", !b.reference.empty()},
                                                      {"--baseline", !b.baseline.empty()},
                                                      {"--l2", !b.l2.empty()}};
      for (const auto& [flag, given] : shaping) {
        if (given) throw bench_error(flag, "a job file says this itself; edit " + b.file);
      }
      try {
        spec = parse_json(text);
      } catch (const json_syntax_error& e) {
        throw bench_error("FILE", b.file + ": " + e.what());
      }
      if (!spec.is_object()) throw bench_error("FILE", b.file + " is not a JSON object");
      const std::string dir = directory_of(b.file);
      spec = resolve_job_file(std::move(spec), [&](const std::string& path) {
        const std::string full = !path.empty() && path[0] == '/' ? path : dir + path;
        source_files.insert(full);
        std::string source;
        if (const read_result r = read_text_file(full, k_max_source_bytes, source);
            r != read_result::ok) {
          throw bench_error("source_file", unread_reason(r, full, k_max_source_bytes,
                                                         "a kernel source (--max-source-bytes)"));
        }
        if (auto why = not_utf8_reason(full, source)) throw bench_error("source_file", *why);
        return source;
      });
      source_name = source_files.size() == 1 ? *source_files.begin() : "";
      if (!b.engine.empty()) spec["engine"] = b.engine;
      if (!b.name.empty()) spec["name"] = b.name;
      for (const auto& l : b.labels) {
        const auto [key, value] = label_pair(l);
        spec["labels"][key] = value;
      }
      if (!b.device.empty()) spec["device"] = device_placement(b.device);
    } else {
      if (auto why = not_utf8_reason(b.file, text)) throw bench_error("FILE", *why);
      spec = bench_spec(b, text);
    }
    if (b.no_cache) spec["cache"] = false;
  } catch (const bench_error& e) {
    err << "kernelscan bench: " << e.what() << "\n";
    return k_usage;
  }
  if (opts.dry_run) {
    out << spec.dump(2) << "\n";
    return k_ok;
  }
  return with_client(client_opts, err, [&](api_client& client) {
    return submit_and_report(client, {.body = spec.dump(), .source_name = source_name},
                             {.wait = !opts.no_wait,
                              .wait_s = opts.wait_s,
                              .if_interrupted = on_interrupt::cancel,
                              .command = "bench"},
                             out, err);
  });
}

// `act` on each job, printing what `said` makes of the job it returns, a whole line once it is
// known; exit 1 when any was refused.
int for_each_job(const client_options& client_opts, const std::vector<std::int64_t>& ids,
                 std::ostream& out, std::ostream& err,
                 const std::function<json(api_client&, std::int64_t)>& act,
                 const std::function<std::string(const json&)>& said) {
  return with_client(client_opts, err, [&](api_client& client) {
    int code = k_ok;
    for (const std::int64_t id : ids) {
      try {
        const std::string outcome_text = said(act(client, id));
        out << "job " << id << " " << outcome_text << "\n";
      } catch (const api_failure& e) {
        print_failure(err, e, "job " + std::to_string(id));
        code = k_failed;
      }
    }
    return code;
  });
}

int run_cancel(const client_options& client_opts, const std::vector<std::int64_t>& ids,
               std::ostream& out, std::ostream& err) {
  return for_each_job(
      client_opts, ids, out, err, [](api_client& c, std::int64_t id) { return c.cancel(id); },
      [](const json& job) {
        const std::string status = job.value("status", "?");
        return status == "running" ? "cancelling: it stops after the point being measured" : status;
      });
}

int run_confirm(const client_options& client_opts, const std::vector<std::int64_t>& ids,
                std::ostream& out, std::ostream& err) {
  return for_each_job(
      client_opts, ids, out, err, [](api_client& c, std::int64_t id) { return c.confirm(id); },
      [](const json& job) {
        const json::json_pointer score{"/summary/fitness/combined_score"};
        return "confirmed: combined score " +
               (job.contains(score) && job[score].is_number()
                    ? detail::format_significant(job[score].get<double>(), 4)
                    : std::string("-"));
      });
}

namespace {

// The filter of a `delete` by filters, or the reason it is refused: only states a job has ended
// in, succeeded, failed and cancelled (all three when none is given).
std::variant<job_filter, std::string> ended_jobs_filter(const delete_options& opts) {
  static const std::set<std::string> ended{"succeeded", "failed", "cancelled"};
  job_filter filter{
      opts.status.empty() ? "succeeded,failed,cancelled" : opts.status, {}, opts.task};
  std::size_t at = 0;
  while (!opts.status.empty() && at <= opts.status.size()) {
    const std::size_t end = std::min(opts.status.find(',', at), opts.status.size());
    const std::string state = opts.status.substr(at, end - at);
    if (state == "queued" || state == "running") {
      return "--status: " + state +
             " jobs are not deleted (cancel them first); jobs that ended are succeeded, failed "
             "or cancelled";
    }
    if (!ended.count(state))
      return "--status: \"" + state +
             "\" is not a state a job ends in (succeeded, failed, cancelled)";
    at = end + 1;
  }
  for (const auto& l : opts.labels) {
    try {
      filter.labels.push_back(label_pair(l));
    } catch (const bench_error& e) {
      return e.what();
    }
  }
  return filter;
}

// Every job that ended matching `filter` (and, with older_than_days, that ended so long ago),
// deleted or, with dry_run, listed; page by page, newest first.
int delete_matching(api_client& client, const job_filter& filter, const delete_options& opts,
                    std::ostream& out, std::ostream& err) {
  constexpr std::int64_t k_page = 500;
  const std::int64_t cutoff_ms =
      now_ms() - static_cast<std::int64_t>(std::max(0.0, opts.older_than_days) * 86'400'000.0);
  int code = k_ok;
  std::int64_t done = 0;
  json cursor = nullptr;
  do {
    const json page = client.jobs_page(filter, k_page, cursor);
    for (const json& job : page["jobs"]) {
      const std::int64_t id = job.value("id", std::int64_t(0));
      if (opts.older_than_days >= 0) {
        const auto ended = parse_timestamp_ms(job.value("finished_at", ""));
        if (!ended || *ended > cutoff_ms) continue;
      }
      if (opts.dry_run) {
        out << "job " << id << " would be deleted (" << job.value("status", "?") << ")\n";
        ++done;
        continue;
      }
      try {
        client.delete_job(id);
        out << "job " << id << " deleted\n";
        ++done;
      } catch (const api_failure& e) {
        if (e.status() == 404) continue;  // deleted meanwhile (another client, retention)
        print_failure(err, e, "job " + std::to_string(id));
        code = k_failed;
        if (e.status() == 401 || e.status() == 403) return code;  // so will every other be
      }
    }
    cursor = page.value("next_cursor", json());
  } while (cursor.is_string());
  if (done == 0) {
    out << "no job that ended matches\n";
  } else {
    out << done << (done == 1 ? " job" : " jobs")
        << (opts.dry_run ? " would be deleted" : " deleted") << "\n";
  }
  return code;
}

}  // namespace

int run_delete(const client_options& client_opts, const delete_options& opts, std::ostream& out,
               std::ostream& err) {
  const bool filtered = !opts.status.empty() || !opts.labels.empty() || !opts.task.empty() ||
                        opts.older_than_days >= 0;
  const char* filters = "filters (--status, --label, --task, --older-than-days)";
  if (!opts.ids.empty() && filtered) {
    err << "kernelscan delete: give job ids or " << filters << ", not both\n";
    return k_usage;
  }
  if (opts.ids.empty() && !filtered) {
    err << "kernelscan delete: give job ids, or " << filters
        << " to delete every job that ended matching them\n";
    return k_usage;
  }
  if (!filtered) {
    if (opts.dry_run) {
      err << "kernelscan delete: --dry-run lists what " << filters << " match; ids need none\n";
      return k_usage;
    }
    return for_each_job(
        client_opts, opts.ids, out, err,
        [](api_client& c, std::int64_t id) {
          c.delete_job(id);
          return json();
        },
        [](const json&) { return std::string("deleted"); });
  }
  auto filter = ended_jobs_filter(opts);
  if (const auto* why = std::get_if<std::string>(&filter)) {
    err << "kernelscan delete: " << *why << "\n";
    return k_usage;
  }
  return with_client(client_opts, err, [&](api_client& client) {
    return delete_matching(client, std::get<job_filter>(filter), opts, out, err);
  });
}

int run_rerun(const client_options& client_opts, const rerun_options& opts, std::ostream& out,
              std::ostream& err) {
  return with_client(client_opts, err, [&](api_client& client) {
    const json job = client.job(opts.id);
    const std::string id = std::to_string(opts.id);
    if (job.value("engine", "") == "import") {
      err << "kernelscan rerun: job " << id
          << " was imported (measured elsewhere): there is nothing to run again\n";
      return k_failed;
    }
    if (job.contains("task") && job["task"].is_string()) {
      const std::string task = job["task"];
      err << "kernelscan rerun: job " << id << " is a candidate of task \"" << task
          << "\": submit its source to the task again (kernelscan evaluate " << task << " FILE)\n";
      return k_failed;
    }
    json spec = job.at("spec");
    spec["cache"] = false;  // measured again, not answered with the results it has
    spec.erase("seed");     // inputs of a seed the daemon draws
    return submit_and_report(client, {.body = spec.dump()},
                             {.wait = opts.wait, .wait_s = opts.wait_s, .command = "rerun"}, out,
                             err);
  });
}

int run_tasks(const client_options& client_opts, const tasks_options& opts, std::ostream& out,
              std::ostream& err) {
  return with_client(client_opts, err, [&](api_client& client) {
    const json answer = opts.name.empty() ? client.tasks() : client.task(opts.name);
    if (opts.format == "json") {
      out << answer.dump(2) << "\n";
    } else {
      out << (opts.name.empty() ? task_table(answer.at("tasks")) : task_report(answer));
    }
    return k_ok;
  });
}

int run_evaluate(const client_options& client_opts, const evaluate_options& opts, std::ostream& out,
                 std::ostream& err) {
  std::string source;
  if (const read_result read = read_text_file(opts.file, k_max_source_bytes, source);
      read != read_result::ok) {
    err << "kernelscan evaluate: FILE: "
        << unread_reason(read, opts.file, k_max_source_bytes,
                         "a kernel source (--max-source-bytes)")
        << "\n";
    return k_usage;
  }
  if (const auto why = not_utf8_reason(opts.file, source)) {
    err << "kernelscan evaluate: FILE: " << *why << "\n";
    return k_usage;
  }
  // Only what the candidate's author gave: the task fills in the rest.
  json submission = {{"source", std::move(source)}};
  try {
    if (!opts.entry.empty()) submission["entry"] = opts.entry;
    if (!opts.block.empty()) submission["block"] = launch_dims(opts.block, "--block");
    if (!opts.grid.empty()) submission["grid"] = launch_dims(opts.grid, "--grid");
    if (!opts.shared_bytes.empty()) {
      // A whole number, else an expression over the sizes, sent as its text.
      std::int64_t bytes = 0;
      const char* end = opts.shared_bytes.data() + opts.shared_bytes.size();
      const auto [at, ec] = std::from_chars(opts.shared_bytes.data(), end, bytes);
      submission["shared_bytes"] =
          ec == std::errc() && at == end ? json(bytes) : json(opts.shared_bytes);
    }
    if (!opts.compile_options.empty()) submission["compile_options"] = opts.compile_options;
    if (!opts.name.empty()) submission["name"] = opts.name;
    for (const auto& l : opts.labels) {
      const auto [key, value] = label_pair(l);
      submission["labels"][key] = value;
    }
  } catch (const bench_error& e) {
    err << "kernelscan evaluate: " << e.what() << "\n";
    return k_usage;
  }
  return with_client(client_opts, err, [&](api_client& client) {
    return submit_and_report(client,
                             {.body = submission.dump(),
                              .idempotency_key = opts.idempotency_key,
                              .task = opts.task,
                              .source_name = opts.file},
                             {.wait = !opts.no_wait,
                              .wait_s = opts.wait_s,
                              .command = "evaluate",
                              .as_json = opts.format == "json"},
                             out, err);
  });
}

int run_devices(const client_options& client_opts, const std::string& format, std::ostream& out,
                std::ostream& err) {
  return with_client(client_opts, err, [&](api_client& client) {
    const json list = client.devices();
    if (format == "json") {
      out << list.dump(2) << "\n";
      return k_ok;
    }
    using detail::text_table;
    const json& devices = list.at("devices");
    std::set<std::string> nodes;
    for (const auto& d : devices)
      nodes.insert(d.value("node", ""));
    const bool fleet = nodes.size() > 1;
    std::vector<text_table::column> columns;
    if (fleet) columns.push_back({"node", text_table::align::left});
    for (auto [name, right] : {std::pair{"index", true},
                               {"engine", false},
                               {"type", false},
                               {"device", false},
                               {"state", false},
                               {"job", true},
                               {"points", true}}) {
      columns.push_back({name, right ? text_table::align::right : text_table::align::left});
    }
    text_table table(columns);
    auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    for (const auto& d : devices) {
      std::vector<std::string> cells;
      if (fleet) cells.push_back(d.value("node", ""));
      const json model = d.value("model", json());
      cells.push_back(text(d.value("index", json())));
      cells.push_back(d.value("engine", ""));
      cells.push_back(d.value("type", ""));
      // The catalog model the daemon matched, where the name does not already say it ("AMD
      // Instinct MI300X (mock)" is an MI300X; a mock imitating another model is not).
      const std::string name = d.value("name", "");
      const device_model* named = match_device_model(name);
      cells.push_back(model.is_string() && !(named && named->key == model.get<std::string>())
                          ? name + " (" + model.get<std::string>() + ")"
                          : name);
      cells.push_back(d.value("state", ""));
      const json job = d.value("current_job", json());
      cells.push_back(job.is_null() ? "-" : text(job));
      cells.push_back(text(d.value("points_measured", json(0))));
      const json error = d.value("last_error", json());
      if (error.is_string()) {
        table.add_row(std::move(cells), detail::one_line(error.get<std::string>(), 100));
      } else {
        table.add_row(std::move(cells));
      }
    }
    out << table.render();
    return k_ok;
  });
}

namespace {

// "device 0 (node gpu-07)", as a device answer names itself.
std::string device_name(const json& d) {
  std::string name = "device " + d.at("index").dump();
  if (d.contains("node") && d["node"].is_string())
    name += " (node " + d["node"].get<std::string>() + ")";
  return name;
}

std::string measured_at(const json& d) {
  const json::json_pointer at{"/measured/measured_at"};
  return d.contains(at) && d[at].is_string() ? d[at].get<std::string>() : std::string();
}

void print_ceilings(std::ostream& out, const json& d) {
  const json& m = d.at("measured");
  out << device_name(d) << ": roofline measured at " << measured_at(d) << "\n";
  detail::text_table table({{"ceiling", detail::text_table::align::left},
                            {"value", detail::text_table::align::right},
                            {"unit", detail::text_table::align::left}});
  for (const auto& [key, label, unit] : {std::tuple{"bandwidth_gbps", "bandwidth", "GB/s"},
                                         {"f64_tflops", "f64", "TFLOP/s"},
                                         {"f32_tflops", "f32", "TFLOP/s"},
                                         {"f16_tflops", "f16", "TFLOP/s"},
                                         {"bf16_tflops", "bf16", "TFLOP/s"},
                                         {"vector_f32_tflops", "vector f32", "TFLOP/s"},
                                         {"i8_tops", "i8", "TOP/s"}}) {
    const double v = m.value(key, 0.0);
    // No ceiling of that kind measured (a device without i8 matrix units): a dash, not 0.
    table.add_row({label, v > 0 ? detail::format_significant(v, 4) : "-", unit});
  }
  out << table.render() << "method: " << m.value("method", "") << "\n";
}

}  // namespace

int run_roofline(const client_options& client_opts, const roofline_options& opts, std::ostream& out,
                 std::ostream& err) {
  return with_client(client_opts, err, [&](api_client& client) {
    const json before = opts.wait ? client.device(opts.index, opts.node) : json();
    const json asked = client.measure_roofline(opts.index, opts.node);
    if (!opts.wait) {
      out << device_name(asked) << ": measures its roofline again between its jobs (now "
          << asked.value("state", "?") << ")\n";
      return k_ok;
    }
    const std::string old_error = before.value("last_error", json()).is_string()
                                      ? before["last_error"].get<std::string>()
                                      : std::string();
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(opts.timeout_s);
    for (;;) {
      const json now = client.device(opts.index, opts.node);
      if (measured_at(now) != measured_at(before) && now.value("state", "") != "measuring") {
        print_ceilings(out, now);
        return k_ok;
      }
      const json error = now.value("last_error", json());
      if (error.is_string() && error.get<std::string>() != old_error &&
          error.get<std::string>().find("roofline") != std::string::npos) {
        err << "kernelscan roofline: " << device_name(now) << ": " << error.get<std::string>()
            << "\n";
        return k_failed;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        err << "kernelscan roofline: " << device_name(now) << " did not measure its roofline "
            << "within " << detail::format_significant(opts.timeout_s, 6) << " s (it is "
            << now.value("state", "?") << ")\n";
        return k_failed;
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(opts.poll_s));
    }
  });
}

int run_compare(const client_options& client_opts, const compare_options& opts, std::ostream& out,
                std::ostream& err) {
  return with_client(client_opts, err, [&](api_client& client) {
    std::vector<std::pair<json, json>> jobs;
    for (const std::int64_t id : opts.ids) {
      json job = client.job(id);
      json rows = client.results_json(id, opts.page_size).at("results");
      jobs.emplace_back(std::move(job), std::move(rows));
    }
    // A job still queued or running is compared on the points it has so far: said first, and
    // said again where it has none to compare yet.
    std::string unfinished;
    for (const auto& [job, rows] : jobs) {
      const std::string status = job.value("status", "");
      if (status != "queued" && status != "running") continue;
      const json& progress = job.value("progress", json::object());
      unfinished += "job " + job.value("id", json()).dump() + " is " + status + " (" +
                    progress.value("done", json(0)).dump() + " of " +
                    progress.value("total", json(0)).dump() + " points measured)\n";
    }
    try {
      auto series = series_of(jobs);
      // --base names a job by its id, or a variant by its name.
      std::string base = opts.base;
      if (jobs.size() > 1 && !base.empty()) base = "job " + base;
      // A job's variants are compared with its baseline variant unless told otherwise.
      if (const json& spec = jobs.front().first.value("spec", json::object());
          jobs.size() == 1 && base.empty() && spec.is_object() && spec.contains("baseline") &&
          spec["baseline"].is_string()) {
        base = spec["baseline"].get<std::string>();
      }
      std::optional<double> gate;
      if (opts.max_slowdown_pct >= 0) gate = opts.max_slowdown_pct / 100;
      std::vector<std::string> regressions;
      const std::string report = compare_report(series, base, gate, &regressions);
      if (!unfinished.empty()) out << unfinished << "compared on the points measured so far\n";
      out << report;
      if (gate) {
        std::ostringstream limit_text;  // as given: 10%, 2.5%
        limit_text << opts.max_slowdown_pct << "%";
        const std::string limit = limit_text.str();
        if (regressions.empty()) {
          out << "no regression past --max-slowdown " << limit << "\n";
        } else {
          out << regressions.size() << (regressions.size() == 1 ? " regression" : " regressions")
              << " past --max-slowdown " << limit << ":\n";
          for (const auto& r : regressions)
            out << "  " << r << "\n";
          return k_failed;
        }
      }
    } catch (const std::invalid_argument& e) {
      err << "kernelscan compare: " << e.what() << "\n";
      return k_usage;
    } catch (const nothing_to_compare& e) {
      err << "kernelscan compare: " << e.what() << "\n" << unfinished;
      return k_failed;
    }
    return k_ok;
  });
}

}  // namespace kernelscan
