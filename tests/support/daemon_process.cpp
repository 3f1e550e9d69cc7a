#include "tests/support/daemon_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#ifdef KERNELSCAN_TEST_WITH_POSTGRES
#include "tests/support/postgres_server.hpp"
#endif

extern char** environ;

namespace kernelscan::testing {
namespace {

using namespace std::chrono_literals;

std::string make_temp_dir() {
  std::string templ = (std::filesystem::temp_directory_path() / "kernelscan-test-XXXXXX").string();
  if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
  return templ;
}

http_reply to_reply(const httplib::Result& r) {
  http_reply out;
  if (!r) {
    out.status = 0;
    out.text = "request failed: " + httplib::to_string(r.error());
    return out;
  }
  out.status = r->status;
  out.text = r->body;
  out.headers = r->headers;
  if (r->get_header_value("Content-Type").rfind("application/json", 0) == 0 && !r->body.empty()) {
    out.body = json::parse(r->body, nullptr, false);
  }
  return out;
}

int wait_exit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(10ms);
  }
  return -1;
}

}  // namespace

std::string http_reply::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

json stream_sweep(int points, double delay_ms, std::int64_t step) {
  json values = json::array();
  for (int i = 1; i <= points; ++i)
    values.push_back(step * i);
  return {{"kernel", {{"op", "stream"}, {"variant", "triad"}, {"n", "N"}}},
          {"sweep", {{"N", values}}},
          {"mock", {{"delay_ms", delay_ms}}}};
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return condition();
}

bool testing_postgres() {
  const char* server = std::getenv("KERNELSCAN_TEST_POSTGRES");
  return server && *server;
}

daemon_process::daemon_process(options opts) : m_options(std::move(opts)) {
  m_data_dir = make_temp_dir();
  m_log_path = m_data_dir + "/daemon.log";
  m_database = m_options.database;
  if (m_database.empty() && testing_postgres()) {
#ifdef KERNELSCAN_TEST_WITH_POSTGRES
    m_database = create_database();
    m_own_database = true;
#else
    throw std::runtime_error(
        "KERNELSCAN_TEST_POSTGRES is set, but these tests are built without "
        "PostgreSQL");
#endif
  }
}

daemon_process::~daemon_process() {
  if (m_pid > 0) {
    ::kill(m_pid, SIGKILL);
    wait_exit(m_pid, 10s);
  }
#ifdef KERNELSCAN_TEST_WITH_POSTGRES
  if (m_own_database) drop_database(m_database);
#endif
  std::error_code ec;
  std::filesystem::remove_all(m_data_dir, ec);
}

void daemon_process::start() {
  const std::string port_file = m_data_dir + "/port";
  std::filesystem::remove(port_file);
  // KERNELSCAN_TEST_BINARY overrides the build's path: the tests run from a bundle on another
  // machine (deploy/gpu-bundle.sh).
  const char* binary = std::getenv("KERNELSCAN_TEST_BINARY");
  std::vector<std::string> args{binary && *binary ? binary : KERNELSCAN_BINARY,
                                "serve",
                                "--listen",
                                "127.0.0.1:0",
                                "--data-dir",
                                m_data_dir + "/data",
                                "--port-file",
                                port_file,
                                "--mock-devices",
                                std::to_string(m_options.mock_devices),
                                "--engine",
                                m_options.engine,
                                "--log-level",
                                "debug"};
  if (m_options.allow_fault_injection) args.push_back("--allow-fault-injection");
  if (!m_database.empty() && m_database != "-") {
    args.push_back("--database");
    args.push_back(m_database);
  }
  for (const auto& a : m_options.extra_args)
    args.push_back(a);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, m_log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = posix_spawn(&m_pid, args[0].c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + args[0]);

  bool exited = false;
  const bool have_port = eventually(
      [&] {
        int status = 0;
        if (waitpid(m_pid, &status, WNOHANG) == m_pid) {
          exited = true;  // a start-up error: stop waiting
          return true;
        }
        std::ifstream in(port_file);
        return bool(in >> m_port) && m_port > 0;
      },
      15s);
  if (exited) {
    m_pid = -1;
    throw std::runtime_error("daemon exited during start-up; log:\n" + log());
  }
  if (!have_port) throw std::runtime_error("daemon did not start; log:\n" + log());
  // A real engine's device is not ready while it measures its roofline, which takes longer the
  // first time on a machine (PoCL's kernel cache starts empty) than a mock device's start.
  const auto limit = m_options.engine == "mock" ? 15s : 180s;
  const bool ready = eventually([&] { return get("/readyz").status == 200; }, limit);
  if (!ready) throw std::runtime_error("daemon did not become ready; log:\n" + log());
}

void daemon_process::kill9() {
  if (m_pid <= 0) return;
  ::kill(m_pid, SIGKILL);
  wait_exit(m_pid, 10s);
  m_pid = -1;
}

int daemon_process::terminate(std::chrono::seconds timeout) {
  if (m_pid <= 0) return -1;
  ::kill(m_pid, SIGTERM);
  int code = wait_exit(m_pid, timeout);
  if (code < 0) {
    ::kill(m_pid, SIGKILL);
    wait_exit(m_pid, 10s);
  }
  m_pid = -1;
  return code;
}

std::string daemon_process::log() const {
  std::ifstream in(m_log_path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

http_reply daemon_process::get(const std::string& path) const {
  httplib::Client c("127.0.0.1", m_port);
  c.set_read_timeout(std::chrono::seconds(700));
  return to_reply(c.Get(path.c_str()));
}

http_reply daemon_process::post(const std::string& path, const std::string& body,
                                const httplib::Headers& headers) const {
  httplib::Client c("127.0.0.1", m_port);
  c.set_read_timeout(std::chrono::seconds(60));
  return to_reply(c.Post(path.c_str(), headers, body, "application/json"));
}

http_reply daemon_process::del(const std::string& path, const httplib::Headers& headers) const {
  httplib::Client c("127.0.0.1", m_port);
  c.set_read_timeout(std::chrono::seconds(60));
  return to_reply(c.Delete(path.c_str(), headers));
}

std::int64_t daemon_process::submit(const json& spec) const {
  const auto r = post_json("/api/v1/jobs", spec);
  if (r.status != 201) {
    throw std::runtime_error("submit answered " + std::to_string(r.status) + ": " + r.text);
  }
  return r.body.at("id").get<std::int64_t>();
}

json daemon_process::wait_job(std::int64_t id, std::chrono::seconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  json job;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto r = get("/api/v1/jobs/" + std::to_string(id) + "?wait=5");
    if (r.status == 200) {
      job = r.body;
      const auto status = job.value("status", "");
      if (status == "succeeded" || status == "failed" || status == "cancelled") return job;
    } else {
      std::this_thread::sleep_for(50ms);
    }
  }
  return job;
}

std::vector<pid_t> daemon_process::worker_pids() const {
  std::vector<pid_t> out;
  const auto r = get("/api/v1/devices");
  if (r.status != 200) return out;
  for (const auto& d : r.body.at("devices")) {
    out.push_back(d.at("worker_pid").is_null() ? 0 : d.at("worker_pid").get<pid_t>());
  }
  return out;
}

}  // namespace kernelscan::testing
