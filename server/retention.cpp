#include "server/retention.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "api/json.hpp"
#include "storage/storage_error.hpp"

namespace kernelscan {
namespace {

// Jobs read from the store at a time; each is then deleted in a transaction of its own.
constexpr std::size_t k_batch = 100;

}  // namespace

delete_outcome delete_and_announce(job_store& store, event_hub& events, std::int64_t id) {
  const delete_outcome out = store.delete_job(id);
  if (out == delete_outcome::deleted) events.publish("job_deleted", json{{"job_id", id}}.dump());
  return out;
}

retention::retention(job_store& store, event_hub& events, const clock& time,
                     std::chrono::milliseconds keep)
    : m_store(store), m_events(events), m_clock(time), m_keep(keep) {}

void retention::start() {
  if (m_keep.count() > 0 && !m_thread.joinable()) m_thread = std::thread([this] { run(); });
}

retention::~retention() {
  stop();
}

void retention::stop() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  m_wake.notify_all();
  if (m_thread.joinable() && m_thread.get_id() != std::this_thread::get_id()) m_thread.join();
}

std::chrono::milliseconds retention::period(std::chrono::milliseconds keep) {
  using namespace std::chrono_literals;
  return std::clamp<std::chrono::milliseconds>(keep / 10, 1s, 1h);
}

std::size_t retention::sweep() {
  const std::int64_t before_ms = m_clock.unix_ms() - m_keep.count();
  std::size_t deleted = 0;
  try {
    for (;;) {
      const auto ids = m_store.ended_before(before_ms, k_batch);
      for (const std::int64_t id : ids) {
        {
          std::lock_guard lock(m_mutex);
          if (m_stopping) return deleted;
        }
        // One gone already was deleted by another node's sweep or a request.
        if (delete_and_announce(m_store, m_events, id) == delete_outcome::deleted) ++deleted;
      }
      if (ids.size() < k_batch) break;
    }
  } catch (const storage_error& e) {
    spdlog::warn("retention: the store could not be swept ({}); trying again in {} s", e.what(),
                 std::chrono::duration_cast<std::chrono::seconds>(period(m_keep)).count());
  }
  if (deleted > 0) {
    spdlog::info("retention: deleted {} job{} that ended more than {:.4g} days ago", deleted,
                 deleted == 1 ? "" : "s", double(m_keep.count()) / 86'400'000.0);
  }
  return deleted;
}

void retention::run() {
  for (;;) {
    sweep();
    std::unique_lock lock(m_mutex);
    if (m_wake.wait_for(lock, period(m_keep), [this] { return m_stopping; })) return;
  }
}

}  // namespace kernelscan
