#include "server/detail/gzip_stream.hpp"

#include <zlib.h>

#include <memory>
#include <stdexcept>

namespace kernelscan::detail {
namespace {

struct deflater {
  z_stream z{};
  bool inner_done = false;
  bool finished = false;

  explicit deflater(int level) {
    // 15 + 16: a 32 KiB window with a gzip header and trailer.
    if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw std::runtime_error("cannot start a gzip compressor");
  }
  ~deflater() { deflateEnd(&z); }
  deflater(const deflater&) = delete;
  deflater& operator=(const deflater&) = delete;

  // Compresses `in` (all of it; with Z_FINISH, to the end of the stream) onto `out`.
  void run(const std::string& in, int flush, std::string& out) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    char buffer[16384];
    int rc = Z_OK;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buffer);
      z.avail_out = sizeof buffer;
      rc = deflate(&z, flush);
      if (rc == Z_STREAM_ERROR) throw std::runtime_error("the gzip compressor failed");
      out.append(buffer, sizeof buffer - z.avail_out);
    } while (z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  }
};

}  // namespace

body_stream gzip_stream(body_stream inner, int level) {
  auto state = std::make_shared<deflater>(level);
  return [inner = std::move(inner), state](std::string& chunk) {
    if (state->finished) return false;
    std::string plain;
    while (chunk.empty() && !state->inner_done) {
      plain.clear();
      if (!inner(plain)) state->inner_done = true;
      state->run(plain, state->inner_done ? Z_FINISH : Z_NO_FLUSH, chunk);
    }
    if (state->inner_done) state->finished = true;
    return true;
  };
}

}  // namespace kernelscan::detail
