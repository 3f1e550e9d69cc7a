#pragma once
// Limits on compiling a user kernel: how long one compile may run and how much memory it may
// take. A driver's compiler cannot be stopped inside its call, and a few lines of source can make
// it run for hours or take all of the machine's memory: a macro that doubles its text twenty
// times took PoCL 50 s and 2.2 GiB (each two more doublings, four times that), a
// `#pragma unroll` of a million iterations 3 GiB and minutes. So a thread of its own watches every
// compile in the process (compile_scope), and where one passes a limit it calls the handler the
// process set, which reports the compile and ends the process: the only way to stop it (a handler
// that returns is called again at the next check while the compile runs).
//
// Threading: set_compile_limits() before the first compile; compile_scope on the thread that
// compiles (scopes nest); the handler runs on the watch's thread while the compile is still in
// progress. Units: seconds, bytes.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace kernelscan {

struct compile_limits {
  double seconds = 0;              // wall time one compile may take; 0: no limit
  std::uint64_t memory_bytes = 0;  // resident memory the process may gain during one; 0: none
};

// Called with why the compile was stopped: "the compiler ran for more than 60 s (the limit
// on one compile)".
using compile_limit_handler = std::function<void(const std::string& why)>;

// Starts the watch. Without a call, compiles have no limits and no deadline.
void set_compile_limits(const compile_limits& limits, compile_limit_handler on_exceeded);

// A time by which any compile must end, and what that time is (`the point's watchdog budget of
// 34 s`), for the message; nullopt: none. A compile still running then would be ended by a
// watchdog outside the process anyway, as a `timeout` that names no compile. Thread-safe.
void set_compile_deadline(std::optional<std::chrono::steady_clock::time_point> deadline,
                          std::string what);

// Marks a compile in progress on this thread for the watch, from construction to destruction.
class compile_scope {
 public:
  compile_scope();
  ~compile_scope();
  compile_scope(const compile_scope&) = delete;
  compile_scope& operator=(const compile_scope&) = delete;
};

// This process's resident memory in bytes (0 where it cannot be read).
std::uint64_t resident_bytes();

}  // namespace kernelscan
