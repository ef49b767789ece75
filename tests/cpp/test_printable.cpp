// printable(): what error messages do to input text before it reaches a terminal.
#include <gtest/gtest.h>

#include "opprof/util/error.hpp"

using opprof::printable;

TEST(Printable, KeepsAsciiAndValidUtf8) {
  EXPECT_EQ(printable("aten::mm (seq 5)"), "aten::mm (seq 5)");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80");
}

TEST(Printable, EscapesControlCharactersAndInvalidUtf8) {
  EXPECT_EQ(printable("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(printable("\x1b[2J\x7f"), "\\x1b[2J\\x7f");
  EXPECT_EQ(printable(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(printable("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(printable("\xc3"), "\\xc3");                  // truncated sequence
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");         // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // UTF-16 surrogate
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
}

TEST(Printable, InputErrorsAreOneLine) {
  opprof::InputError e("tra\nce.json", "bad value \"\x1b]0;owned\x07\"", {3, 7, 0, true});
  EXPECT_STREQ(e.what(), "tra\\nce.json:3:7: bad value \"\\x1b]0;owned\\x07\"");
  EXPECT_EQ(e.message(), "bad value \"\x1b]0;owned\x07\"");  // the raw text stays available
}
