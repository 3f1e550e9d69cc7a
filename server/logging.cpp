#include "server/logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

namespace kernelscan {
namespace {

void append_escaped(spdlog::memory_buf_t& out, spdlog::string_view_t s) {
  static constexpr char k_hex[] = "0123456789abcdef";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append(std::string_view("\\n"));
    } else if (u < 0x20) {
      out.append(std::string_view("\\u00"));
      out.push_back(k_hex[u >> 4]);
      out.push_back(k_hex[u & 0xf]);
    } else {
      out.push_back(c);
    }
  }
}

// One JSON object per line. spdlog's pattern flags cannot escape the message, so a message with
// a quote or newline would break a pattern-built "JSON" line.
class json_formatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count();
    const std::time_t secs = std::time_t(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char time[40];
    const auto n = std::strftime(time, sizeof time, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(time + n, sizeof time - n, ".%03dZ", int(ms % 1000));
    dest.append(std::string_view(R"({"time":")"));
    dest.append(std::string_view(time));
    dest.append(std::string_view(R"(","level":")"));
    const auto level = spdlog::level::to_string_view(msg.level);
    dest.append(level.data(), level.data() + level.size());
    dest.append(std::string_view(R"(","logger":")"));
    append_escaped(dest, msg.logger_name);
    dest.append(std::string_view(R"(","pid":)"));
    const std::string pid = std::to_string(getpid());
    dest.append(pid.data(), pid.data() + pid.size());
    dest.append(std::string_view(R"(,"msg":")"));
    append_escaped(dest, msg.payload);
    dest.append(std::string_view("\"}\n"));
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<json_formatter>();
  }
};

}  // namespace

void setup_logging(const std::string& logger_name, const std::string& level,
                   const std::string& format) {
  auto logger = spdlog::stderr_color_mt(logger_name);
  if (format == "json") {
    logger->set_formatter(std::make_unique<json_formatter>());
  } else if (format == "text") {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e [%n] %^%l%$ %v");
  } else {
    throw std::invalid_argument("--log-format must be text or json, not \"" + format + "\"");
  }
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level));
}

}  // namespace kernelscan
