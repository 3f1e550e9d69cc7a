#pragma once
// A sweep: named integer parameters whose cartesian product is the list of points of a job.
// Points are numbered 0..size()-1 in row-major order: the last parameter varies fastest, so a
// point's values follow from its index alone (resuming at point i needs no enumeration).
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

  const std::vector<sweep_parameter>& parameters() const { return m_parameters; }
  std::vector<std::string> names() const;

  // Number of points: the product of the value counts (1 for an empty sweep: one point with no
  // parameters). Saturates at UINT64_MAX instead of overflowing.
  std::uint64_t size() const { return m_size; }

  // The values of point `index`, in parameter order. Precondition: index < size().
  std::vector<std::int64_t> point(std::uint64_t index) const;
  // The same values as doubles, the form expressions take.
  void point_values(std::uint64_t index, std::vector<double>& out) const;

 private:
  std::vector<sweep_parameter> m_parameters;
  std::uint64_t m_size = 1;
};

}  // namespace kernelscan
