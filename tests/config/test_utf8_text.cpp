// UTF-8 checks the config and safetensors readers use (mantissa/utf8_text.hpp), against
// hand-encoded bytes: well-formed text, each malformed form RFC 3629 names, and the note that
// points at the first character of a word that is not ASCII.
#include <gtest/gtest.h>

#include <string>

#include "mantissa/utf8_text.hpp"

namespace mantissa {
namespace {

TEST(Utf8Text, WellFormedTextIsValid) {
  EXPECT_TRUE(valid_utf8(""));
  EXPECT_TRUE(valid_utf8("max_steps"));
  EXPECT_TRUE(valid_utf8("\xc3\xa9"));          // U+00E9
  EXPECT_TRUE(valid_utf8("\xe2\x80\x8b"));      // U+200B
  EXPECT_TRUE(valid_utf8("\xf0\x9f\x98\x80"));  // U+1F600
  EXPECT_TRUE(valid_utf8("\xf4\x8f\xbf\xbf"));  // U+10FFFF, the last
}

TEST(Utf8Text, EachMalformedFormIsRefused) {
  EXPECT_FALSE(valid_utf8("\x80"));              // a continuation byte first
  EXPECT_FALSE(valid_utf8("\xc0\xaf"));          // an overlong lead
  EXPECT_FALSE(valid_utf8("\xe0\x80\xaf"));      // overlong in three bytes (U+002F)
  EXPECT_FALSE(valid_utf8("\xed\xa0\x80"));      // a surrogate (U+D800)
  EXPECT_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(valid_utf8("\xe2\x80"));          // cut short
  EXPECT_FALSE(valid_utf8("a\xe2\x28\xa1"));     // a second byte that is not a continuation
  EXPECT_FALSE(valid_utf8("\xff"));
}

TEST(Utf8Text, TheNoteNamesTheFirstCharacterThatIsNotAscii) {
  EXPECT_EQ(non_ascii_note("max_steps"), "");
  // A zero-width space after "max_steps": character 10.
  EXPECT_EQ(non_ascii_note("max_steps\xe2\x80\x8b"), " (its character 10 is U+200B, not ASCII)");
  // A Cyrillic a (U+0430, two bytes) in "max": character 2, counted in characters.
  EXPECT_EQ(non_ascii_note("m\xd0\xb0x"), " (its character 2 is U+0430, not ASCII)");
  EXPECT_EQ(non_ascii_note("\xc3\xa9t\xe2\x80\x8b"), " (its character 1 is U+00E9, not ASCII)");
  EXPECT_EQ(non_ascii_note("\xf0\x9f\x98\x80"), " (its character 1 is U+1F600, not ASCII)");
  EXPECT_EQ(non_ascii_note("ab\xff"), " (its byte 3 is 0xff, not UTF-8)");
}

}  // namespace
}  // namespace mantissa
