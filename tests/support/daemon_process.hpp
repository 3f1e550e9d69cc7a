#pragma once
// A real `kernelscan serve` for integration tests: started on a free loopback port (port 0,
// read back from --port-file) with a temporary data directory, stopped and cleaned up by the
// destructor. The data directory survives kill9()/start() so restarts can be tested.
//
// Its store: SQLite in the data directory, or with KERNELSCAN_TEST_POSTGRES in the environment
// (how ctest runs every integration test a second time) a new database of that test PostgreSQL
// server, made for this daemon and dropped with it; or the database `options.database` names
// (daemons of one fleet).

#include <httplib.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "api/json.hpp"

namespace kernelscan::testing {

struct http_reply {
  int status = 0;
  std::string text;
  json body;  // parsed when the reply is JSON
  httplib::Headers headers;
  std::string header(const std::string& name) const;
};

class daemon_process {
 public:
  struct options {
    int mock_devices = 1;
    // --engine: mock keeps the tests on mock devices on a machine with a GPU too.
    std::string engine = "mock";
    bool allow_fault_injection = false;
    std::vector<std::string> extra_args;
    // A PostgreSQL URL shared with other daemons (a fleet); empty: as described above; "-": no
    // --database at all (the test gives it otherwise).
    std::string database = "";
  };

  explicit daemon_process(options opts);
  daemon_process() : daemon_process(options{}) {}
  daemon_process(const daemon_process&) = delete;
  daemon_process& operator=(const daemon_process&) = delete;
  ~daemon_process();

  // Starts the daemon and waits until /readyz answers 200. Throws on failure (with the log).
  void start();
  // SIGKILL, as a crash would; the data directory is kept.
  void kill9();
  // SIGTERM; waits for the exit and returns the exit status (-1 if it had to be killed).
  int terminate(std::chrono::seconds timeout = std::chrono::seconds(30));
  bool running() const { return m_pid > 0; }

  int port() const { return m_port; }
  pid_t pid() const { return m_pid; }
  const std::string& data_dir() const { return m_data_dir; }
  // The PostgreSQL database this daemon uses; empty with SQLite.
  const std::string& database() const { return m_database; }
  std::string log() const;

  http_reply get(const std::string& path) const;
  http_reply post(const std::string& path, const std::string& body,
                  const httplib::Headers& headers = {}) const;
  http_reply post_json(const std::string& path, const json& body) const {
    return post(path, body.dump());
  }
  http_reply del(const std::string& path, const httplib::Headers& headers = {}) const;

  // Submits a job and expects 201; returns the job id.
  std::int64_t submit(const json& spec) const;
  // Long-polls until the job is terminal (or the timeout passes); returns the job.
  json wait_job(std::int64_t id, std::chrono::seconds timeout = std::chrono::seconds(60)) const;
  // The worker process ids the daemon reports, per device.
  std::vector<pid_t> worker_pids() const;

 private:
  options m_options;
  std::string m_data_dir;
  std::string m_log_path;
  std::string m_database;
  bool m_own_database = false;
  pid_t m_pid = -1;
  int m_port = 0;
};

// A mock stream-triad job over `points` sizes (step, 2*step, ...), each point taking
// `delay_ms` of wall time.
json stream_sweep(int points, double delay_ms, std::int64_t step = 4096);

// True when the daemons run on PostgreSQL (KERNELSCAN_TEST_POSTGRES is set).
bool testing_postgres();

// Polls `condition` every 20 ms until it is true or `timeout` passes.
bool eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));

}  // namespace kernelscan::testing
