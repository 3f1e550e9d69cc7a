#pragma once
// A sweep: named integer parameters whose cartesian product is the list of points of a job.
// Points are numbered 0..size()-1 in row-major order: the last parameter varies fastest, so a
// point's values follow from its index alone (resuming at point i needs no enumeration).
//
// An evaluation task's jobs add held-out points: a second cartesian product over the same
// parameters, numbered after the public ones (public_size()..size()-1).
//
// Immutable after construction; thread-safe for concurrent reads.

#include <cstdint>
#include <string>
#include <vector>

namespace kernelscan {

struct sweep_parameter {
  std::string name;
  std::vector<std::int64_t> values;
};

class sweep {
 public:
  sweep() = default;
  // Parameters keep the given order. Preconditions (checked by the job spec codec): unique
  // identifier names, each with at least one value.
  explicit sweep(std::vector<sweep_parameter> parameters);
  // With held-out points: `held_out` names the same parameters in the same order (checked by
  // the codec), each with at least one value.
  sweep(std::vector<sweep_parameter> parameters, std::vector<sweep_parameter> held_out);

  const std::vector<sweep_parameter>& parameters() const { return m_parameters; }
  // The held-out values; empty when the sweep has none.
  const std::vector<sweep_parameter>& held_out() const { return m_held_out; }
  std::vector<std::string> names() const;

  // Number of points: the product of the value counts (1 for an empty sweep: one point with no
  // parameters), plus the held-out product's. Saturates at UINT64_MAX instead of overflowing.
  std::uint64_t size() const { return m_size; }
  // The public points alone: indices below this are public, the rest held out.
  std::uint64_t public_size() const { return m_public_size; }

  // The values of point `index`, in parameter order. Precondition: index < size().
  std::vector<std::int64_t> point(std::uint64_t index) const;
  // The same values as doubles, the form expressions take.
  void point_values(std::uint64_t index, std::vector<double>& out) const;

 private:
  // The block an index falls in, and its index within it.
  const std::vector<sweep_parameter>& block(std::uint64_t& index) const;

  std::vector<sweep_parameter> m_parameters;
  std::vector<sweep_parameter> m_held_out;
  std::uint64_t m_public_size = 1;
  std::uint64_t m_size = 1;
};

}  // namespace kernelscan
