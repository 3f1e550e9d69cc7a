#include "server/job_events.hpp"

#include <spdlog/spdlog.h>

#include <map>

#include "api/job_codec.hpp"

namespace kernelscan {

void job_events::job_changed(std::int64_t id) {
  try {
    if (auto rec = m_store.get(id)) m_hub.publish("job", job_json_text(*rec));
  } catch (const storage_error& e) {
    spdlog::warn("job {}: no event for its state change: {}", id, e.what());
  }
}

void job_events::points_stored(std::span<const result_row> rows, const progress_fn& progress) {
  struct range {
    std::uint64_t first = UINT64_MAX, last = 0, stored = 0, failed = 0;
  };
  std::map<std::int64_t, range> jobs;
  for (const auto& row : rows) {
    auto& r = jobs[row.job_id];
    r.first = std::min(r.first, row.index);
    r.last = std::max(r.last, row.index);
    ++r.stored;
    if (!row.ok) ++r.failed;
  }
  for (const auto& [id, r] : jobs) {
    const auto [done, total] = progress(id);
    m_hub.publish("points", json{{"job_id", id},
                                 {"first_index", r.first},
                                 {"last_index", r.last},
                                 {"stored", r.stored},
                                 {"failed", r.failed},
                                 {"done", done},
                                 {"total", total}}
                                .dump());
  }
}

}  // namespace kernelscan
