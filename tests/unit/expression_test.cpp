#include "engine/expression.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace kernelscan {
namespace {

const std::vector<std::string> k_mnk{"M", "N", "K"};

double eval(const std::string& text, const std::vector<double>& values,
            const std::vector<std::string>& names = k_mnk) {
  return expression(text, names).evaluate(values);
}

std::int64_t eval_int(const std::string& text, const std::vector<double>& values,
                      const std::vector<std::string>& names = k_mnk) {
  return expression(text, names).evaluate_integer(values);
}

// The message of the expression_error `fn` throws; fails the test if it throws nothing.
template <class F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const expression_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an expression_error";
  return {};
}

TEST(Expression, ArithmeticOverParameters) {
  EXPECT_DOUBLE_EQ(eval("2*M*N*K", {64, 32, 16}), 65536.0);
  EXPECT_DOUBLE_EQ(eval("M + N - K", {10, 5, 3}), 12.0);
  EXPECT_DOUBLE_EQ(eval("(M + N) * K", {1, 2, 3}), 9.0);
  EXPECT_DOUBLE_EQ(eval("M / N", {7, 2, 0}), 3.5);
  EXPECT_DOUBLE_EQ(eval("-M + 1", {5, 0, 0}), -4.0);
  // The same compiled expression at several points.
  const expression e("M*N + K", k_mnk);
  EXPECT_DOUBLE_EQ(e.evaluate(std::vector<double>{2, 3, 4}), 10.0);
  EXPECT_DOUBLE_EQ(e.evaluate(std::vector<double>{5, 6, 7}), 37.0);
  EXPECT_EQ(e.text(), "M*N + K");
}

TEST(Expression, RoundingAndDivisionFunctions) {
  EXPECT_EQ(eval_int("ceil(N/16)", {0, 100, 0}), 7);
  EXPECT_EQ(eval_int("floor(N/16)", {0, 100, 0}), 6);
  EXPECT_EQ(eval_int("ceil(N/16)", {0, 96, 0}), 6);
  EXPECT_EQ(eval_int("cdiv(N, 16)", {0, 100, 0}), 7);
  EXPECT_EQ(eval_int("cdiv(N, 16)", {0, 96, 0}), 6);
  EXPECT_EQ(eval_int("fdiv(N, 16)", {0, 100, 0}), 6);
  EXPECT_EQ(eval_int("round_up(N, 16)", {0, 100, 0}), 112);
  EXPECT_EQ(eval_int("trunc(N/16)", {0, 100, 0}), 6);
  EXPECT_EQ(eval_int("trunc(-N/16)", {0, 100, 0}), -6);
  EXPECT_EQ(eval_int("floor(-N/16)", {0, 100, 0}), -7);
}

TEST(Expression, ModuloMinMaxPower) {
  EXPECT_EQ(eval_int("mod(N, 16)", {0, 100, 0}), 4);
  EXPECT_EQ(eval_int("N % 16", {0, 100, 0}), 4);
  EXPECT_EQ(eval_int("N % 3", {0, 7, 0}), 1);
  // % binds like * and /: 1 + (7 % 4) and (7 % 3) * 5.
  EXPECT_EQ(eval_int("1 + N % 4", {0, 7, 0}), 4);
  EXPECT_EQ(eval_int("N % 3 * 5", {0, 7, 0}), 5);
  EXPECT_EQ(eval_int("min(M, N)", {3, 9, 0}), 3);
  EXPECT_EQ(eval_int("max(M, N)", {3, 9, 0}), 9);
  EXPECT_EQ(eval_int("min(M, N, K)", {3, 9, 2}), 2);
  EXPECT_EQ(eval_int("max(M, N, K)", {3, 9, 12}), 12);
  EXPECT_EQ(eval_int("pow(2, K)", {0, 0, 10}), 1024);
  EXPECT_EQ(eval_int("2^K", {0, 0, 10}), 1024);
  EXPECT_EQ(eval_int("M^2 + 1", {3, 0, 0}), 10);
}

TEST(Expression, EvaluateIntegerAcceptsExactIntegers) {
  EXPECT_EQ(eval_int("M/2", {4, 0, 0}), 2);
  EXPECT_EQ(eval_int("M - 10", {3, 0, 0}), -7);
  EXPECT_EQ(eval_int("0 * M", {3, 0, 0}), 0);
  // 0.1 * 3 * 10 is 3.0000000000000004 in doubles: rounding noise, not a fraction.
  EXPECT_EQ(eval_int("0.1 * M * 10", {3, 0, 0}), 3);
  // 2^53 itself is the largest magnitude accepted.
  EXPECT_EQ(eval_int("2^53", {0, 0, 0}), 9007199254740992LL);
  EXPECT_EQ(eval_int("-(2^53)", {0, 0, 0}), -9007199254740992LL);
}

TEST(Expression, EvaluateIntegerRejectsFractions) {
  const std::string msg = error_of([] { (void)eval_int("M/2", {5, 0, 0}); });
  EXPECT_NE(msg.find("not an integer"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2.5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("M/2"), std::string::npos) << msg;
  // evaluate() itself returns the fraction.
  EXPECT_DOUBLE_EQ(eval("M/2", {5, 0, 0}), 2.5);
}

// A fraction is shown with the digits that make it one (not rounded to a whole number), and a
// huge value in a few digits.
TEST(Expression, ANonIntegerIsShownAsTheFractionItIs) {
  const std::string msg = error_of([] { (void)eval_int("N/7", {0, 1048576, 0}); });
  EXPECT_NE(msg.find("is 149796.6, not an integer"), std::string::npos) << msg;
  const std::string third = error_of([] { (void)eval_int("M/3", {1024, 0, 0}); });
  EXPECT_NE(third.find("is 341.333, not an integer"), std::string::npos) << third;
  const std::string huge = error_of([] { (void)eval_int("M", {1e300, 0, 0}); });
  EXPECT_NE(huge.find("(1e+300 exceeds 2^53)"), std::string::npos) << huge;
}

// Assignment (M=5 set the sweep parameter and measured 5) and values separated by commas are
// refused; comparisons and the conditional operator compute what they say.
TEST(Expression, AssignmentAndCommaSeparatedValuesAreRefused) {
  for (const char* text : {"M=5", "M = 5", "M+=1", "M -= 1", "N*=2", "K/=2", "2*(M=5)"}) {
    const std::string msg = error_of([&] { (void)expression(text, k_mnk); });
    EXPECT_NE(msg.find("assigns, which an expression does not"), std::string::npos)
        << text << ": " << msg;
  }
  const std::string comma = error_of([] { (void)expression("M,5", k_mnk); });
  EXPECT_NE(comma.find("2 values separated by commas"), std::string::npos) << comma;
  EXPECT_EQ(eval_int("max(M, N)", {3, 4, 0}), 4);
  EXPECT_EQ(eval_int("M>4?M:1", {8, 0, 0}), 8);
  EXPECT_EQ(eval_int("M>4?M:1", {2, 0, 0}), 1);
  EXPECT_EQ(eval_int("(M==N)+(M!=K)+(M<=N)+(M>=K)", {2, 2, 1}), 4);
}

TEST(Expression, DivisionByZeroIsAnError) {
  const expression e("M / (N - K)", k_mnk);
  EXPECT_DOUBLE_EQ(e.evaluate(std::vector<double>{6, 5, 2}), 2.0);
  const std::string msg = error_of([&] { (void)e.evaluate(std::vector<double>{6, 4, 4}); });
  EXPECT_NE(msg.find("infinite"), std::string::npos) << msg;
  const std::string msg2 = error_of([&] {
    (void)e.evaluate_integer(std::vector<double>{6, 4, 4});
  });
  EXPECT_NE(msg2.find("infinite"), std::string::npos) << msg2;
}

TEST(Expression, NaNIsAnError) {
  const expression e("sqrt(M - N)", k_mnk);
  EXPECT_DOUBLE_EQ(e.evaluate(std::vector<double>{20, 4, 0}), 4.0);
  const std::string msg = error_of([&] { (void)e.evaluate(std::vector<double>{1, 5, 0}); });
  EXPECT_NE(msg.find("NaN"), std::string::npos) << msg;
  // inf * 0 is NaN too.
  const std::string msg2 = error_of([&] { (void)eval("M - M / 0 * 0", {1, 0, 0}); });
  EXPECT_NE(msg2.find("NaN"), std::string::npos) << msg2;
}

TEST(Expression, ValuesBeyondTwoToThe53AreRejected) {
  const expression e("M * N", k_mnk);
  EXPECT_EQ(e.evaluate_integer(std::vector<double>{1e8, 9e7, 0}), 9000000000000000LL);
  const std::string msg = error_of([&] {
    (void)e.evaluate_integer(std::vector<double>{1e8, 1e8, 0});
  });
  EXPECT_NE(msg.find("2^53"), std::string::npos) << msg;
  const std::string neg = error_of([] { (void)eval_int("-(M * N)", {1e8, 1e8, 0}); });
  EXPECT_NE(neg.find("2^53"), std::string::npos) << neg;
  EXPECT_THROW((void)eval_int("2^53 + 2", {0, 0, 0}), expression_error);
  // evaluate() has no such bound: 1e16 is a finite number.
  EXPECT_DOUBLE_EQ(e.evaluate(std::vector<double>{1e8, 1e8, 0}), 1e16);
}

TEST(Expression, UnknownNameListsTheSweepParameters) {
  const std::string msg = error_of([] { expression("M * X", {"M", "N"}); });
  EXPECT_NE(msg.find("X"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sweep parameters: M, N"), std::string::npos) << msg;
  EXPECT_NE(msg.find("M * X"), std::string::npos) << msg;

  const std::string none = error_of([] { expression("Q + 1", {}); });
  EXPECT_NE(none.find("the sweep defines no parameters"), std::string::npos) << none;
}

TEST(Expression, SyntaxErrorsAreRejectedAtCompileTime) {
  for (const char* text : {"M * (N", "M +* N", "ceil(", "M N", "2 ** M", ")"}) {
    const std::string msg = error_of([&] { expression(text, k_mnk); });
    EXPECT_NE(msg.find("invalid expression"), std::string::npos) << text << ": " << msg;
    EXPECT_NE(msg.find(text), std::string::npos) << text << ": " << msg;
  }
}

TEST(Expression, EmptyTextIsRejected) {
  for (const char* text : {"", " ", " \t "}) {
    const std::string msg = error_of([&] { expression(text, k_mnk); });
    EXPECT_NE(msg.find("empty"), std::string::npos) << "\"" << text << "\": " << msg;
  }
}

TEST(Expression, TextLongerThan1024CharactersIsRejected) {
  // "1+1+...+1" padded with spaces to exactly the limit compiles.
  std::string ok = "1";
  while (ok.size() + 2 <= k_max_expression_length)
    ok += "+1";
  const std::size_t ones = (ok.size() + 1) / 2;
  ok.resize(k_max_expression_length, ' ');
  ASSERT_EQ(ok.size(), 1024u);
  EXPECT_EQ(expression(ok, k_mnk).evaluate_integer(std::vector<double>{0, 0, 0}),
            std::int64_t(ones));

  const std::string too_long = ok + "1";
  const std::string msg = error_of([&] { expression(too_long, k_mnk); });
  EXPECT_NE(msg.find("longer than 1024"), std::string::npos) << msg;
}

TEST(Expression, UsedParameters) {
  const expression e("2*M*K + ceil(K/8)", k_mnk);
  auto used = e.used_parameters();
  std::sort(used.begin(), used.end());
  EXPECT_EQ(used, (std::vector<std::string>{"K", "M"}));
  // Asking does not disturb evaluation.
  EXPECT_EQ(e.evaluate_integer(std::vector<double>{3, 100, 16}), 98);

  EXPECT_TRUE(expression("42", k_mnk).used_parameters().empty());
  auto all = expression("M+N+K", k_mnk).used_parameters();
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<std::string>{"K", "M", "N"}));
}

TEST(Expression, CopiesAreIndependent) {
  const expression original("M * 10 + N", {"M", "N"});
  expression copy = original;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(copy.text(), original.text());
  EXPECT_DOUBLE_EQ(original.evaluate(std::vector<double>{1, 2}), 12.0);
  EXPECT_DOUBLE_EQ(copy.evaluate(std::vector<double>{7, 3}), 73.0);
  // Evaluating the copy left the original's bound values alone, and vice versa.
  EXPECT_DOUBLE_EQ(original.evaluate(std::vector<double>{1, 2}), 12.0);
  EXPECT_DOUBLE_EQ(copy.evaluate(std::vector<double>{7, 3}), 73.0);

  expression assigned("0", {"M", "N"});
  assigned = original;
  EXPECT_DOUBLE_EQ(assigned.evaluate(std::vector<double>{4, 5}), 45.0);
  EXPECT_DOUBLE_EQ(original.evaluate(std::vector<double>{2, 0}), 20.0);

  expression moved = std::move(assigned);
  EXPECT_DOUBLE_EQ(moved.evaluate(std::vector<double>{9, 9}), 99.0);

  // Copies used alternately keep giving their own results.
  std::vector<expression> many(4, original);
  for (int round = 0; round < 2; ++round) {
    for (std::size_t i = 0; i < many.size(); ++i) {
      const double m = double(i);
      EXPECT_DOUBLE_EQ(many[i].evaluate(std::vector<double>{m, 1}), m * 10 + 1);
    }
  }
}

TEST(Expression, IsIdentifier) {
  for (const char* ok : {"M", "N_2", "_private", "block_size", "a1b2"}) {
    EXPECT_TRUE(is_identifier(ok)) << ok;
  }
  for (const char* bad : {"", "2M", "M-N", "M N", "M.N", "ä", "M$"}) {
    EXPECT_FALSE(is_identifier(bad)) << bad;
  }
  EXPECT_TRUE(is_identifier(std::string(64, 'a')));
  EXPECT_FALSE(is_identifier(std::string(65, 'a')));
}

TEST(Expression, IsReservedName) {
  for (const char* r : {"min", "max", "ceil", "floor", "cdiv", "fdiv", "mod", "pow", "sqrt",
                        "round_up", "sin", "log", "_pi", "_e", "_anything"}) {
    EXPECT_TRUE(is_reserved_name(r)) << r;
  }
  for (const char* free : {"M", "N", "K", "minimum", "Min", "ceiling", "x_"}) {
    EXPECT_FALSE(is_reserved_name(free)) << free;
  }
}

TEST(Expression, ParametersMayBeOmittedWhenUnused) {
  // An expression over no parameters evaluates with an empty value list.
  const expression e("3 * 4", {});
  EXPECT_EQ(e.evaluate_integer(std::span<const double>{}), 12);
  EXPECT_TRUE(e.used_parameters().empty());
}

}  // namespace
}  // namespace kernelscan

namespace kernelscan {
namespace {

TEST(Expression, UnknownNamesAndFunctionsAreNamedWithoutParserPositions) {
  auto message = [](const std::string& text, const std::vector<std::string>& names) {
    try {
      expression e(text, names);
    } catch (const expression_error& x) {
      return std::string(x.what());
    }
    return std::string("compiled");
  };
  EXPECT_EQ(message("ceil(M/16)", {"N"}), "\"ceil(M/16)\": unknown name M (sweep parameters: N)");
  EXPECT_EQ(message("M*K + M", {"N", "B"}),
            "\"M*K + M\": unknown names M, K (sweep parameters: N, B)");
  EXPECT_EQ(message("Q", {}), "\"Q\": unknown name Q (the sweep defines no parameters)");
  const std::string fn = message("tile(N) + cdiv(N, 2)", {"N"});
  EXPECT_EQ(fn.rfind("\"tile(N) + cdiv(N, 2)\": unknown function tile (functions: ", 0), 0u) << fn;
  // Numbers with exponents, constants and functions are not names.
  EXPECT_EQ(message("1e6*N + 2.5E-3 + _pi + sqrt(N) + max(N, 2)", {"N"}), "compiled");
}

}  // namespace
}  // namespace kernelscan
