// The PostgreSQL server a test run shares (a ctest fixture): `postgres_fixture start DIR`
// initialises and starts one in a new temporary directory (under /tmp, which the postgres user
// can reach wherever the build is), writes its admin URL to DIR/url and its directory to
// DIR/server, and leaves it running; `postgres_fixture stop DIR` stops it and removes both.
// Tests find it through KERNELSCAN_TEST_POSTGRES=DIR/url.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "tests/support/postgres_server.hpp"

namespace {

void stop(const std::string& dir) {
  std::ifstream in(dir + "/server");
  std::string server;
  if (std::getline(in, server) && !server.empty()) {
    kernelscan::testing::stop_detached_postgres(server);
  }
  std::error_code ec;
  std::filesystem::remove(dir + "/server", ec);
  std::filesystem::remove(dir + "/url", ec);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kernelscan::testing;
  const std::string usage = "usage: postgres_fixture start|stop DIR";
  if (argc != 3) {
    std::cerr << usage << "\n";
    return 2;
  }
  const std::string command = argv[1], dir = argv[2];
  try {
    if (command == "start") {
      stop(dir);  // left over from an interrupted run
      std::filesystem::create_directories(dir);
      postgres_server server;
      server.detach();
      std::ofstream(dir + "/server") << server.dir() << "\n";
      std::ofstream(dir + "/url.tmp") << server.url() << "\n";
      std::rename((dir + "/url.tmp").c_str(), (dir + "/url").c_str());
      std::cout << "PostgreSQL for the tests: " << server.url() << " in " << server.dir() << "\n";
      return 0;
    }
    if (command == "stop") {
      stop(dir);
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "postgres_fixture " << command << ": " << e.what() << "\n";
    return 1;
  }
  std::cerr << usage << "\n";
  return 2;
}
