#pragma once
// Arithmetic expressions over sweep parameters ("ceil(N/16)", "2*M*N*K"), compiled once and
// evaluated per sweep point. Backed by muparser; the parser stays out of this header.
//
// Threading: an `expression` is not thread-safe (muparser evaluates through bound variables);
// give each thread its own copy (copies are independent).

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace kernelscan {

// A parse or evaluation failure. `what()` is a complete sentence fit for an API error message.
class expression_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Longest expression text accepted; longer texts are rejected at compile time.
inline constexpr std::size_t k_max_expression_length = 1024;

// Largest magnitude an integer-valued expression may take: beyond 2^53 a double no longer holds
// every integer, so the value could silently be wrong.
inline constexpr double k_max_exact_integer = 9007199254740992.0;

bool is_identifier(std::string_view name);
// Names that cannot be sweep parameters because expressions use them as functions or constants.
bool is_reserved_name(std::string_view name);

class expression {
 public:
  // Compiles `text` over `parameters` (values passed to evaluate() in this order). Throws
  // expression_error naming the problem (syntax, unknown name, too long).
  expression(std::string text, const std::vector<std::string>& parameters);
  expression(const expression& other);
  expression& operator=(const expression& other);
  expression(expression&&) noexcept;
  expression& operator=(expression&&) noexcept;
  ~expression();

  const std::string& text() const { return m_text; }
  // Parameter names the expression actually refers to.
  std::vector<std::string> used_parameters() const;

  // Throws expression_error if the result is not a finite number (division by zero, overflow).
  double evaluate(std::span<const double> values) const;
  // As evaluate(), and the result must be an integer within +-2^53.
  std::int64_t evaluate_integer(std::span<const double> values) const;

 private:
  struct impl;
  std::string m_text;
  std::vector<std::string> m_parameters;
  std::unique_ptr<impl> m_impl;
};

}  // namespace kernelscan
