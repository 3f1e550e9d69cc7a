#include "server/metrics_text.hpp"

#include <map>
#include <optional>

namespace kernelscan {

std::string prometheus_text(job_store& store, const scheduler& sched, const http_metrics& requests,
                            int long_polls) {
  std::string out;
  auto gauge = [&out](const char* name, const char* help, const std::string& type) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  gauge("kernelscan_build_info", "The running version.", "gauge");
  out += std::string("kernelscan_build_info{version=\"") + KERNELSCAN_VERSION + "\"} 1\n";
  // The figures the store holds are left out while it cannot be read, and the page still
  // answers: it is how an operator sees an outage (kernelscan_storage_up 0, and the points
  // waiting for the store in kernelscan_points_unstored).
  std::optional<std::map<job_status, std::int64_t>> counts;
  try {
    counts = store.count_by_status();
  } catch (const storage_error& e) {
    if (!e.unavailable()) throw;
  }
  gauge("kernelscan_storage_up",
        "1 while the store can be read, 0 while it cannot (the job figures are left out then).",
        "gauge");
  out += std::string("kernelscan_storage_up ") + (counts ? "1" : "0") + "\n";
  if (counts) {
    auto count = [&](job_status st) {
      auto it = counts->find(st);
      return it == counts->end() ? std::int64_t(0) : it->second;
    };
    gauge("kernelscan_queue_depth", "Jobs waiting for a device.", "gauge");
    out += "kernelscan_queue_depth " + std::to_string(count(job_status::queued)) + "\n";
    gauge("kernelscan_jobs", "Jobs in the store, by state.", "gauge");
    for (auto st : {job_status::queued, job_status::running, job_status::succeeded,
                    job_status::failed, job_status::cancelled}) {
      out += "kernelscan_jobs{state=\"" + std::string(to_string(st)) + "\"} " +
             std::to_string(count(st)) + "\n";
    }
  }
  gauge("kernelscan_points_measured_total", "Sweep points measured since the daemon started.",
        "counter");
  out += "kernelscan_points_measured_total " + std::to_string(sched.points_measured()) + "\n";
  gauge("kernelscan_points_unstored",
        "Measured points waiting for storage (grows while it "
        "fails).",
        "gauge");
  out += "kernelscan_points_unstored " + std::to_string(sched.points_unstored()) + "\n";
  gauge("kernelscan_worker_restarts_total",
        "Worker processes restarted since the daemon "
        "started.",
        "counter");
  out += "kernelscan_worker_restarts_total " + std::to_string(sched.worker_restarts()) + "\n";
  gauge("kernelscan_devices", "Devices, by state.", "gauge");
  std::map<std::string, int> states;
  for (auto st : {device_state::starting, device_state::idle, device_state::busy,
                  device_state::restarting, device_state::failed}) {
    states[std::string(to_string(st))] = 0;
  }
  for (const auto& d : sched.devices())
    ++states[std::string(to_string(d.state))];
  for (const auto& [st, n] : states) {
    out += "kernelscan_devices{state=\"" + st + "\"} " + std::to_string(n) + "\n";
  }
  for (const auto& m : store.metrics()) {
    gauge(m.name.c_str(), m.help.c_str(), m.type);
    out += m.name + " " + std::to_string(std::int64_t(m.value)) + "\n";
  }
  gauge("kernelscan_long_polls", "Requests waiting on a job (?wait=).", "gauge");
  out += "kernelscan_long_polls " + std::to_string(long_polls) + "\n";
  out += requests.exposition();
  return out;
}

}  // namespace kernelscan
