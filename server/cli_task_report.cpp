#include "server/cli_task_report.hpp"

#include <cstdint>
#include <cstdio>
#include <vector>

#include "engine/text_list.hpp"
#include "server/detail/text_table.hpp"

namespace kernelscan {
namespace {

using detail::counted;
using detail::one_line;

// A description is cut so that a task's row stays on one terminal line.
constexpr std::size_t k_max_description = 60;

// A number as a task's author wrote it: 50, 24, 0.0001, 2.5e-05.
std::string plain(double v) {
  if (v == static_cast<double>(static_cast<std::int64_t>(v)) && v > -1e15 && v < 1e15)
    return std::to_string(static_cast<std::int64_t>(v));
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

std::string string_or(const json& j, const char* key, const std::string& fallback) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                                : fallback;
}

// The values of a JSON array as text, between `separator`s: [256, 1, 1] as "256,1,1" with ",";
// anything else as it is.
std::string joined(const json& values, const char* separator = ", ") {
  if (!values.is_array()) return text_of(values);
  std::string out;
  for (const auto& v : values)
    out += (out.empty() ? "" : separator) + text_of(v);
  return out;
}

// Each parameter with its values: "N: 65536, 1048576; M: 8".
std::string sizes_text(const json& sweep) {
  if (!sweep.is_object() || sweep.empty()) return "none";
  std::string out;
  for (const auto& [name, values] : sweep.items())
    out += (out.empty() ? "" : "; ") + name + ": " + joined(values);
  return out;
}

std::int64_t count_of(const json& task, const char* key) {
  const auto n = number_at(task, (std::string("/") + key).c_str());
  return n ? static_cast<std::int64_t>(*n) : 0;
}

std::string points_text(const json& task) {
  const std::int64_t held = count_of(task, "held_out_points");
  return std::to_string(count_of(task, "public_points")) +
         (held ? " + " + std::to_string(held) + " held out" : "");
}

// A reference or baseline kernel in words: "stream triad f32", "gemm f16", or "the task's
// kernel ENTRY" (a custom one).
std::string kernel_text(const json& k) {
  const std::string op = string_or(k, "op", "?");
  if (op == "custom") return "the task's kernel " + string_or(k, "entry", "?");
  std::string out = op;
  if (k.contains("variant")) out += " " + text_of(k["variant"]);
  if (k.contains("dtype")) out += " " + text_of(k["dtype"]);
  return one_line(out);
}

// The reference the candidate's answers are compared with, or "none".
std::string reference_text(const json& kernel) {
  const json::json_pointer at{"/reference"};
  return kernel.contains(at) && kernel[at].is_object() ? kernel_text(kernel[at]) : "none";
}

// What the task scores a candidate against: "50 µs" (a target time), "over gemm f16" (a
// baseline's speedup), both, or "-".
std::string target_text(const json& task) {
  std::string out;
  if (const auto target = number_at(task, "/fitness/target_us")) out = plain(*target) + " µs";
  const json::json_pointer baseline{"/fitness/baseline"};
  if (task.contains(baseline) && task[baseline].is_object()) {
    out += (out.empty() ? "" : ", ") + std::string("over ") + kernel_text(task[baseline]);
  }
  return out.empty() ? "-" : out;
}

// The caller's submissions against the task's bound: "3 of 100 in 24 h", or "-" unbounded.
std::string submissions_text(const json& task, bool long_form) {
  const json::json_pointer at{"/submissions"};
  if (!task.contains(at) || !task[at].is_object()) return long_form ? "not bounded" : "-";
  const json& s = task[at];
  const auto per_agent = number_at(s, "/per_agent");
  if (!per_agent) return long_form ? "not bounded" : "-";
  const auto window = number_at(s, "/window_hours");
  const std::string over = window ? " in " + plain(*window) + " h" : " over the task's life";
  const auto used = number_at(s, "/used");
  const auto remaining = number_at(s, "/remaining");
  const auto n = [](double v) { return std::to_string(static_cast<std::int64_t>(v)); };
  if (!long_form) return (used ? n(*used) + " of " : "") + n(*per_agent) + over;
  std::string out = n(*per_agent) + " per agent" + over;
  if (used && remaining) out += ": " + n(*used) + " used, " + n(*remaining) + " remaining";
  return out;
}

// What a candidate's argument is: its type, and its elements and role or its value.
std::vector<std::string> argument_cells(const json& arg) {
  const std::string type = string_or(arg, "type", "?");
  std::string what;
  if (arg.value("local", false)) {
    what = text_of(arg.value("count", json())) + " elements a work-group (local memory)";
  } else if (!type.empty() && type.back() == '*') {
    what = text_of(arg.value("count", json())) + " elements";
    if (arg.value("output", false)) what += ", output (compared with the reference's)";
    if (arg.value("scratch", false)) what += ", scratch (written, not compared)";
    if (arg.contains("init") && !arg["init"].is_null()) what += ", init " + text_of(arg["init"]);
  } else {
    what = "= " + text_of(arg.value("value", json()));
  }
  return {string_or(arg, "name", "?"), type, one_line(what)};
}

}  // namespace

std::string task_table(const json& tasks) {
  if (!tasks.is_array() || tasks.empty()) return "no tasks\n";
  using col = detail::text_table::column;
  constexpr auto right = detail::text_table::align::right;
  detail::text_table table({col{"name"}, col{"status"}, col{"language"}, col{"points", right},
                            col{"target"}, col{"submissions"}, col{"description"}});
  for (const auto& t : tasks) {
    table.add_row({one_line(string_or(t, "name", "?")), string_or(t, "status", "?"),
                   string_or(t.value("kernel", json::object()), "language", "hip"), points_text(t),
                   target_text(t), submissions_text(t, false),
                   one_line(string_or(t, "description", ""), k_max_description)});
  }
  return table.render();
}

std::string task_report(const json& task) {
  std::string out;
  auto line = [&](const char* key, const std::string& value) {
    out += std::string(key) + std::string(13 - detail::display_width(key), ' ') + value + "\n";
  };
  const std::string name = string_or(task, "name", "?");
  const json kernel = task.value("kernel", json::object());
  const std::string language = string_or(kernel, "language", "hip");
  line("task", one_line(name) + ": " + string_or(task, "status", "?"));
  if (const std::string d = string_or(task, "description", ""); !d.empty())
    line("description", one_line(d));
  line("kernel",
       language + ", entry " + string_or(kernel, "entry", "?") + ", block " +
           joined(kernel.value("block", json()), ",") + ", grid " +
           joined(kernel.value("grid", json()), ",") +
           (kernel.contains("shared_bytes") ? ", shared_bytes " + text_of(kernel["shared_bytes"])
                                            : "") +
           " (defaults a submission may change)");
  if (kernel.contains("compile_options") && kernel["compile_options"].is_array() &&
      !kernel["compile_options"].empty()) {
    line("options", one_line(joined(kernel["compile_options"], " ")));
  }
  // The arguments in their order, as the kernel must take them.
  using col = detail::text_table::column;
  detail::text_table args({col{"argument"}, col{"type"}, col{"what"}});
  for (const auto& a : kernel.value("args", json::array()))
    args.add_row(argument_cells(a));
  line("arguments", "in this order:");
  out += args.render("             ");
  line("sizes", sizes_text(task.value("sweep", json::object())));
  const std::int64_t held = count_of(task, "held_out_points");
  if (task.contains("held_out") && task["held_out"].is_object()) {
    line("held out", sizes_text(task["held_out"]) + " (shown to an operator only)");
  } else if (held > 0) {
    line("held out", counted(held, "point") + " at sizes not shown, measured and scored with the " +
                         "public ones");
  }
  if (string_or(task, "held_out_scores", "") == "private")
    line("", "held-out scores are private: the score shown is over the public points");
  if (task.contains("dtypes") && task["dtypes"].is_array() && !task["dtypes"].empty())
    line("dtypes", joined(task["dtypes"]));
  std::vector<std::string> work;
  if (kernel.contains("flops")) work.push_back("flops " + text_of(kernel["flops"]));
  if (kernel.contains("bytes")) work.push_back("bytes " + text_of(kernel["bytes"]));
  if (!work.empty()) line("work", comma_joined(work) + " a launch");
  line("reference", reference_text(kernel));
  const json verify = task.value("verify", json::object());
  std::vector<std::string> checks;
  if (const auto trials = number_at(verify, "/trials"))
    checks.push_back(counted(static_cast<long long>(*trials), "trial"));
  if (const auto atol = number_at(verify, "/atol")) checks.push_back("atol " + plain(*atol));
  if (const auto rtol = number_at(verify, "/rtol")) checks.push_back("rtol " + plain(*rtol));
  if (!checks.empty()) line("verify", comma_joined(checks));
  std::vector<std::string> fitness;
  if (const auto target = number_at(task, "/fitness/target_us"))
    fitness.push_back("target " + plain(*target) + " µs");
  if (const json::json_pointer b{"/fitness/baseline"}; task.contains(b) && task[b].is_object())
    fitness.push_back("speedup over " + kernel_text(task[b]));
  if (const auto weight = number_at(task, "/fitness/correctness_weight"))
    fitness.push_back("correctness weight " + plain(*weight));
  line("fitness", fitness.empty() ? "-" : comma_joined(fitness));
  line("submissions", submissions_text(task, true));
  if (string_or(task, "status", "") == "active") {
    // OpenCL has no dynamic shared memory: its kernels declare their local memory.
    line("submit", "kernelscan evaluate " + name + " FILE (--entry, --block, --grid, " +
                       (language == "opencl" ? "" : "--shared-bytes, ") +
                       "--option to change the defaults)");
  } else {
    line("submit", "the task is retired: it takes no more submissions");
  }
  return out;
}

}  // namespace kernelscan
