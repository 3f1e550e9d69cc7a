#include "server/cli_commands.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>

#include "server/cli_client.hpp"
#include "server/cli_job_table.hpp"
#include "server/cli_report.hpp"

namespace kernelscan {
namespace {

constexpr int k_ok = 0;
constexpr int k_failed = 1;
constexpr int k_usage = 2;

bool terminal(const json& job) {
  const std::string s = job.value("status", "");
  return s == "succeeded" || s == "failed" || s == "cancelled";
}

void print_failure(std::ostream& err, const api_failure& e) {
  err << "kernelscan: " << e.type() << " (HTTP " << e.status() << "): " << e.what() << "\n";
  for (const auto& d : e.details()) {  // one {field, message} per problem
    err << "  " << (d.field.empty() ? "" : d.field + ": ") << d.message << "\n";
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
  } catch (const std::exception& e) {  // an answer that is not what the API promises
    err << "kernelscan: unexpected answer from " << opts.server << ": " << e.what() << "\n";
  }
  return k_failed;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void print_report(api_client& client, const json& job, std::int64_t page_size, std::ostream& out) {
  const json page = client.results_json(job.at("id").get<std::int64_t>(), page_size);
  out << results_report(job, page.at("results"));
}

}  // namespace

int run_submit(const client_options& client_opts, const submit_options& opts, std::istream& in,
               std::ostream& out, std::ostream& err) {
  std::string spec;
  if (opts.file == "-") {
    std::ostringstream ss;
    ss << in.rdbuf();
    spec = ss.str();
  } else {
    std::ifstream file(opts.file, std::ios::binary);
    if (!file) {
      err << "kernelscan submit: cannot read " << opts.file << ": " << std::strerror(errno) << "\n";
      return k_usage;
    }
    spec.assign(std::istreambuf_iterator<char>(file), {});
  }
  return with_client(client_opts, err, [&](api_client& client) {
    auto [job, replayed] = client.submit(spec, opts.idempotency_key);
    out << job_summary_line(job)
        << (replayed ? " (submitted before with this Idempotency-Key)" : "") << "\n";
    if (!opts.wait) return k_ok;
    out.flush();  // the summary shows while the job runs
    const std::int64_t id = job.at("id").get<std::int64_t>();
    while (!terminal(job))
      job = client.job(id, opts.wait_s);
    out << "\n";
    print_report(client, job, results_options{}.page_size, out);
    return job.value("status", "") == "succeeded" ? k_ok : k_failed;
  });
}

int run_jobs(const client_options& client_opts, const jobs_options& opts, std::ostream& out,
             std::ostream& err) {
  job_filter filter{opts.status, {}};
  for (const auto& l : opts.labels) {
    const std::size_t eq = l.find('=');
    if (eq == std::string::npos || eq == 0) {
      err << "kernelscan jobs: --label " << l << ": expected KEY=VALUE\n";
      return k_usage;
    }
    filter.labels.emplace_back(l.substr(0, eq), l.substr(eq + 1));
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

}  // namespace kernelscan
