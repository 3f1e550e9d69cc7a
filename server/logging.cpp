#include "server/logging.hpp"

#include "api/detail/json_writer.hpp"
#include "api/job_codec.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

namespace kernelscan {
namespace {

// One JSON object per line. spdlog's pattern flags cannot escape the message, so a message with
// a quote or newline would break a pattern-built "JSON" line.
class json_formatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count();
    std::string line;
    detail::json_writer w(line);
    w.begin_object();
    w.key("time").value(format_time_ms(ms));
    const auto level = spdlog::level::to_string_view(msg.level);
    w.key("level").value(std::string_view(level.data(), level.size()));
    w.key("logger").value(std::string_view(msg.logger_name.data(), msg.logger_name.size()));
    w.key("pid").value(std::int64_t(getpid()));
    w.key("msg").value(std::string_view(msg.payload.data(), msg.payload.size()));
    w.end_object();
    line += '\n';
    dest.append(line.data(), line.data() + line.size());
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
