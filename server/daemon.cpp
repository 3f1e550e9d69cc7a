#include "server/daemon.hpp"

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <asio.hpp>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <thread>

#include "api/worker_protocol.hpp"
#include "engine/device_catalog.hpp"
#include "server/device_selection.hpp"
#include "server/fleet_relay.hpp"
#include "server/http_api.hpp"
#include "server/job_waiters.hpp"
#include "server/logging.hpp"
#include "server/retention.hpp"
#include "server/scheduler.hpp"
#include "server/worker_process.hpp"
#include "storage/open_store.hpp"

namespace kernelscan {
namespace {

// Start-up misconfiguration is fatal, with one clear line.
[[noreturn]] void fatal(const std::string& message) {
  spdlog::critical("{}", message);
  std::exit(2);
}

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) fatal("cannot find this executable (/proc/self/exe): " + ec.message());
  return p.string();
}

// The devices a worker's runtimes see (HIP GPUs, OpenCL devices), asked of a child process
// (`worker --probe`): a GPU runtime or OpenCL driver may abort or hang a process that finds no
// usable device, and the daemon must not be it. Whatever goes wrong there means no devices,
// logged.
std::vector<device_info> probe_devices(const serve_config& config) {
  std::vector<device_info> found;
  asio::io_context io;
  asio::steady_timer deadline(io);
  std::string end;
  std::unique_ptr<worker_process> probe;
  try {
    probe = std::make_unique<worker_process>(
        io,
        std::vector<std::string>{config.worker_executable, "worker", "--probe", "--log-level",
                                 config.log_level, "--log-format", config.log_format},
        [&](std::string_view line) {
          try {
            auto msg = worker_protocol::parse_worker_line(line);
            if (msg.type == worker_protocol::worker_message::kind::ready) {
              found.push_back(std::move(msg.device));
            }
          } catch (const std::exception& e) {
            spdlog::warn("device probe: unreadable line: {}", e.what());
          }
        },
        [&](const std::string& how) {
          end = how;
          deadline.cancel();
        });
  } catch (const std::exception& e) {
    spdlog::warn("device probe: cannot start it: {}; serving no GPU or OpenCL device", e.what());
    return found;
  }
  deadline.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(config.worker_start_timeout_s)));
  deadline.async_wait([&](const asio::error_code& ec) {
    if (ec) return;
    end = "did not finish in time";
    probe->kill();
  });
  io.run();
  if (end != "exited with status 0") {
    spdlog::warn("device probe {}; serving no GPU or OpenCL device", end);
    found.clear();
  }
  return found;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || !*name) return "kernelscan";
  std::string out = name;
  // The short name: gpu-07.example.org is gpu-07.
  if (const auto dot = out.find('.'); dot != std::string::npos && dot > 0) out.resize(dot);
  return out;
}

bool valid_node_name(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

// Tells this run of the node from an earlier or later one.
std::string random_instance() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}

// The first line of the file, without its line end: a password file as operators write them.
std::string read_password_file(const std::string& path) {
  std::ifstream in(path);
  std::string password;
  if (!in || !std::getline(in, password)) {
    fatal("cannot read --database-password-file " + path);
  }
  while (!password.empty() && (password.back() == '\r' || password.back() == ' '))
    password.pop_back();
  return password;
}

std::string describe_devices(const std::vector<device_info>& gpus, const serve_config& config) {
  std::string text;
  for (const auto& g : gpus)
    text += (text.empty() ? "" : ", ") + g.name;
  if (serves_mock_devices(config, gpus.size())) {
    text += (text.empty() ? "" : ", ") + std::to_string(config.mock_devices) +
            " mock device(s) as " + config.mock_model;
  }
  return text;
}

}  // namespace

int run_serve(serve_config config) {
  setup_logging("kernelscan", config.log_level, config.log_format);
  // glibc gives threads their own malloc arenas (up to 8 per core) and keeps what is freed in
  // them; with 48 HTTP threads taking turns on keep-alive connections, RSS crept up by tens of
  // MB under steady load (bench_load). Four arenas keep it flat with no measurable cost in
  // bench_http (A/B on this machine).
  if (!std::getenv("MALLOC_ARENA_MAX")) mallopt(M_ARENA_MAX, 4);  // an operator's setting wins
  std::signal(SIGPIPE, SIG_IGN);  // a dead worker's pipe is reported by write errors
  // A write past a file-size limit must fail with an error SQLite reports (answered as 503 and
  // retried), not kill the daemon.
  std::signal(SIGXFSZ, SIG_IGN);

  if (!find_device_model(config.mock_model)) {
    std::string known;
    for (const auto& m : device_catalog())
      known += (known.empty() ? "" : ", ") + std::string(m.key);
    fatal("--mock-model \"" + config.mock_model + "\" is not in the catalog (" + known + ")");
  }
  if (config.mock_devices < 1 || config.mock_devices > 64) {
    fatal("--mock-devices must be 1 to 64");
  }
#ifndef KERNELSCAN_HAVE_GPU
  if (config.engine == "hip") {
    fatal("--engine hip: this build has no GPU engine (build with KERNELSCAN_GPU=hip or cuda)");
  }
#endif
  if (config.http_threads < config.max_long_polls + config.max_event_streams + 4) {
    fatal(
        "--http-threads must exceed --max-long-polls plus --max-event-streams by at least 4, "
        "so waiting requests and event streams cannot starve the others");
  }
  std::pair<std::string, int> address;
  try {
    address = split_listen(config.listen);
  } catch (const std::exception& e) {
    fatal(e.what());
  }
  if (config.worker_executable.empty()) config.worker_executable = self_executable();
  if (config.node.empty()) config.node = host_name();
  if (!valid_node_name(config.node)) {
    fatal("--node \"" + config.node +
          "\": a node name is 1 to 253 letters, digits, '-', '_' or '.' (it names the daemon in "
          "the fleet)");
  }
  if (config.lease_timeout_s < 1 || config.lease_timeout_s > 600) {
    fatal("--lease-timeout must be 1 to 600 seconds");
  }
  config.limits.allow_fault_injection = config.allow_fault_injection;

  std::error_code ec;
  store_config store_settings;
  store_settings.database_url = config.database;
  store_settings.pool_size = std::size_t(config.database_pool);
  std::string store_description;
  if (config.database.empty()) {
    std::filesystem::create_directories(config.data_dir, ec);
    if (ec) fatal("cannot create --data-dir " + config.data_dir + ": " + ec.message());
    store_settings.sqlite_path = config.data_dir + "/kernelscan.db";
    store_description = "SQLite in " + config.data_dir;
  } else {
    store_description = "PostgreSQL at " + redact_database_url(config.database);
    if (!config.database_password_file.empty()) {
      store_settings.password = read_password_file(config.database_password_file);
    }
  }
  std::unique_ptr<job_store> store;
  try {
    store = open_store(store_settings);
  } catch (const std::exception& e) {
    fatal("cannot open the database (" + store_description + "): " + std::string(e.what()));
  }

  std::vector<device_info> gpus;
  if (config.engine != "mock") gpus = select_devices(config.engine, probe_devices(config));
  if (config.engine == "hip" && gpus.empty()) fatal("--engine hip: no GPU found (see the log)");
  if (config.engine == "opencl" && gpus.empty()) {
    fatal(
        "--engine opencl: no OpenCL device found (install an OpenCL driver: PoCL runs on the "
        "CPU, Debian package pocl-opencl-icd; see the log)");
  }

  asio::io_context io;
  job_waiters waiters;
  // Event ids start from a random multiple of 2^32 (under 2^53: exact in JavaScript), so that a
  // client's Last-Event-ID from another node or an earlier run is told from this daemon's.
  event_hub events(8192, (std::uint64_t(std::random_device{}()) % ((1u << 21) - 1) + 1) << 32);
  scheduler sched(io, *store, waiters, events, config, gpus);
  // Join the fleet (a store of one daemon, for SQLite): events of other nodes arrive from now
  // on, and a live node of the same name is a start-up error.
  fleet_relay relay(
      *store, events,
      [&sched, &waiters](const job_record& job) {
        if (is_terminal(job.status)) waiters.notify(job.id);  // ?wait= on a job another node ran
        sched.job_changed_elsewhere(job);
      },
      [&sched](const std::string& node, int index) {
        // Asked on another node's API (POST /api/v1/devices/{index}/roofline?node=NAME).
        if (node != sched.node()) return;
        if (sched.request_roofline(index)) {
          spdlog::info("device {}: its roofline will be measured again, as another node asked",
                       index);
        } else {
          spdlog::warn("another node asked for the roofline of device {}, which this node lacks",
                       index);
        }
      },
      // Another node's job event that could not be read here: its waiters read the job again.
      [&waiters](std::int64_t job_id) { waiters.notify(job_id); },
      [](const std::string& why) {
        // Two live nodes of one name take each other's jobs: this one goes at once, as if
        // killed (its workers with it), and the fleet requeues its jobs when their leases run
        // out. On the store's thread, so no exit handlers run under the other threads.
        spdlog::critical("lost its node name while cut off from the database: {}; stopping", why);
        spdlog::shutdown();
        std::_Exit(2);
      });
  relay.attach();
  try {
    store->join({config.node, random_instance(), KERNELSCAN_VERSION, unix_time_ms(), 0, false},
                unix_time_ms());
  } catch (const std::exception& e) {
    fatal("cannot join the fleet as node \"" + config.node + "\": " + e.what());
  }
  std::unique_ptr<http_api> api_owner;
  int port = 0;
  try {
    // Reads the token file: a bad one is a start-up error, reported, not a crash.
    api_owner = std::make_unique<http_api>(*store, sched, waiters, events, config);
    port = api_owner->bind(address.first, address.second);
  } catch (const std::exception& e) {
    fatal(e.what());
  }
  http_api& api = *api_owner;
  if (!config.port_file.empty()) {
    const std::string tmp = config.port_file + ".tmp";
    std::ofstream(tmp) << port << "\n";
    std::filesystem::rename(tmp, config.port_file, ec);  // atomic: readers never see half
    if (ec) fatal("cannot write --port-file " + config.port_file + ": " + ec.message());
  }
  sched.start();
  const system_clock wall;
  retention sweeper(*store, events, wall,
                    std::chrono::milliseconds(std::int64_t(config.retention_days * 86'400'000.0)));
  sweeper.start();
  spdlog::info("kernelscan listening on http://{}:{} (node {}; store: {}; devices: {})",
               address.first, port, config.node, store_description, describe_devices(gpus, config));

  std::thread http_thread([&api] {
    if (!api.run()) spdlog::error("the HTTP server stopped with an error");
  });

  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const asio::error_code& err, int sig) {
    if (err) return;
    spdlog::info("signal {}: no longer accepting requests; finishing current points", sig);
    api.stop();
    sweeper.stop();
    waiters.shutdown();
    events.shutdown();
    sched.shutdown([&io] { io.stop(); });
    // A second signal means "now".
    signals.async_wait([](const asio::error_code& e, int) {
      if (e) return;
      spdlog::warn("second signal: exiting without draining");
      std::_Exit(1);
    });
  });

  io.run();
  api.stop();
  http_thread.join();
  spdlog::info("kernelscan stopped");
  return 0;
}

}  // namespace kernelscan
