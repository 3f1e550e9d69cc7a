#pragma once
// A throwaway PostgreSQL server for tests: `initdb` into a temporary directory, started on a
// free loopback port with its socket in that directory, stopped and removed by the destructor.
// PostgreSQL refuses to run as root, so under root (CI) it runs as the `postgres` user that
// Debian's package creates. Anything that goes wrong throws std::runtime_error with the server's
// log: a test that needs PostgreSQL fails where it cannot have it, it never skips.
//
// Tests share one server per run where they can: shared_postgres() is the server a ctest
// fixture started (KERNELSCAN_TEST_POSTGRES names its admin URL), else one this process starts
// on first use. Each test then takes a database of its own (create_database()).

#include <memory>
#include <string>

namespace kernelscan::testing {

class postgres_server {
 public:
  // `dir`: where to put it (created; removed by the destructor unless detach()ed); empty: a new
  // temporary directory.
  explicit postgres_server(std::string dir = "");
  postgres_server(const postgres_server&) = delete;
  postgres_server& operator=(const postgres_server&) = delete;
  ~postgres_server();

  // Fast shutdown (clients are disconnected), then start again on the same port.
  void stop();
  void start();
  bool running() const { return m_running; }
  // Leave the server running and its files in place when this object is destroyed.
  void detach() { m_detached = true; }

  int port() const { return m_port; }
  const std::string& dir() const { return m_dir; }
  // postgresql://kernelscan@127.0.0.1:PORT/DATABASE (the superuser, trusted on loopback).
  std::string url(const std::string& database = "postgres") const;
  std::string log() const;

 private:
  std::string m_dir;
  int m_port = 0;
  bool m_running = false;
  bool m_detached = false;
};

// The admin URL of the server tests share (see above). Throws if it cannot be had.
std::string shared_postgres_url();

// A new, empty database on the shared server (or on `admin_url`'s); returns its URL.
std::string create_database(const std::string& admin_url = "");
// Drops a database create_database() made, disconnecting whoever is still connected.
void drop_database(const std::string& database_url);

// Stops a server left running by postgres_server::detach() in `dir`, and removes `dir`.
void stop_detached_postgres(const std::string& dir);

}  // namespace kernelscan::testing
