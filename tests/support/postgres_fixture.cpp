// The PostgreSQL server a test run shares (a ctest fixture): `postgres_fixture start DIR`
// initialises and starts one in DIR and writes its admin URL to DIR/url, leaving it running;
// `postgres_fixture stop DIR` stops it and removes DIR. Tests find it through
// KERNELSCAN_TEST_POSTGRES=DIR/url.
#include <fstream>
#include <iostream>
#include <string>

#include "tests/support/postgres_server.hpp"

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
      stop_detached_postgres(dir);  // left over from an interrupted run
      postgres_server server(dir);
      server.detach();
      std::ofstream(dir + "/url.tmp") << server.url() << "\n";
      std::rename((dir + "/url.tmp").c_str(), (dir + "/url").c_str());
      std::cout << "PostgreSQL for the tests: " << server.url() << " in " << dir << "\n";
      return 0;
    }
    if (command == "stop") {
      stop_detached_postgres(dir);
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "postgres_fixture " << command << ": " << e.what() << "\n";
    return 1;
  }
  std::cerr << usage << "\n";
  return 2;
}
