// kernelscan: `serve` runs the daemon; `worker` is started by it, one per device.
#include <CLI/CLI.hpp>

#include "server/daemon.hpp"
#include "server/worker_main.hpp"

#ifndef KERNELSCAN_VERSION
#define KERNELSCAN_VERSION "dev"
#endif

int main(int argc, char** argv) {
  using namespace kernelscan;
  CLI::App app{"kernelscan: a GPU kernel profiling daemon with an HTTP/JSON API"};
  app.require_subcommand(1);
  app.set_version_flag("--version", KERNELSCAN_VERSION);

  serve_config sc;
  auto* serve = app.add_subcommand("serve", "Run the daemon");
  serve->set_config("--config", "", "Config file (TOML: key = value, keys as the long options)");
  auto env = [](CLI::Option* o, const char* name) {
    return o->envname(name)->capture_default_str();
  };
  env(serve->add_option("--listen", sc.listen, "HOST:PORT to serve on (port 0: any free port)"),
      "KERNELSCAN_LISTEN");
  env(serve->add_option("--data-dir", sc.data_dir, "Directory of the SQLite database"),
      "KERNELSCAN_DATA_DIR");
  env(serve->add_option("--mock-devices", sc.mock_devices, "Number of mock devices"),
      "KERNELSCAN_MOCK_DEVICES");
  env(serve->add_option("--mock-model", sc.mock_model, "Catalog GPU the mock devices imitate"),
      "KERNELSCAN_MOCK_MODEL");
  env(serve->add_option("--log-level", sc.log_level, "trace, debug, info, warn, error")
          ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"})),
      "KERNELSCAN_LOG_LEVEL");
  env(serve->add_option("--web-root", sc.web_root, "Serve the dashboard from this directory"),
      "KERNELSCAN_WEB_ROOT");
  env(serve->add_option("--port-file", sc.port_file, "Write the bound port to this file"),
      "KERNELSCAN_PORT_FILE");
  env(serve->add_flag("--allow-fault-injection", sc.allow_fault_injection,
                      "Accept mock.fault in jobs (tests only)"),
      "KERNELSCAN_ALLOW_FAULT_INJECTION");
  env(serve->add_option("--http-threads", sc.http_threads, "Threads serving HTTP requests")
          ->check(CLI::Range(4, 1024)),
      "KERNELSCAN_HTTP_THREADS");
  env(serve
          ->add_option("--max-long-polls", sc.max_long_polls,
                       "Requests that may wait on jobs (?wait=) at once")
          ->check(CLI::Range(0, 1000)),
      "KERNELSCAN_MAX_LONG_POLLS");
  env(serve
          ->add_option("--point-timeout", sc.point_timeout_s,
                       "Watchdog seconds per point, on top of twice its timing budget")
          ->check(CLI::Range(0.1, 86400.0)),
      "KERNELSCAN_POINT_TIMEOUT");
  env(serve
          ->add_option("--drain-timeout", sc.drain_timeout_s,
                       "Seconds current points may take to finish on SIGTERM")
          ->check(CLI::Range(0.0, 3600.0)),
      "KERNELSCAN_DRAIN_TIMEOUT");
  env(serve->add_option("--max-body-bytes", sc.max_body_bytes, "Largest request body")
          ->check(CLI::Range(1024, 256 * 1024 * 1024)),
      "KERNELSCAN_MAX_BODY_BYTES");
  env(serve->add_option("--max-sweep-points", sc.limits.max_points, "Sweep points per job")
          ->check(CLI::Range(1, 10000000)),
      "KERNELSCAN_MAX_SWEEP_POINTS");
  env(serve
          ->add_option("--max-source-bytes", sc.limits.max_source_bytes,
                       "Largest custom kernel source")
          ->check(CLI::Range(1, 64 * 1024 * 1024)),
      "KERNELSCAN_MAX_SOURCE_BYTES");
  env(serve->add_option("--max-point-bytes", sc.limits.plan.max_point_bytes,
                        "Device memory one point may allocate (also capped by the device's)"),
      "KERNELSCAN_MAX_POINT_BYTES");

  worker_config wc;
  auto* worker = app.add_subcommand("worker", "Serve one device for the daemon (internal)");
  worker->group("");  // not listed in --help: never started by hand
  worker->add_option("--device", wc.device)->required();
  worker->add_option("--engine", wc.engine)->check(CLI::IsMember({"mock", "hip"}));
  worker->add_option("--mock-model", wc.mock_model);
  worker->add_option("--log-level", wc.log_level);
  worker->add_flag("--allow-fault-injection", wc.allow_fault_injection);

  CLI11_PARSE(app, argc, argv);
  if (*serve) return run_serve(sc);
  if (*worker) return run_worker(wc);
  return 2;
}
