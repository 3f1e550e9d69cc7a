#include "tests/support/postgres_server.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "storage/detail/pg_connection.hpp"

#ifndef KERNELSCAN_PG_BINDIR
#define KERNELSCAN_PG_BINDIR ""
#endif

namespace kernelscan::testing {
namespace {

std::string bindir() {
  if (const char* env = std::getenv("KERNELSCAN_TEST_PG_BINDIR"); env && *env) return env;
  std::string dir = KERNELSCAN_PG_BINDIR;
  if (dir.empty() || !std::filesystem::exists(dir + "/initdb")) {
    throw std::runtime_error(
        "PostgreSQL's server programs (initdb, pg_ctl) were not found: install Debian's "
        "postgresql package (deploy/test.sh does), or name their directory in "
        "KERNELSCAN_TEST_PG_BINDIR");
  }
  return dir;
}

bool as_root() {
  return geteuid() == 0;
}

// Runs a PostgreSQL program, as the postgres user when we are root; its output goes to `log`.
int run(const std::string& command, const std::string& log) {
  const std::string line =
      (as_root() ? "runuser -u postgres -- " : "") + command + " >>" + log + " 2>&1";
  const int rc = std::system(line.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  if (port == 0) throw std::runtime_error("no free loopback port for PostgreSQL");
  return port;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<detail::pg_connection> connect(const std::string& url) {
  return std::make_unique<detail::pg_connection>(
      std::vector<std::pair<std::string, std::string>>{{"connect_timeout", "10"}, {"dbname", url}});
}

}  // namespace

postgres_server::postgres_server(std::string dir) : m_dir(std::move(dir)) {
  const std::string bin = bindir();
  if (m_dir.empty()) {
    std::string templ = (std::filesystem::temp_directory_path() / "kernelscan-pg-XXXXXX").string();
    if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
    m_dir = templ;
  } else {
    std::filesystem::create_directories(m_dir);
  }
  std::filesystem::permissions(m_dir, std::filesystem::perms::owner_all);
  if (as_root() && std::system(("chown postgres: " + m_dir).c_str()) != 0) {
    throw std::runtime_error("cannot give " + m_dir +
                             " to the postgres user (is the postgresql "
                             "package installed?)");
  }
  const int rc = run(bin + "/initdb -D " + m_dir +
                         "/data -U kernelscan -A trust -E UTF8 "
                         "--no-sync --no-instructions",
                     m_dir + "/initdb.log");
  if (rc != 0) {
    throw std::runtime_error("initdb failed (" + std::to_string(rc) + "):\n" +
                             read_file(m_dir + "/initdb.log"));
  }
  start();
}

postgres_server::~postgres_server() {
  if (m_detached) return;
  try {
    if (m_running) {
      run(bindir() + "/pg_ctl -D " + m_dir + "/data -m immediate -w stop", m_dir + "/ctl.log");
    }
  } catch (const std::exception&) {
  }
  std::error_code ec;
  std::filesystem::remove_all(m_dir, ec);
}

void postgres_server::start() {
  const std::string bin = bindir();
  std::string last;
  // The port is free when picked and taken when the server binds it; another process may take
  // it in between, so a failed start tries another.
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (m_port == 0 || attempt > 0) m_port = free_port();
    const std::string options =
        "-p " + std::to_string(m_port) +
        " -c listen_addresses=127.0.0.1 -c unix_socket_directories=" + m_dir +
        " -c fsync=off -c full_page_writes=off -c " + "max_connections=300";
    const int rc = run(bin + "/pg_ctl -D " + m_dir + "/data -l " + m_dir + "/server.log -w -t 60 " +
                           "-o \"" + options + "\" start",
                       m_dir + "/ctl.log");
    if (rc == 0) {
      m_running = true;
      return;
    }
    last = log();
  }
  throw std::runtime_error("PostgreSQL did not start:\n" + last);
}

void postgres_server::stop() {
  if (!m_running) return;
  run(bindir() + "/pg_ctl -D " + m_dir + "/data -m fast -w stop", m_dir + "/ctl.log");
  m_running = false;
}

std::string postgres_server::url(const std::string& database) const {
  return "postgresql://kernelscan@127.0.0.1:" + std::to_string(m_port) + "/" + database;
}

std::string postgres_server::log() const {
  return read_file(m_dir + "/ctl.log") + read_file(m_dir + "/server.log");
}

std::string shared_postgres_url() {
  if (const char* env = std::getenv("KERNELSCAN_TEST_POSTGRES"); env && *env) {
    // A ctest fixture's server: the file it wrote holds the URL.
    std::string url = read_file(env);
    while (!url.empty() && (url.back() == '\n' || url.back() == ' '))
      url.pop_back();
    if (url.empty()) {
      throw std::runtime_error(std::string("KERNELSCAN_TEST_POSTGRES names ") + env +
                               ", which holds no URL: did the postgres fixture start?");
    }
    return url;
  }
  static std::mutex mutex;
  static std::unique_ptr<postgres_server> own;
  std::lock_guard lock(mutex);
  if (!own) own = std::make_unique<postgres_server>();
  return own->url();
}

std::string create_database(const std::string& admin_url) {
  static std::atomic<int> counter{0};
  const std::string admin = admin_url.empty() ? shared_postgres_url() : admin_url;
  const std::string name = "ks_" + std::to_string(getpid()) + "_" + std::to_string(++counter) +
                           "_" + std::to_string(std::rand() % 100000);
  connect(admin)->exec_script("CREATE DATABASE " + name);
  return admin.substr(0, admin.rfind('/') + 1) + name;
}

void drop_database(const std::string& database_url) {
  const auto slash = database_url.rfind('/');
  const std::string name = database_url.substr(slash + 1);
  try {
    connect(database_url.substr(0, slash + 1) + "postgres")
        ->exec_script("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
  } catch (const std::exception&) {
    // The server is gone already (a test stopped it): its directory goes with it.
  }
}

void stop_detached_postgres(const std::string& dir) {
  if (std::filesystem::exists(dir + "/data/postmaster.pid")) {
    run(bindir() + "/pg_ctl -D " + dir + "/data -m immediate -w stop", dir + "/ctl.log");
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace kernelscan::testing
