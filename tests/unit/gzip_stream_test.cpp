// A streamed response compressed as it goes: what it gives inflates to what the inner stream
// gave, whatever the sizes of its chunks, and an inner stream's failure passes through.
#include <gtest/gtest.h>
#include <zlib.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "server/detail/gzip_stream.hpp"

namespace kernelscan::detail {
namespace {

// `gz` inflated as gzip, or nullopt where it is not a whole gzip stream.
std::optional<std::string> gunzip(const std::string& gz) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return std::nullopt;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  std::string out;
  int rc = Z_OK;
  do {
    char buffer[4096];
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
  } while (rc == Z_OK);
  inflateEnd(&z);
  if (rc != Z_STREAM_END || z.avail_in != 0) return std::nullopt;
  return out;
}

// Calls `s` until it returns false, as the transport does, gathering what it gave.
std::string drain(body_stream& s, int* calls = nullptr) {
  std::string all;
  for (;;) {
    std::string chunk;
    if (!s(chunk)) return all;
    if (calls) ++*calls;
    all += chunk;
  }
}

body_stream chunks_of(std::vector<std::string> chunks) {
  auto at = std::make_shared<std::size_t>(0);
  return [chunks = std::move(chunks), at](std::string& chunk) {
    if (*at == chunks.size()) return false;
    chunk = chunks[(*at)++];
    return true;
  };
}

TEST(GzipStream, InflatesToWhatTheInnerStreamGave) {
  std::vector<std::string> rows;
  std::string plain;
  for (int i = 0; i < 20000; ++i) {
    rows.push_back("{\"index\":" + std::to_string(i) + ",\"median\":" + std::to_string(i * 1.37) +
                   "}\n");
    plain += rows.back();
  }
  rows.insert(rows.begin() + 5, std::string());  // an empty chunk on the way
  for (const int level : {1, 6, 9}) {
    auto s = gzip_stream(chunks_of(rows), level);
    const std::string gz = drain(s);
    EXPECT_EQ(gz.substr(0, 2), "\x1f\x8b") << level;
    EXPECT_LT(gz.size(), plain.size() / 3) << level;
    EXPECT_EQ(gunzip(gz), plain) << level;
  }
}

TEST(GzipStream, AnEmptyBodyIsAnEmptyGzipStream) {
  auto s = gzip_stream(chunks_of({}));
  int calls = 0;
  const std::string gz = drain(s, &calls);
  EXPECT_EQ(calls, 1);  // the header and trailer, then the end
  EXPECT_EQ(gunzip(gz), "");
  std::string after;
  EXPECT_FALSE(s(after));
}

TEST(GzipStream, TheInnerStreamsFailurePassesThrough) {
  auto calls = std::make_shared<int>(0);
  auto s = gzip_stream([calls](std::string& chunk) -> bool {
    if (++*calls == 3) throw std::runtime_error("the store failed");
    chunk = std::string(100000, 'x');
    return true;
  });
  std::string gz;
  EXPECT_THROW(
      {
        for (;;) {
          std::string chunk;
          s(chunk);
          gz += chunk;
        }
      },
      std::runtime_error);
  EXPECT_EQ(gunzip(gz), std::nullopt);  // cut off: no trailer
}

}  // namespace
}  // namespace kernelscan::detail
