#pragma once
// The result cache (DESIGN.md §4): a job whose measurement was already made is answered from
// the stored results of the newest identical, complete, succeeded job. Identical means the same
// spec without what does not change a measurement (name, labels, priority, placement, the
// seed, the cache switch), on the same kind of device (engine, part, driver: any of identical
// GPUs, on any node of the fleet) judged against the same roofline (its ceilings: re-measuring
// one that comes out different changes the analysis), by the same version of kernelscan.
//
// Threading: not thread-safe; the scheduler uses it on its io thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/device_info.hpp"
#include "engine/job_spec.hpp"
#include "server/clock.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

// The kind of device: engine, part, architecture and driver.
std::string device_kind(const device_info& d);
// What a job measures and where, kept as text rather than a hash, so that no two different
// measurements can share a key. `version`: the daemon's, whose measurement and analysis made the
// results: those of another version (before an upgrade, another node's) answer no job.
std::string cache_key(const job_spec& spec, const device_info& d,
                      std::string_view version = KERNELSCAN_VERSION);

class result_cache {
 public:
  result_cache(job_store& store, const clock& time) : m_store(store), m_clock(time) {}

  // Records what job `id` measures where; when its spec allows the cache, nothing of it is
  // measured yet and an identical job exists, copies that job's results into it and returns
  // the job that measured them. nullopt: measure. A store that cannot be reached means measure.
  std::optional<std::int64_t> answer(std::int64_t id, const job_spec& spec,
                                     const device_info& device, bool nothing_measured);

 private:
  job_store& m_store;
  const clock& m_clock;
};

}  // namespace kernelscan
