// Evaluation tasks (README "Tasks"): an operator defines and retires them; agents read them and
// submit candidates against them through the submit pipeline.

#include <algorithm>

#include "api/detail/utf8.hpp"
#include "api/held_out.hpp"
#include "api/task_codec.hpp"
#include "server/detail/http_api_impl.hpp"

namespace kernelscan {
namespace {

// A "task" event: which task was defined or retired, as small as a fleet's notifications need
// and without its held-out sizes; a client reads the task again for the rest.
std::string task_event(const task_record& t) {
  return json{{"name", t.name}, {"status", t.retired_ms ? "retired" : "active"}}.dump();
}

json view_of(const task_record& t, bool with_held_out) {
  return task_json(t.name, t.description, parse_json(t.template_json), t.created_ms, t.retired_ms,
                   with_held_out);
}

}  // namespace

task_record http_api::impl::find_task(const std::string& name) {
  // No task's name holds a NUL or invalid UTF-8 (names come from JSON), and PostgreSQL refuses
  // such text: the store is not asked.
  std::optional<task_record> t;
  if (detail::valid_utf8(name) && name.find('\0') == std::string::npos) t = store.task(name);
  if (!t) {
    // The name from the path as a JSON string: any bytes a client sent (a NUL, invalid UTF-8),
    // escaped and cut to a length a message can show.
    constexpr std::size_t k_shown = 80;
    const std::string shown =
        json(detail::utf8_prefix(name, k_shown) + (name.size() > k_shown ? "…" : "")).dump();
    throw api_error(404, "not_found", "no task " + shown,
                    {{"name", "no task " + shown + " (GET /api/v1/tasks lists them)"}});
  }
  return std::move(*t);
}

response http_api::impl::create_task(const request& req) {
  const task_definition def = parse_task(parse_json(req.body), config.limits);
  submissions.check_task(def.sample);
  task_record t;
  t.name = def.name;
  t.description = def.description;
  t.template_json = def.template_json.dump();
  t.created_ms = unix_time_ms();
  if (!store.create_task(t)) {
    const auto taken = store.task(def.name);
    throw api_error(409, "task_exists",
                    "a task named \"" + def.name + "\" exists" +
                        (taken && taken->retired_ms ? " (retired; names are not reused)" : ""),
                    {{"name", "is taken"}}, json{{"task", def.name}});
  }
  events.publish("task", task_event(t));
  response r = json_response(201, view_of(t, true));
  r.headers.emplace_back("Location", "/api/v1/tasks/" + t.name);
  return r;
}

response http_api::impl::list_tasks(const request& req) {
  if (!req.query.empty()) {
    throw bad_parameter(req.query.begin()->first, "unknown parameter (this route takes none)");
  }
  json out = json::array();
  for (const auto& t : store.tasks())
    out.push_back(view_of(t, req.operator_access));
  return json_response(200, {{"tasks", std::move(out)}});
}

response http_api::impl::get_task(const request& req) {
  const task_record t = find_task(req.captures.at(0));
  json view = view_of(t, req.operator_access);
  // What the task's bound leaves the caller (one with an operator token is not bounded).
  if (view["submissions"].is_object() && !req.operator_token && req.agent) {
    view["submissions"].update(submissions.submissions_left(t, req.agent()));
  }
  return json_response(200, view);
}

response http_api::impl::retire_task(const request& req) {
  const std::string name = req.captures.at(0);
  switch (store.retire_task(name, unix_time_ms())) {
    case retire_outcome::not_found:
      find_task(name);  // throws its 404
      break;
    case retire_outcome::already_retired:
      throw api_error(409, "task_retired", "task \"" + name + "\" is already retired", {},
                      json{{"task", name}});
    case retire_outcome::retired:
      break;
  }
  const task_record t = find_task(name);
  events.publish("task", task_event(t));
  return json_response(200, view_of(t, true));
}

response http_api::impl::submit_to_task(const request& req) {
  const task_record task = find_task(req.captures.at(0));
  submit_result s = submissions.submit_to_task(
      task, req.body, req.header("Idempotency-Key"),
      {req.agent ? req.agent() : std::string(), req.operator_access, req.operator_token});
  if (!req.operator_access) s.job_text = redacted_job_event(s.job_text);
  return created(s);
}

}  // namespace kernelscan
