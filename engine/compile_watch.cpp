#include "engine/compile_watch.hpp"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

namespace kernelscan {
namespace {

// Memory can grow by a few hundred MB a second in a compile: checked this often, a limit is
// passed by little before it is seen.
constexpr auto k_poll = std::chrono::milliseconds(20);

struct watch_state {
  std::mutex mutex;
  std::condition_variable wake;
  compile_limits limits;
  compile_limit_handler on_exceeded;
  bool started = false;
  int depth = 0;  // compile scopes open
  std::chrono::steady_clock::time_point since;
  std::uint64_t resident_at_start = 0;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::string deadline_what;
};

// Never destroyed: the watch's detached thread waits on it until the process ends, and a
// condition variable destroyed at exit with a thread waiting on it blocks the exit for good.
watch_state& state() {
  static watch_state* s = new watch_state;
  return *s;
}

std::string mib(std::uint64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

[[noreturn]] void watch() {
  auto& s = state();
  std::unique_lock lock(s.mutex);
  for (;;) {
    s.wake.wait(lock, [&] { return s.depth > 0; });
    while (s.depth > 0) {
      s.wake.wait_for(lock, k_poll);
      if (s.depth == 0) break;
      const double ran =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - s.since).count();
      const std::uint64_t now = resident_bytes();
      const std::uint64_t gained = now > s.resident_at_start ? now - s.resident_at_start : 0;
      std::string why;
      if (s.deadline && std::chrono::steady_clock::now() > *s.deadline) {
        why = "the compiler ran for " + seconds_text(double(int(ran * 10)) / 10) + " s, past " +
              s.deadline_what + ", and was stopped";
      } else if (s.limits.seconds > 0 && ran > s.limits.seconds) {
        why = "the compiler ran for more than " + seconds_text(s.limits.seconds) +
              " s (the limit on one compile) and was stopped";
      } else if (s.limits.memory_bytes > 0 && gained > s.limits.memory_bytes) {
        why = "the compiler took more than " + mib(s.limits.memory_bytes) +
              " of memory (the limit on one compile) and was stopped after " +
              seconds_text(double(int(ran * 10)) / 10) + " s";
      }
      // Called with the lock held: the compile cannot end meanwhile, so the thread compiling
      // touches nothing the handler may write.
      if (!why.empty()) s.on_exceeded(why);
    }
  }
}

}  // namespace

void set_compile_limits(const compile_limits& limits, compile_limit_handler on_exceeded) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  s.limits = limits;
  s.on_exceeded = std::move(on_exceeded);
  // Started even without limits: the deadline (set_compile_deadline) may still end a compile.
  if (!s.started && s.on_exceeded) {
    s.started = true;
    std::thread(watch).detach();
  }
}

void set_compile_deadline(std::optional<std::chrono::steady_clock::time_point> deadline,
                          std::string what) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  s.deadline = deadline;
  s.deadline_what = std::move(what);
}

compile_scope::compile_scope() {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.started || s.depth++ > 0) return;
  s.since = std::chrono::steady_clock::now();
  s.resident_at_start = resident_bytes();
  s.wake.notify_one();
}

compile_scope::~compile_scope() {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (s.depth > 0) --s.depth;
}

std::uint64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace kernelscan
