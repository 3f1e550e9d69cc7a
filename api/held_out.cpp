#include "api/held_out.hpp"

#include <cctype>

namespace kernelscan {

std::optional<std::uint64_t> public_points(const json& spec) {
  if (!spec.is_object()) return std::nullopt;
  const auto held = spec.find("held_out");
  if (held == spec.end() || !held->is_object()) return std::nullopt;
  std::uint64_t n = 1;
  if (const auto sweep = spec.find("sweep"); sweep != spec.end() && sweep->is_object()) {
    for (const auto& [name, values] : sweep->items())
      n *= values.is_array() ? values.size() : 1;
  }
  return n;
}

std::optional<std::uint64_t> public_points(const std::string& spec_json) {
  if (spec_json.empty() || spec_json.find("\"held_out\"") == std::string::npos) {
    return std::nullopt;
  }
  return public_points(json::parse(spec_json));
}

namespace {

// Where `message` first names a held-out point ("point K", K at least `public_points`), or npos.
std::size_t held_out_mention(const std::string& message, std::uint64_t public_points) {
  for (std::size_t at = message.find("point "); at != std::string::npos;
       at = message.find("point ", at + 1)) {
    std::size_t end = at + 6;
    while (end < message.size() && std::isdigit(static_cast<unsigned char>(message[end])))
      ++end;
    if (end == at + 6 || end - at - 6 > 19) continue;
    if (std::stoull(message.substr(at + 6, end - at - 6)) >= public_points) return at;
  }
  return std::string::npos;
}

constexpr const char* k_not_shown = "a held-out point (its details are not shown)";

}  // namespace

std::string scrubbed_message(const std::string& message, std::uint64_t public_points) {
  // The message is kept up to where the first held-out point is named.
  const std::size_t cut = held_out_mention(message, public_points);
  if (cut == std::string::npos) return message;
  return message.substr(0, cut) + k_not_shown;
}

std::string scrubbed_field_message(const std::string& message, std::uint64_t public_points) {
  if (held_out_mention(message, public_points) == std::string::npos) return message;
  return std::string("is not valid at ") + k_not_shown;
}

bool private_held_out_scores(const json& spec) {
  if (!spec.is_object()) return false;
  const auto it = spec.find("held_out_scores");
  return it != spec.end() && it->is_string() && *it == "private";
}

namespace {

// A job's stored fitness summary as a candidate of a task with private held-out scores sees it:
// its "public" part, marked as such (empty while the job runs).
json public_fitness(const json& fitness) {
  if (!fitness.is_object()) return fitness;
  const auto it = fitness.find("public");
  json shown = it != fitness.end() && it->is_object()
                   ? *it
                   : json{{"correct", false}, {"combined_score", 0.0}};
  shown["held_out"] = "private";
  return shown;
}

}  // namespace

std::string redacted_row(const std::string& result_json, bool private_scores) {
  const json row = json::parse(result_json);
  if (private_scores) {
    return json{{"index", row.value("index", json(nullptr))},
                {"held_out", true},
                {"status", row.value("status", json(nullptr))}}
        .dump();
  }
  json fitness = {{"correct", false}, {"combined_score", 0.0}};
  if (const auto f = row.find("fitness"); f != row.end() && f->is_object()) {
    fitness["correct"] = f->value("correct", false);
    fitness["combined_score"] = f->value("combined_score", 0.0);
  }
  return json{{"index", row.value("index", json(nullptr))},
              {"held_out", true},
              {"status", row.value("status", json(nullptr))},
              {"fitness", std::move(fitness)},
              {"flags", row.value("flags", json::array())}}
      .dump();
}

void redact_job(job_record& job, const std::string& spec_json) {
  const std::string& text = job.spec_json.empty() ? spec_json : job.spec_json;
  if (text.find("\"held_out\"") == std::string::npos) return;
  json spec = json::parse(text);
  const auto n = public_points(spec);
  if (!n) return;
  if (job.error) job.error->message = scrubbed_message(job.error->message, *n);
  if (job.best && job.best->index >= *n) {
    job.best->held_out = true;
    job.best->params_json.clear();
    job.best->median_us = 0;
  }
  if (private_held_out_scores(spec) && !job.fitness_json.empty()) {
    job.fitness_json = public_fitness(json::parse(job.fitness_json)).dump();
  }
  if (!job.spec_json.empty()) {
    spec.erase("held_out");
    job.spec_json = spec.dump();
  }
}

std::string redacted_job_event(const std::string& job_text) {
  if (job_text.find("\"held_out\"") == std::string::npos) return job_text;
  json job = json::parse(job_text);
  const auto spec = job.find("spec");
  if (spec == job.end()) return job_text;
  const auto n = public_points(*spec);
  if (!n) return job_text;
  if (auto& error = job["error"]; error.is_object() && error["message"].is_string()) {
    error["message"] = scrubbed_message(error["message"].get<std::string>(), *n);
  }
  auto& best = job["summary"]["best"];
  if (best.is_object() && best.value("index", std::uint64_t(0)) >= *n) {
    best = {{"index", best["index"]}, {"held_out", true}};
  }
  if (private_held_out_scores(*spec)) {
    if (auto& fitness = job["summary"]["fitness"]; fitness.is_object()) {
      fitness = public_fitness(fitness);
    }
  }
  spec->erase("held_out");
  return job.dump();
}

}  // namespace kernelscan
