#include "api/job_codec.hpp"

#include <ctime>

namespace kernelscan {

std::string format_time_ms(std::int64_t unix_ms) {
  const std::time_t secs = std::time_t(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", int(unix_ms % 1000));
  return buf;
}

json to_json(const job_record& job) {
  auto time_or_null = [](const std::optional<std::int64_t>& t) {
    return t ? json(format_time_ms(*t)) : json(nullptr);
  };
  json j;
  j["id"] = job.id;
  j["name"] = job.name;
  j["labels"] = json::object();
  for (const auto& [k, v] : job.labels)
    j["labels"][k] = v;
  j["status"] = to_string(job.status);
  j["op"] = job.op;
  j["priority"] = job.priority;
  j["engine"] = to_string(job.engine);
  j["requested_device"] = job.requested_device ? json(*job.requested_device) : json("any");
  j["device"] = job.device ? json(*job.device) : json(nullptr);
  j["progress"] = {{"done", job.progress.done},
                   {"total", job.progress.total},
                   {"ok", job.progress.ok},
                   {"failed", job.progress.failed}};
  j["created_at"] = format_time_ms(job.created_ms);
  j["started_at"] = time_or_null(job.started_ms);
  j["finished_at"] = time_or_null(job.finished_ms);
  j["cancel_requested"] = job.cancel_requested;
  j["error"] =
      job.error ? json{{"type", job.error->type}, {"message", job.error->message}} : json(nullptr);
  json best = nullptr;
  if (job.best) {
    best = {{"index", job.best->index},
            {"params",
             job.best->params_json.empty() ? json::object() : json::parse(job.best->params_json)},
            {"median_us", job.best->median_us}};
  }
  j["summary"] = {{"best", std::move(best)}, {"fitness", nullptr}};
  j["links"] = {{"self", "/api/v1/jobs/" + std::to_string(job.id)},
                {"results", "/api/v1/jobs/" + std::to_string(job.id) + "/results"}};
  if (!job.spec_json.empty()) j["spec"] = json::parse(job.spec_json);
  return j;
}

}  // namespace kernelscan
