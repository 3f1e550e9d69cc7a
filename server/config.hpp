#pragma once
// Settings of `kernelscan serve` and `kernelscan worker`. Filled by main.cpp from, in order of
// precedence, the command line, KERNELSCAN_* environment variables and a config file; plain
// values, read-only once the daemon starts.

#include <cstddef>
#include <cstdint>
#include <string>

#include "api/job_spec_codec.hpp"

namespace kernelscan {

// The most --max-body-bytes and --max-source-bytes may be set to. The client reads a file up
// to these and no further (an endless pipe must not fill its memory), and leaves the daemon it
// talks to, whatever its settings, to refuse what is over its own limits.
inline constexpr std::size_t k_max_body_bytes_setting = std::size_t{256} << 20;
inline constexpr std::size_t k_max_source_bytes_setting = std::size_t{64} << 20;

struct serve_config {
  std::string listen = "127.0.0.1:8080";
  std::string data_dir = "kernelscan-data";  // the SQLite database, without `database`
  // PostgreSQL (postgresql://...): a store many daemons share as one fleet; empty: SQLite.
  std::string database;
  std::string database_password_file;  // the password, read from this file (never logged)
  int database_pool = 8;               // connections to PostgreSQL per daemon
  std::string node;                    // this daemon's name in the fleet; empty: the host name
  double lease_timeout_s = 20;         // a node that stops renewing loses its jobs after this
  std::string engine = "auto";         // auto, hip, opencl, mock, all (device_selection.hpp)
  int mock_devices = 1;
  std::string mock_model = "MI300X";
  std::string log_level = "info";
  std::string log_format = "text";  // text or json
  std::string web_root;             // serve the page from disk (development)
  std::string port_file;            // write the bound port here (for supervisors and tests)
  bool allow_fault_injection = false;
  // Score a job with an excessive_speedup point at once; by default its score is withheld until
  // an operator confirms it.
  bool score_excessive_speedups = false;
  int http_threads = 48;
  int max_long_polls = 32;      // concurrent ?wait= requests
  int max_event_streams = 8;    // concurrent GET /api/v1/events streams (each holds a thread)
  double point_timeout_s = 30;  // watchdog slack per point, on top of its own time budget
  // Limits on compiling one user kernel (engine/compile_watch.hpp); 0: none.
  double compile_timeout_s = 60;
  std::uint64_t compile_memory_bytes = 4ull * 1024 * 1024 * 1024;
  double drain_timeout_s = 30;  // on SIGTERM, how long the current points may take
  double retention_days = 0;    // jobs that ended longer ago are deleted; 0: kept for ever
  double worker_start_timeout_s = 30;
  std::size_t max_body_bytes = 4 * 1024 * 1024;
  std::string token_file;  // bearer tokens; mutating requests need one
  // Operator tokens: creating and retiring tasks and seeing held-out points need one (when
  // set; else every caller that may write is an operator). They are valid write tokens too.
  std::string operator_token_file;
  bool auth_reads = false;  // reads need one too
  double rate_limit = 600;  // job submissions per minute per client address; 0: off
  std::string cors_origin;  // allowed browser origins: "", "*" or a comma list
  spec_limits limits;
  std::string worker_executable;  // defaults to this executable (/proc/self/exe)
};

struct worker_config {
  int device = 0;      // the GPU ordinal (hip), OpenCL device number, or mock device index
  bool probe = false;  // report the HIP and OpenCL devices found as ready lines, then exit
  std::string engine = "mock";
  std::string mock_model = "MI300X";
  bool allow_fault_injection = false;
  std::string log_level = "info";
  std::string log_format = "text";
  double point_timeout_s = 30;    // the daemon's --point-timeout: the points' watchdog budget
  double compile_timeout_s = 60;  // --compile-timeout; 0: none
  std::uint64_t compile_memory_bytes = 4ull * 1024 * 1024 * 1024;  // --compile-memory; 0: none
  int phase_fd = -1;  // the page shared with the daemon (worker_process::k_phase_fd); -1: none
};

// Whether the daemon serves mock devices, given how many real devices it serves (--engine: mock
// and all always do, auto when there is none, hip and opencl never).
bool serves_mock_devices(const serve_config& config, std::size_t devices_served);

// Splits "HOST:PORT"; throws std::invalid_argument naming the problem.
std::pair<std::string, int> split_listen(const std::string& listen);

}  // namespace kernelscan
