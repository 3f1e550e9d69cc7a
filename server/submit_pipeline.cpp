#include "server/submit_pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "api/api_error.hpp"
#include "api/device_codec.hpp"
#include "api/held_out.hpp"
#include "api/import_codec.hpp"
#include "api/job_codec.hpp"
#include "api/job_spec_codec.hpp"
#include "api/result_codec.hpp"
#include "api/task_codec.hpp"
#include "engine/device_needs.hpp"
#include "engine/entropy.hpp"
#include "engine/language_support.hpp"
#include "engine/text_list.hpp"
#include "server/fleet_devices.hpp"

namespace kernelscan {
namespace {

api_error idempotency_conflict(const std::string& key, std::int64_t id) {
  return api_error(409, "idempotency_conflict",
                   "Idempotency-Key \"" + key + "\" was used for a different request (job " +
                       std::to_string(id) + ")",
                   {}, json{{"job_id", id}});
}

constexpr double k_ms_per_hour = 3600e3;

// The start of the window a task's bound counts an agent's submissions in (0: the task's life).
std::int64_t window_start(const submission_bound& b, std::int64_t now_ms) {
  return b.window_hours ? now_ms - std::int64_t(*b.window_hours * k_ms_per_hour) : 0;
}

// An agent as a message names it: "address 10.0.0.7", or "its bearer token".
std::string agent_text(const std::string& agent) {
  constexpr std::string_view k_address = "address:";
  if (agent.rfind(k_address, 0) == 0) return "address " + agent.substr(k_address.size());
  return "its bearer token";
}

std::string counted_text(std::int64_t n) {
  return std::to_string(n) + (n == 1 ? " submission" : " submissions");
}

}  // namespace

api_error submit_pipeline::submission_limit(const task_origin& origin, const agent_count& counted,
                                            std::int64_t now_ms) {
  const submission_bound& bound = *origin.bound;
  std::string message = "task \"" + origin.task + "\" takes at most " +
                        counted_text(bound.per_agent) + " from each agent";
  json context{{"task", origin.task}, {"per_agent", bound.per_agent}};
  std::string next = ": it takes no more from it";
  if (bound.window_hours) {
    // The oldest counted submission leaves the window first.
    const std::int64_t free_ms =
        counted.oldest_ms.value_or(now_ms) + std::int64_t(*bound.window_hours * k_ms_per_hour);
    std::ostringstream hours;
    hours << *bound.window_hours;
    message += " in " + hours.str() + (*bound.window_hours == 1 ? " hour" : " hours");
    next = ": the next is taken from " + format_time_ms(free_ms);
    context["window_hours"] = *bound.window_hours;
    context["retry_after_s"] = std::ceil(std::max(1.0, double(free_ms - now_ms) / 1e3));
  }
  message += ", and this agent (" + agent_text(origin.agent) + ") has made " +
             std::to_string(counted.jobs) + next;
  return api_error(429, "submission_limit", message, {}, std::move(context));
}

json submit_pipeline::submissions_left(const task_record& task, const std::string& agent) {
  const auto bound = submission_bound_of(parse_json(task.template_json));
  if (!bound) return nullptr;
  const std::int64_t used =
      m_store.agent_submissions(task.name, agent, window_start(*bound, unix_time_ms())).jobs;
  return {{"used", used}, {"remaining", std::max<std::int64_t>(0, bound->per_agent - used)}};
}

submit_pipeline::submit_pipeline(job_store& store, event_hub& events, const serve_config& config,
                                 hooks h, seed_source seeds)
    : m_store(store),
      m_events(events),
      m_config(config),
      m_hooks(std::move(h)),
      m_seeds(std::move(seeds)) {}

std::string submit_pipeline::request_hash(std::string_view data) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a: tells a retry from a different body
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// The devices of the fleet a spec could run on (live ones: a node that stopped or went quiet
// takes nothing); checks its engine, placement, kernel language and needs (f64, its GEMMs'
// dtypes) against what exists. A job with user kernels and engine auto is placed on the engine
// that runs their language: a real one (HIP, then OpenCL) where the fleet has it, else the mock.
submit_pipeline::placement submit_pipeline::check_placement(const job_spec& spec) {
  const auto devices = m_hooks.devices();
  placement p;
  bool any = false, placed_but_refused = false;
  // "kernel.language: ...", "kernel.dtype: ...": why the first device that matched refused.
  std::string refusal;
  std::optional<engine_kind> real, mock;
  std::set<std::string> nodes, models;
  std::set<int> indices;  // of the live devices the placement's other fields match
  std::map<std::string, int> kinds;
  std::size_t live = 0;
  for (const auto& d : devices) {
    if (device_text(d, "state") == "offline") continue;
    ++live;
    nodes.insert(device_text(d, "node"));
    if (!device_text(d, "model").empty()) models.insert(device_text(d, "model"));
    ++kinds[device_text(d, "engine")];
    device_info info;
    info.index = d.value("index", -1);
    info.engine = parse_engine_kind(device_text(d, "engine")).value_or(engine_kind::mock);
    info.vendor = device_text(d, "vendor");
    info.name = device_text(d, "name");
    info.arch = device_text(d, "arch");
    try {
      info.capabilities = device_capabilities_from_json(d.value("capabilities", json(nullptr)));
    } catch (const std::exception&) {
      // A node's description we cannot read: its worker refuses what it cannot run.
    }
    const bool engine_ok = spec.engine == engine_kind::any || spec.engine == info.engine;
    const bool index_ok = !spec.device || *spec.device == info.index;
    const bool node_ok = !spec.device_node || *spec.device_node == device_text(d, "node");
    const bool model_ok = !spec.device_model || *spec.device_model == device_text(d, "model");
    if (engine_ok && node_ok && model_ok) indices.insert(info.index);
    if (!(engine_ok && index_ok && node_ok && model_ok)) continue;
    auto why = unsupported_language(spec, info);
    if (!why) why = unmet_need(spec, info);
    if (why) {
      if (!placed_but_refused) refusal = *why;
      placed_but_refused = true;
      continue;
    }
    any = true;
    p.max_memory = std::max(p.max_memory, d.value("memory_bytes", std::uint64_t(0)));
    auto& slot = info.engine == engine_kind::mock ? mock : real;
    if (!slot) slot = info.engine;
  }
  p.engine = spec.engine;
  p.needs = job_needs(spec);
  const auto is_custom = [](const kernel_spec& k) {
    return std::holds_alternative<custom_spec>(k);
  };
  const bool user_kernels =
      is_custom(spec.kernel) || (spec.fitness.baseline && is_custom(*spec.fitness.baseline)) ||
      std::any_of(spec.variants.begin(), spec.variants.end(),
                  [&](const kernel_variant& v) { return is_custom(v.kernel); });
  if (spec.engine == engine_kind::any && user_kernels && any) {
    // Only the engine that runs the job's kernels may take it, a real one before the mock.
    p.engine = real ? *real : *mock;
  }
  if (!any) {
    auto list = [](const std::set<std::string>& s) {
      return s.empty() ? std::string("none") : comma_joined(s);
    };
    std::string have;
    for (const auto& [kind, n] : kinds)
      have += (have.empty() ? "" : ", ") + std::to_string(n) + " " + kind;
    std::vector<field_error> errors;
    if (placed_but_refused) {
      const auto colon = refusal.find(": ");
      errors.push_back({refusal.substr(0, colon), "no device runs this kernel (live devices: " +
                                                      (have.empty() ? std::string("none") : have) +
                                                      "): " + refusal.substr(colon + 2)});
    } else if (spec.engine != engine_kind::any && !spec.device && !spec.device_node &&
               !spec.device_model) {
      const std::string kind = spec.engine == engine_kind::hip      ? "a HIP"
                               : spec.engine == engine_kind::opencl ? "an OpenCL"
                                                                    : "a mock";
      errors.push_back({"engine", "no live node has " + kind + " device (there are " +
                                      std::to_string(live) + " device(s), on nodes " + list(nodes) +
                                      ")"});
    } else if (spec.device_node && !nodes.count(*spec.device_node)) {
      errors.push_back({"device.node", "no live node \"" + *spec.device_node +
                                           "\" (live nodes: " + list(nodes) + ")"});
    } else if (spec.device_model && !models.count(*spec.device_model)) {
      errors.push_back({"device.model", "no live device is a " + *spec.device_model +
                                            " (models: " + list(models) + ")"});
    } else if (spec.device && !indices.count(*spec.device) && !indices.empty()) {
      // An index the matching devices do not have: named as the spec gave it.
      std::string numbers;
      for (const int i : indices)
        numbers += (numbers.empty() ? "" : ", ") + std::to_string(i);
      std::vector<std::string> where;
      if (spec.device_node) where.push_back("on node \"" + *spec.device_node + "\"");
      if (spec.device_model) where.push_back("of model " + *spec.device_model);
      if (spec.engine != engine_kind::any) {
        where.push_back("with engine " + std::string(to_string(spec.engine)));
      }
      errors.push_back({spec.device_node || spec.device_model ? "device.index" : "device",
                        "no live device " + std::to_string(*spec.device) +
                            (where.empty() ? "" : " " + comma_joined(where)) +
                            " (its devices: " + numbers + ")"});
    } else if (spec.device || spec.device_node || spec.device_model) {
      errors.push_back({"device", "no live device matches it with engine " +
                                      std::string(to_string(spec.engine)) + " (" +
                                      std::to_string(live) + " device(s) on nodes " + list(nodes) +
                                      ", numbered from 0 on each)"});
    } else {
      errors.push_back({"engine", "no device runs engine " + std::string(to_string(spec.engine))});
    }
    throw validation_error(std::move(errors));
  }
  return p;
}

submit_result submit_pipeline::replay(std::int64_t id) {
  auto rec = m_store.get(id);
  if (!rec) throw api_error(500, "internal", "job " + std::to_string(id) + " vanished");
  return {id, false, job_json_text(*rec)};
}

// A retry gets the job its key created, whatever has changed since (limits, devices): the
// request was accepted once.
std::optional<submit_result> submit_pipeline::replay_known_key(const std::string& key,
                                                               const std::string& request_hash) {
  if (key.size() > 200) {
    throw api_error(400, "invalid_header", "Idempotency-Key is longer than 200 characters",
                    {{"Idempotency-Key", "is longer than 200 characters"}});
  }
  if (!std::all_of(key.begin(), key.end(), [](char c) { return c >= 0x20 && c < 0x7f; })) {
    throw api_error(400, "invalid_header", "Idempotency-Key must be printable ASCII");
  }
  if (key.empty()) return std::nullopt;
  auto known = m_store.find_by_idempotency_key(key);
  if (!known) return std::nullopt;
  if (known->second != request_hash) throw idempotency_conflict(key, known->first);
  return replay(known->first);
}

submit_result submit_pipeline::submit(const std::string& body, const std::string& key) {
  const std::string hash = request_hash(body);
  if (auto replayed = replay_known_key(key, hash)) return std::move(*replayed);
  return store_job(parse_job_spec(parse_json(body), m_config.limits), key, hash);
}

submit_result submit_pipeline::submit_to_task(const task_record& task, const std::string& body,
                                              const std::string& key, const task_caller& caller) {
  const bool hide_held_out = !caller.sees_held_out;
  // One key names one request: the same body against another task is another request.
  const std::string hash = request_hash("task " + task.name + "\n" + body);
  if (auto replayed = replay_known_key(key, hash)) return std::move(*replayed);
  if (task.retired_ms) {
    throw api_error(409, "task_retired",
                    "task \"" + task.name + "\" was retired at " +
                        format_time_ms(*task.retired_ms) + ": it takes no new submissions",
                    {}, json{{"task", task.name}});
  }
  const json template_json = parse_json(task.template_json);
  const json job = task_job_body(task.name, template_json, parse_json(body));
  const task_origin origin{task.name, caller.agent,
                           caller.unbounded ? std::nullopt : submission_bound_of(template_json)};
  spec_limits limits = m_config.limits;
  limits.task_job = true;
  const std::optional<std::uint64_t> public_count = public_points(job);
  // What the candidate gave is named as it gave it ("source", not "kernel.source"), and a
  // held-out point is not described to it.
  const auto as_submitted = [&](const validation_error& e) {
    std::vector<field_error> errors = e.errors();
    for (auto& f : errors) {
      if (hide_held_out && public_count)
        f.message = scrubbed_field_message(f.message, *public_count);
      for (const char* given : k_submission_fields) {
        const std::string prefix = std::string("kernel.") + given;
        if (f.field.rfind(prefix, 0) == 0 &&
            (f.field.size() == prefix.size() || f.field[prefix.size()] == '.' ||
             f.field[prefix.size()] == '[')) {
          f.field.erase(0, 7);
        }
      }
    }
    return validation_error(std::move(errors));
  };
  try {
    return store_job(parse_job_spec(job, limits), key, hash, &origin);
  } catch (const validation_error& e) {
    throw as_submitted(e);
  }
}

void submit_pipeline::check_task(const job_spec& sample) {
  const placement where = check_placement(sample);
  plan_limits limits = m_config.limits.plan;
  if (where.max_memory > 0)
    limits.max_point_bytes = std::min(limits.max_point_bytes, where.max_memory);
  validate_points(compile_plan(sample, limits));
}

submit_result submit_pipeline::store_job(job_spec spec, const std::string& key,
                                         const std::string& hash, const task_origin* origin) {
  const placement where = check_placement(spec);
  const std::uint64_t memory = where.max_memory;
  if (!spec.seed) {
    std::lock_guard lock(m_seeds_mutex);
    spec.seed = m_seeds();
  }
  plan_limits limits = m_config.limits.plan;
  if (memory > 0) limits.max_point_bytes = std::min(limits.max_point_bytes, memory);
  const job_plan plan = compile_plan(spec, limits);
  validate_points(plan);

  job_submission sub;
  sub.name = spec.name;
  sub.labels = spec.labels;
  sub.priority = spec.priority;
  sub.engine = where.engine;
  sub.needs = where.needs;
  sub.requested_device = spec.device;
  sub.requested_node = spec.device_node;
  sub.requested_model = spec.device_model;
  sub.op = std::string(op_name(spec.kernel));
  sub.total_points = plan.size() * plan.kernels_per_point();
  sub.spec_json = to_json(spec).dump();
  sub.request_hash = hash;
  const std::int64_t now_ms = unix_time_ms();
  if (origin) {
    sub.task = origin->task;
    sub.agent = origin->agent;
    if (origin->bound) {
      sub.agent_bound =
          job_submission::bound{origin->bound->per_agent, window_start(*origin->bound, now_ms)};
    }
  }
  if (!key.empty()) sub.idempotency_key = key;
  // The store checks the key again inside its transaction: two concurrent first tries with
  // one key create one job.
  const auto outcome = m_store.submit(sub, now_ms);
  if (outcome.task_retired) {
    throw api_error(409, "task_retired",
                    "task \"" + origin->task + "\" was retired: it takes no new submissions", {},
                    json{{"task", origin->task}});
  }
  if (outcome.over_bound) throw submission_limit(*origin, outcome.counted, now_ms);
  if (outcome.conflict) throw idempotency_conflict(key, outcome.id);
  if (!outcome.created) return replay(outcome.id);
  // Read before enqueueing: the answer shows the job as accepted, not half-way through.
  std::string text = job_json_text(*m_store.get(outcome.id));
  m_events.publish("job", text);
  m_hooks.enqueue(outcome.id);
  return {outcome.id, true, std::move(text)};
}

// Results measured elsewhere become a finished job: parsed, analysed as measured points are,
// and stored with every row in one transaction.
submit_result submit_pipeline::import_results(const std::string& body_text,
                                              const std::string& key) {
  const std::string request_hash = submit_pipeline::request_hash(body_text);
  if (auto replayed = replay_known_key(key, request_hash)) return std::move(*replayed);
  const json body = parse_json(body_text);
  import_request imp;
  try {
    imp = parse_import(body, {m_config.limits.max_points, m_config.limits.max_labels});
  } catch (const validation_error& e) {
    throw api_error(422, "invalid_import", e.what(), e.errors());
  }
  const std::string format(to_string(imp.format));
  const std::string parameter(point_parameter(imp.format));
  std::vector<result_row> rows;
  rows.reserve(imp.kernels.size());
  for (std::size_t i = 0; i < imp.kernels.size(); ++i) {
    const point_result point =
        imported_point(imp.kernels[i], i, {{parameter, std::int64_t(i)}}, imp.target, format);
    result_row row;
    row.index = i;
    row.ok = true;
    row.median_us = point.origin->time_us.median;
    row.params_json = params_json(point.params).dump();
    const json j = to_json(point);
    row.result_json = j.dump();
    // Unrelated kernels, some with counters and some without: the fastest is the best.
    row.cost = row.median_us;
    row.score = score_of(j);
    row.flags = flags_of(j);
    rows.push_back(std::move(row));
  }

  job_submission sub;
  sub.name = imp.name;
  sub.labels = imp.labels;
  sub.engine = engine_kind::imported;
  sub.op = "import";
  sub.total_points = rows.size();
  sub.spec_json = import_spec_json(imp).dump();
  sub.request_hash = request_hash;
  if (!key.empty()) sub.idempotency_key = key;
  const auto outcome = m_store.import_job(sub, rows, unix_time_ms());
  if (outcome.conflict) throw idempotency_conflict(key, outcome.id);
  if (!outcome.created) return replay(outcome.id);
  const std::string text = job_json_text(*m_store.get(outcome.id));
  m_events.publish("job", text);
  return {outcome.id, true, text};
}

std::uint64_t unpredictable_seed() {
  return entropy64() >> 1;  // kept within int64 for SQLite and JSON readers
}

}  // namespace kernelscan
