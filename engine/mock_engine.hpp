#pragma once
// An engine that imitates a catalog GPU without one, so that everything but device code runs in
// CI exactly as in production. Time per launch comes from a roofline model (launch latency plus
// the slower of compute and memory time, with size-dependent efficiency and caches that help in
// hot mode) times seeded log-normal noise with occasional outliers, and goes through the same
// adaptive_sampler as real measurements. The sampling clock is simulated: a point costs no wall
// time unless the job asks for mock.delay_ms. A fitness baseline is sampled interleaved with the
// candidate, as on a GPU. Verification reports `skipped` unless the job says through
// mock.output what the simulated kernel writes; mock.speedup makes it faster than its model.
// The empirical roofline is simulated from the same model.
//
// Threading: one thread (the worker's).

#include "engine/analysis.hpp"
#include "engine/engine.hpp"

namespace kernelscan {

class mock_engine final : public engine {
 public:
  mock_engine(const device_model& model, int index);

  const device_info& device() const override { return m_info; }
  point_result measure(const job_plan& plan, std::uint64_t index, std::uint64_t seed) override;
  measured_roofline measure_roofline() override;
  void set_roofline(const measured_roofline& roofline) override;

  // The model's noise-free time of one launch, in microseconds.
  double model_time_us(const kernel_instance& k, l2_mode l2) const;

 private:
  const device_model& m_model;
  device_info m_info;
  analysis_context m_analysis;
};

}  // namespace kernelscan
