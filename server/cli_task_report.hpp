#pragma once
// `kernelscan tasks`: the daemon's evaluation tasks as a table, and one task as the author of a
// candidate reads it (what the kernel must take, the sizes it is measured at, how it is scored)
// before `kernelscan evaluate` submits one. Pure functions of the API's JSON (TaskList, Task).
//
// Threading: none (one command, one report).

#include <string>

#include "api/json.hpp"

namespace kernelscan {

// One line per task: name, status, language, points (public, and how many held out), target,
// the caller's submissions (used of the bound, where the task bounds them), description.
std::string task_table(const json& tasks);

// One task: its kernel's arguments, launch defaults, public sizes (held-out sizes only where the
// daemon showed them, to an operator), work, reference, tolerances, fitness, the bound on
// submissions, and the command that submits a candidate.
std::string task_report(const json& task);

}  // namespace kernelscan
