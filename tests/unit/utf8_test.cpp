// UTF-8 checks for text that ends up in JSON answers (api/detail/utf8).
#include <gtest/gtest.h>

#include "api/detail/utf8.hpp"
#include "api/json.hpp"

namespace kernelscan {
namespace {

using detail::utf8_prefix;
using detail::valid_utf8;

TEST(Utf8, ValidAsTheJsonWriterWantsIt) {
  EXPECT_TRUE(valid_utf8(""));
  EXPECT_TRUE(valid_utf8("plain"));
  EXPECT_TRUE(valid_utf8("µs ± 1 \xF0\x9F\x9A\x80"));  // 2-, 2- and 4-byte characters
  EXPECT_FALSE(valid_utf8("\xC3"));                    // cut short
  EXPECT_FALSE(valid_utf8("\xA9"));                    // a stray continuation byte
  EXPECT_FALSE(valid_utf8("\xC0\xAF"));                // overlong
  EXPECT_FALSE(valid_utf8("\xED\xA0\x80"));            // a surrogate
  EXPECT_FALSE(valid_utf8("\xF4\x90\x80\x80"));        // beyond U+10FFFF
  // Every string it calls valid, nlohmann writes; the ones it does not, nlohmann refuses.
  for (const char* s : {"µs", "\xE2\x82\xAC", "\xC3", "\xC0\xAF", "\xED\xA0\x80", "a\xFF"}) {
    bool written = true;
    try {
      (void)json(std::string(s)).dump();
    } catch (const json::type_error&) {
      written = false;
    }
    EXPECT_EQ(valid_utf8(s), written) << s;
  }
}

TEST(Utf8, PrefixCutsAtCharactersAndReplacesBadBytes) {
  EXPECT_EQ(utf8_prefix("abc"), "abc");
  EXPECT_EQ(utf8_prefix("abc", 2), "ab");
  EXPECT_EQ(utf8_prefix("a\xC2\xB5"
                        "b",
                        2),
            "a");  // not half of µ
  EXPECT_EQ(utf8_prefix("a\xC2\xB5"
                        "b",
                        3),
            "a\xC2\xB5");
  EXPECT_EQ(utf8_prefix("a\xFF"
                        "b\xC3"),
            "a?b?");
  EXPECT_TRUE(valid_utf8(utf8_prefix("\xE2\x82\xAC\xE2\x82", 5)));
}

}  // namespace
}  // namespace kernelscan
