#pragma once
// Comparing a kernel's outputs with its reference's (DESIGN.md §4), on the host, chunk by chunk
// as the GPU engine copies them back: plain C++ so that the arithmetic is unit-tested without a
// GPU. Values are decoded from their device representation (f16 and bf16 included).
//
// An element passes when |out − ref| ≤ atol + rtol·|ref|; the whole output passes only when its
// norm-relative error ‖out − ref‖₂ / ‖ref‖₂ is at most rtol too, so that an output of small values
// cannot pass on atol alone (all zeros where every |ref| < atol). Before a run every output holds
// the `unwritten` pattern: NaN for floating types, k_unwritten_byte repeated for integers; an
// element that still holds it where the reference does not was never written.

#include <cstdint>
#include <limits>

#include "engine/answer_mask.hpp"
#include "engine/dtype.hpp"
#include "engine/element.hpp"

namespace kernelscan {

struct output_errors {
  double max_abs = 0;
  // |out − ref| / (|ref| + atol/rtol): at most rtol exactly where elements pass (|out − ref| /
  // |ref| when rtol is 0).
  double max_rel = 0;
  std::uint64_t compared = 0;
  std::uint64_t unwritten = 0;
  std::uint64_t wrong = 0;  // failing elements, the unwritten included
  std::uint64_t first_wrong = std::numeric_limits<std::uint64_t>::max();  // element index
  // Over finite elements: Σ(out − ref)² and Σref², for the norm-relative error.
  double sum_sq_diff = 0, sum_sq_ref = 0;
  // Reference elements within atol of zero: where most are, a constant comes close to passing.
  std::uint64_t ref_near_zero = 0;
  // Reference elements that are NaN or infinite: where most are (a reference that read an output
  // before writing it, and found the unwritten NaN), an output of NaN passes.
  std::uint64_t ref_not_finite = 0;
};

// Adds to `e` what `part` found: as though `e` had gone on to compare part's elements, but for
// the order the sums are taken in.
void merge_errors(output_errors& e, const output_errors& part);

// ‖out − ref‖₂ / ‖ref‖₂ over what `e` compared: 0 for identical outputs, infinity when the
// reference is all zeros and the output is not.
double norm_relative_error(const output_errors& e);
// The share of compared reference elements within atol of zero (0 when nothing was compared).
double near_zero_share(const output_errors& e);
// The share of compared reference elements that are NaN or infinite.
double not_finite_share(const output_errors& e);
// True when the outputs fail the norm test: norm_relative_error(e) > rtol.
bool fails_norm_test(const output_errors& e, double rtol);

// A reference's answer kept masked (answer_mask.hpp): `ref` holds bytes [byte_offset, ...) of
// buffer `buffer`'s masked answer.
struct masked_answer {
  const answer_mask* mask = nullptr;
  std::size_t buffer = 0;
  std::uint64_t byte_offset = 0;
};

// Adds `n` elements of type `t` starting at element `offset` of the output. `out` and `ref`
// hold them as the device stores them.
// `pattern`: the unwritten pattern the output held before the run (element.hpp).
// `masked`: `ref` is masked so; each element is unmasked as it is compared, and no unmasked copy
// of the answer outlives the call.
void compare_outputs(dtype t, const void* out, const void* ref, std::int64_t n,
                     std::uint64_t offset, double atol, double rtol, output_errors& e,
                     int pattern = 0, const masked_answer* masked = nullptr);

}  // namespace kernelscan
