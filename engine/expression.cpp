#include "engine/expression.hpp"

#include <muParser.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "engine/text_list.hpp"

namespace kernelscan {
namespace {

double fn_ceil(double x) {
  return std::ceil(x);
}
double fn_floor(double x) {
  return std::floor(x);
}
double fn_trunc(double x) {
  return std::trunc(x);
}
double fn_cdiv(double a, double b) {
  return std::ceil(a / b);
}
double fn_fdiv(double a, double b) {
  return std::floor(a / b);
}
double fn_mod(double a, double b) {
  return std::fmod(a, b);
}
double fn_pow(double a, double b) {
  return std::pow(a, b);
}
double fn_round_up(double a, double b) {
  return std::ceil(a / b) * b;
}

// Functions and constants muparser or we define; sweep parameters may not shadow them.
constexpr std::array<const char*, 33> k_reserved{
    "sin",   "cos",   "tan",   "asin",     "acos",  "atan", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "log2",     "log10", "log",  "ln",   "exp",  "sqrt",
    "sign",  "rint",  "abs",   "sum",      "avg",   "min",  "max",  "ceil", "floor",
    "trunc", "cdiv",  "fdiv",  "round_up", "mod",   "pow"};

// Names in `text` that are neither sweep parameters nor constants (used as values), and names
// called as functions that are not functions. muparser reports only the first unknown token, as
// "Unexpected token \"M/16)\" found at position 5"; people need the names.
std::string unknown_names(std::string_view text, const std::vector<std::string>& parameters) {
  std::vector<std::string> values, functions;
  auto add = [](std::vector<std::string>& list, std::string name) {
    if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(std::move(name));
  };
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  auto word = [&](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (digit(c) || (c == '.' && i + 1 < text.size() && digit(text[i + 1]))) {
      // A number: digits, a fraction, an exponent (1e6, 2.5E-3).
      while (i < text.size() && (digit(text[i]) || text[i] == '.'))
        ++i;
      if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
        ++i;
        if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
        while (i < text.size() && digit(text[i]))
          ++i;
      }
      continue;
    }
    if (!word(c)) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && (word(text[end]) || digit(text[end])))
      ++end;
    const std::string name(text.substr(i, end - i));
    i = end;
    std::size_t next = end;
    while (next < text.size() && (text[next] == ' ' || text[next] == '\t'))
      ++next;
    const bool called = next < text.size() && text[next] == '(';
    const bool function = std::find_if(k_reserved.begin(), k_reserved.end(), [&](const char* r) {
                            return name == r;
                          }) != k_reserved.end();
    if (called) {
      if (!function) add(functions, name);
    } else if (name != "_pi" && name != "_e" &&
               std::find(parameters.begin(), parameters.end(), name) == parameters.end()) {
      add(values, name);
    }
  }
  std::string out;
  if (!values.empty()) {
    out = std::string(values.size() == 1 ? "unknown name " : "unknown names ") +
          comma_joined(values) +
          (parameters.empty() ? " (the sweep defines no parameters)"
                              : " (sweep parameters: " + comma_joined(parameters) + ")");
  }
  if (!functions.empty()) {
    out += std::string(out.empty() ? "" : "; ") +
           (functions.size() == 1 ? "unknown function " : "unknown functions ") +
           comma_joined(functions) + " (functions: " +
           [] {
             std::string all;
             for (const char* r : k_reserved)
               all += (all.empty() ? "" : ", ") + std::string(r);
             return all;
           }() +
           ")";
  }
  return out;
}

// Where `text` assigns (muparser's =, +=, -=, *=, /=: a field "M=5" set the sweep parameter
// and measured 5), if it does; ==, !=, <= and >= compare.
std::optional<std::size_t> assignment_at(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '=') continue;
    if (i + 1 < text.size() && text[i + 1] == '=') {
      ++i;  // ==
      continue;
    }
    const char before = i > 0 ? text[i - 1] : '\0';
    if (before == '<' || before == '>' || before == '!') continue;
    if (before == '+' || before == '-' || before == '*' || before == '/') return i - 1;
    return i;
  }
  return std::nullopt;
}

// `v` with as few significant digits as show it is not a whole number (341.333, 149797.1429).
std::string inexact(double v) {
  char buf[64];
  for (int digits = 6; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    const double shown = std::strtod(buf, nullptr);
    if (shown != std::nearbyint(shown)) break;
  }
  return buf;
}

std::string sentence(const mu::Parser::exception_type& e) {
  std::string msg = e.GetMsg();
  while (!msg.empty() && (msg.back() == ' ' || msg.back() == '.'))
    msg.pop_back();
  return msg;
}

}  // namespace

struct expression::impl {
  mu::Parser parser;
  std::unique_ptr<double[]> values;
};

bool is_identifier(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(name.front())) return false;
  for (char c : name) {
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool is_reserved_name(std::string_view name) {
  if (!name.empty() && name.front() == '_') return true;  // muparser's constants (_pi, _e)
  for (const char* r : k_reserved) {
    if (name == r) return true;
  }
  return false;
}

expression::expression(std::string text, const std::vector<std::string>& parameters)
    : m_text(std::move(text)), m_parameters(parameters), m_impl(std::make_unique<impl>()) {
  if (m_text.size() > k_max_expression_length) {
    throw expression_error("expression is longer than " + std::to_string(k_max_expression_length) +
                           " characters");
  }
  if (m_text.find_first_not_of(" \t") == std::string::npos) {
    throw expression_error("expression is empty");
  }
  if (const auto unknown = unknown_names(m_text, m_parameters); !unknown.empty()) {
    throw expression_error("\"" + m_text + "\": " + unknown);
  }
  if (const auto at = assignment_at(m_text)) {
    throw expression_error("invalid expression \"" + m_text + "\": \"" +
                           m_text.substr(*at, m_text[*at] == '=' ? 1 : 2) +
                           "\" assigns, which an expression does not (== compares)");
  }
  auto& p = m_impl->parser;
  m_impl->values = std::make_unique<double[]>(std::max<std::size_t>(1, m_parameters.size()));
  try {
    p.DefineFun("ceil", fn_ceil);
    p.DefineFun("floor", fn_floor);
    p.DefineFun("trunc", fn_trunc);
    p.DefineFun("cdiv", fn_cdiv);
    p.DefineFun("fdiv", fn_fdiv);
    p.DefineFun("mod", fn_mod);
    p.DefineFun("pow", fn_pow);
    p.DefineFun("round_up", fn_round_up);
    p.DefineOprt("%", fn_mod, mu::prMUL_DIV);
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
      p.DefineVar(m_parameters[i], &m_impl->values[i]);
    }
    p.SetExpr(m_text);
    // Parse eagerly: muparser otherwise defers syntax errors to the first Eval().
    std::fill_n(m_impl->values.get(), std::max<std::size_t>(1, m_parameters.size()), 1.0);
    (void)p.Eval();
    if (p.GetNumResults() > 1) {
      throw expression_error("invalid expression \"" + m_text + "\": it has " +
                             std::to_string(p.GetNumResults()) +
                             " values separated by commas, where one is needed (a comma "
                             "separates a function's arguments only)");
    }
  } catch (const mu::Parser::exception_type& e) {
    std::string msg = sentence(e);
    if (e.GetCode() == mu::ecUNASSIGNABLE_TOKEN || e.GetCode() == mu::ecUNEXPECTED_VAR) {
      std::string known;
      for (const auto& name : m_parameters)
        known += (known.empty() ? "" : ", ") + name;
      msg += known.empty() ? " (the sweep defines no parameters)"
                           : " (sweep parameters: " + known + ")";
    }
    throw expression_error("invalid expression \"" + m_text + "\": " + msg);
  }
}

expression::expression(const expression& other) : expression(other.m_text, other.m_parameters) {}

expression& expression::operator=(const expression& other) {
  if (this != &other) *this = expression(other);
  return *this;
}

expression::expression(expression&&) noexcept = default;
expression& expression::operator=(expression&&) noexcept = default;
expression::~expression() = default;

std::vector<std::string> expression::used_parameters() const {
  std::vector<std::string> used;
  for (const auto& [name, ptr] : m_impl->parser.GetUsedVar())
    used.push_back(name);
  return used;
}

double expression::evaluate(std::span<const double> values) const {
  const std::size_t n = std::min(values.size(), m_parameters.size());
  std::copy_n(values.begin(), n, m_impl->values.get());
  double result = 0;
  try {
    result = m_impl->parser.Eval();
  } catch (const mu::Parser::exception_type& e) {
    throw expression_error("\"" + m_text + "\" could not be evaluated: " + sentence(e));
  }
  if (std::isnan(result)) {
    throw expression_error("\"" + m_text + "\" is not a number (NaN)");
  }
  if (std::isinf(result)) {
    throw expression_error("\"" + m_text + "\" is infinite (division by zero or overflow)");
  }
  return result;
}

std::int64_t expression::evaluate_integer(std::span<const double> values) const {
  const double v = evaluate(values);
  if (std::fabs(v) > k_max_exact_integer) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    throw expression_error("\"" + m_text + "\" is too large (" + buf + " exceeds 2^53)");
  }
  const double r = std::nearbyint(v);
  if (std::fabs(v - r) > 1e-9 * std::max(1.0, std::fabs(v))) {
    throw expression_error("\"" + m_text + "\" is " + inexact(v) +
                           ", not an integer (use ceil(), floor() or cdiv())");
  }
  return static_cast<std::int64_t>(r);
}

}  // namespace kernelscan
