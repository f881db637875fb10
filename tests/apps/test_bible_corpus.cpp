// The program's KJV provider runs Debian's `bible` and hands over the whole text.
#include <gtest/gtest.h>

#include "bible_corpus.hpp"

namespace mantissa::app {
namespace {

TEST(BibleCorpus, TheWholeKjvFromGenesisToRevelation) {
  const std::string text = bible_kjv_text();
  EXPECT_GT(text.size(), 4000000u);
  EXPECT_NE(text.substr(0, 40).find("Genesis 1"), std::string::npos);
  EXPECT_NE(text.find("Revelation 22\n"), std::string::npos);
  EXPECT_NE(text.find("21 The grace of our Lord Jesus Christ be with you all. Amen."),
            std::string::npos);
}

}  // namespace
}  // namespace mantissa::app
