// Settings from a config file and the environment: command line > environment > file.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "tests/support/daemon_process.hpp"

namespace kernelscan::testing {
namespace {

std::string write_config(const std::string& dir, const std::string& text) {
  const std::string path = dir + "/kernelscan.toml";
  std::ofstream(path) << text;
  return path;
}

TEST(Config, SettingsComeFromTheFileAndTheEnvironmentOverridesIt) {
  daemon_process probe;  // for its temp dir
  const std::string file = write_config(probe.data_dir(),
                                        "# kernelscan settings\n"
                                        "[serve]\n"
                                        "mock-model = \"H200\"\n"
                                        "max_sweep_points = 50\n");
  {
    daemon_process daemon(
        {.mock_devices = 1, .allow_fault_injection = false, .extra_args = {"--config", file}});
    daemon.start();
    EXPECT_EQ(daemon.get("/api/v1/devices/0").body["model"], "H200");
    json spec = json::parse(R"({"kernel": {"op": "stream", "variant": "copy", "n": "N"},
                                "sweep": {"N": {"from": 1, "to": 60}}})");
    const auto r = daemon.post_json("/api/v1/jobs", spec);
    EXPECT_EQ(r.status, 422) << r.text;
    EXPECT_NE(r.text.find("limit is 50"), std::string::npos) << r.text;
  }
  {
    ::setenv("KERNELSCAN_MOCK_MODEL", "A100", 1);
    daemon_process daemon(
        {.mock_devices = 1, .allow_fault_injection = false, .extra_args = {"--config", file}});
    daemon.start();
    ::unsetenv("KERNELSCAN_MOCK_MODEL");
    EXPECT_EQ(daemon.get("/api/v1/devices/0").body["model"], "A100");
  }
  {
    // The command line beats both.
    ::setenv("KERNELSCAN_MOCK_MODEL", "A100", 1);
    daemon_process daemon({.mock_devices = 1,
                           .allow_fault_injection = false,
                           .extra_args = {"--config", file, "--mock-model", "MI250X"}});
    daemon.start();
    ::unsetenv("KERNELSCAN_MOCK_MODEL");
    EXPECT_EQ(daemon.get("/api/v1/devices/0").body["model"], "MI250X");
  }
}

TEST(Config, TheShippedConfigFilesAreValid) {
  // With the address and data directory a test needs (the command line wins).
  for (const char* file : {"/deploy/kernelscan.example.toml", "/deploy/systemd/kernelscan.toml"}) {
    SCOPED_TRACE(file);
    daemon_process daemon({.mock_devices = 1,
                           .allow_fault_injection = false,
                           .extra_args = {"--config", std::string(KERNELSCAN_SOURCE_DIR) + file}});
    daemon.start();
    EXPECT_EQ(daemon.get("/api/v1/devices/0").body["model"], "MI300X");
  }
}

TEST(Config, AnUnknownSettingStopsTheDaemonWithAClearMessage) {
  daemon_process probe;
  const std::string file = write_config(probe.data_dir(), "listen = \"127.0.0.1:0\"\nbogus = 1\n");
  daemon_process daemon(
      {.mock_devices = 1, .allow_fault_injection = false, .extra_args = {"--config", file}});
  EXPECT_THROW(daemon.start(), std::runtime_error);
  EXPECT_NE(daemon.log().find("unknown setting \"bogus\""), std::string::npos) << daemon.log();
}

TEST(Config, AnUnknownMockModelIsAStartUpError) {
  daemon_process daemon({.mock_devices = 1,
                         .allow_fault_injection = false,
                         .extra_args = {"--mock-model", "GTX1080"}});
  EXPECT_THROW(daemon.start(), std::runtime_error);
  EXPECT_NE(daemon.log().find("not in the catalog"), std::string::npos) << daemon.log();
}

TEST(Config, ABadTokenFileIsAStartUpErrorNotACrash) {
  daemon_process probe;
  const std::string file = write_config(probe.data_dir(), "short\n");  // tokens need 16+ chars
  daemon_process daemon(
      {.mock_devices = 1, .allow_fault_injection = false, .extra_args = {"--token-file", file}});
  EXPECT_THROW(daemon.start(), std::runtime_error);
  EXPECT_NE(daemon.log().find("at least 16 characters"), std::string::npos) << daemon.log();
  EXPECT_EQ(daemon.log().find("terminate called"), std::string::npos) << daemon.log();
}

}  // namespace
}  // namespace kernelscan::testing
