#include "api/job_codec.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "api/detail/json_writer.hpp"

namespace kernelscan {

std::optional<std::int64_t> parse_time_ms(std::string_view t) {
  // Exactly "YYYY-MM-DDTHH:MM:SS.mmmZ", as the daemon writes them.
  constexpr std::string_view shape = "dddd-dd-ddTdd:dd:dd.dddZ";
  if (t.size() != shape.size()) return std::nullopt;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const bool digit = std::isdigit(static_cast<unsigned char>(t[i])) != 0;
    if (shape[i] == 'd' ? !digit : t[i] != shape[i]) return std::nullopt;
  }
  auto num = [&](std::size_t at, std::size_t n) {
    std::int64_t v = 0;
    for (std::size_t i = at; i < at + n; ++i)
      v = v * 10 + (t[i] - '0');
    return v;
  };
  const std::int64_t y0 = num(0, 4), m = num(5, 2), d = num(8, 2);
  if (m < 1 || m > 12 || d < 1 || d > 31) return std::nullopt;
  // Days since the epoch from a civil date (H. Hinnant's algorithm, the inverse of the one the
  // daemon formats with).
  const std::int64_t y = y0 - (m <= 2);
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const std::int64_t days = era * 146097 + doe - 719468;
  return ((days * 24 + num(11, 2)) * 60 + num(14, 2)) * 60000 + num(17, 2) * 1000 + num(20, 3);
}

std::string format_time_ms(std::int64_t unix_ms) {
  // Civil date from days since the epoch (H. Hinnant's algorithm): no locale, no libc tm.
  std::int64_t secs = unix_ms / 1000, ms = unix_ms % 1000;
  if (ms < 0) {
    ms += 1000;
    --secs;
  }
  std::int64_t days = secs / 86400, rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  const std::int64_t z = days + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const std::int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const std::int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const std::int64_t year = yoe + era * 400 + (month <= 2);
  // "YYYY-MM-DDTHH:MM:SS.mmmZ", written digit by digit (this runs three times per job served).
  std::string out = "0000-00-00T00:00:00.000Z";
  auto put = [&out](std::size_t at, std::int64_t v, int digits) {
    for (int d = digits - 1; d >= 0; --d, v /= 10)
      out[at + std::size_t(d)] = char('0' + v % 10);
  };
  put(0, std::clamp<std::int64_t>(year, 0, 9999), 4);
  put(5, month, 2);
  put(8, day, 2);
  put(11, rem / 3600, 2);
  put(14, rem / 60 % 60, 2);
  put(17, rem % 60, 2);
  put(20, ms, 3);
  return out;
}

json to_json(const job_record& job) {
  return json::parse(job_json_text(job));
}

std::string job_json_text(const job_record& job) {
  std::string out;
  out.reserve(768 + job.spec_json.size());
  detail::json_writer w(out);
  auto time_or_null = [&](const std::optional<std::int64_t>& t) {
    if (t) {
      w.value(format_time_ms(*t));
    } else {
      w.null();
    }
  };
  const std::string self = "/api/v1/jobs/" + std::to_string(job.id);
  w.begin_object();
  w.key("id").value(job.id);
  w.key("name").value(job.name);
  w.key("labels").begin_object();
  for (const auto& [k, v] : job.labels)
    w.key(k).value(v);
  w.end_object();
  w.key("status").value(to_string(job.status));
  w.key("op").value(job.op);
  w.key("priority").value(job.priority);
  w.key("engine").value(to_string(job.engine));
  w.key("requested_device");
  if (job.requested_node || job.requested_model) {
    w.begin_object();
    if (job.requested_node) w.key("node").value(*job.requested_node);
    if (job.requested_device) w.key("index").value(*job.requested_device);
    if (job.requested_model) w.key("model").value(*job.requested_model);
    w.end_object();
  } else if (job.requested_device) {
    w.value(*job.requested_device);
  } else {
    w.value("any");
  }
  w.key("device");
  if (job.device) {
    w.value(*job.device);
  } else {
    w.null();
  }
  w.key("node");
  if (job.node.empty()) {
    w.null();
  } else {
    w.value(job.node);
  }
  w.key("progress").begin_object();
  w.key("done").value(job.progress.done).key("total").value(job.progress.total);
  w.key("ok").value(job.progress.ok).key("failed").value(job.progress.failed);
  w.end_object();
  w.key("created_at").value(format_time_ms(job.created_ms));
  w.key("started_at");
  time_or_null(job.started_ms);
  w.key("finished_at");
  time_or_null(job.finished_ms);
  w.key("cancel_requested").value(job.cancel_requested);
  w.key("error");
  if (job.error) {
    w.begin_object().key("type").value(job.error->type);
    w.key("message").value(job.error->message).end_object();
  } else {
    w.null();
  }
  w.key("summary").begin_object().key("best");
  if (job.best && job.best->held_out) {
    // A task's held-out point: which one and that it is held out, never its sizes or time.
    w.begin_object().key("index").value(job.best->index).key("held_out").value(true);
    w.end_object();
  } else if (job.best) {
    w.begin_object().key("index").value(job.best->index).key("params");
    w.raw(job.best->params_json.empty() ? std::string_view("{}") : job.best->params_json);
    w.key("median_us").value(job.best->median_us).end_object();
  } else {
    w.null();
  }
  w.key("fitness");
  if (job.fitness_json.empty()) {
    w.null();
  } else {
    w.raw(job.fitness_json);
  }
  if (!job.variants_json.empty()) w.key("variants").raw(job.variants_json);
  w.end_object();
  w.key("cached_from");
  if (job.cached_from) {
    w.value(*job.cached_from);
  } else {
    w.null();
  }
  w.key("task");
  if (job.task) {
    w.value(*job.task);
  } else {
    w.null();
  }
  w.key("links").begin_object().key("self").value(self);
  w.key("results").value(self + "/results").end_object();
  if (!job.spec_json.empty()) w.key("spec").raw(job.spec_json);  // stored canonical JSON
  w.end_object();
  return out;
}

std::string variants_json_text(const variant_summary& s) {
  json variants = json::array();
  for (const auto& v : s.variants) {
    variants.push_back(
        {{"name", v.name},
         {"ok_points", v.ok_points},
         {"wins", v.wins},
         {"voided_points", v.voided_points},
         {"geomean_speedup", v.geomean_speedup ? json(*v.geomean_speedup) : json(nullptr)}});
  }
  return json{{"baseline", s.baseline ? json(*s.baseline) : json(nullptr)},
              {"speedup_over", s.over_baseline ? "baseline" : "slowest"},
              {"points", s.points},
              {"best", s.best ? json(*s.best) : json(nullptr)},
              {"variants", std::move(variants)}}
      .dump();
}

namespace {

json fitness_json(const job_fitness& f) {
  auto or_null = [](const std::optional<double>& x) { return x ? json(*x) : json(nullptr); };
  return json{{"correct", f.correct},
              {"points", f.points},
              {"ok_points", f.ok_points},
              {"correct_points", f.correct_points},
              {"speedup", or_null(f.speedup)},
              {"latency_score", or_null(f.latency_score)},
              {"combined_score", f.combined_score},
              {"withheld", f.withheld},
              {"confirmed", f.confirmed},
              {"flags", f.flags},
              {"simulated", f.simulated}};
}

}  // namespace

std::string fitness_json_text(const job_fitness& f) {
  return fitness_json(f).dump();
}

namespace {

// summarize_fitness over `points`, with every flag they raised (sorted, once each).
json summary_of(std::span<const scored_point> points, std::uint64_t total_points, bool succeeded,
                const score_rules& rules) {
  std::set<std::string> flags;
  for (const auto& p : points)
    flags.insert(p.flags.begin(), p.flags.end());
  return fitness_json(
      summarize_fitness(points, total_points, succeeded, {flags.begin(), flags.end()}, rules));
}

}  // namespace

std::string job_fitness_text(std::span<const scored_point> points, std::uint64_t total_points,
                             bool succeeded, const score_rules& rules,
                             std::optional<std::uint64_t> public_points) {
  json j = summary_of(points, total_points, succeeded, rules);
  if (public_points) {
    std::vector<scored_point> shown;
    std::copy_if(points.begin(), points.end(), std::back_inserter(shown),
                 [&](const scored_point& p) { return p.index < *public_points; });
    j["public"] = summary_of(shown, *public_points, succeeded, rules);
  }
  return j.dump();
}

}  // namespace kernelscan
