// util/utf8.h: messages cut user text at character boundaries, never inside
// a UTF-8 character.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "ir/scanner.h"
#include "ir/text.h"
#include "util/utf8.h"

namespace tgr::util {
namespace {

using tgr::caret_excerpt;
using tgr::parse_tuple;
using tgr::ParseError;

// "aé€😀": 1, 2, 3 and 4 bytes; offsets 0, 1, 3, 6, end 10.
const std::string kMixed = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";

// Whether `text` is whole UTF-8 characters (each lead byte with all its
// continuation bytes, no stray continuation byte).
bool whole_characters(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_char_bytes(text, i);
    const auto lead = static_cast<unsigned char>(text[i]);
    const size_t wanted = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (n != wanted || utf8_continuation(text[i])) return false;
    i += n;
  }
  return true;
}

TEST(Utf8, CharacterStartsAndLengths) {
  const size_t starts[] = {0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10};
  for (size_t pos = 0; pos <= kMixed.size(); ++pos) EXPECT_EQ(utf8_char_start(kMixed, pos), starts[pos]) << pos;
  EXPECT_EQ(utf8_char_bytes(kMixed, 0), 1u);
  EXPECT_EQ(utf8_char_bytes(kMixed, 1), 2u);
  EXPECT_EQ(utf8_char_bytes(kMixed, 3), 3u);
  EXPECT_EQ(utf8_char_bytes(kMixed, 6), 4u);
  EXPECT_EQ(utf8_char_bytes(kMixed, 10), 0u);
  EXPECT_EQ(utf8_length(kMixed), 4u);
}

TEST(Utf8, PrefixesNeverEndInsideACharacter) {
  const size_t kept[] = {0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 10};
  for (size_t max = 0; max <= kMixed.size() + 1; ++max) {
    const std::string_view prefix = utf8_prefix(kMixed, max);
    EXPECT_EQ(prefix.size(), kept[max]) << max;
    EXPECT_TRUE(whole_characters(prefix)) << max;
  }
  for (size_t begin = 0; begin <= kMixed.size(); ++begin)
    for (size_t end = begin; end <= kMixed.size(); ++end)
      EXPECT_TRUE(whole_characters(utf8_window(kMixed, begin, end))) << begin << ".." << end;
}

TEST(Utf8, BytesThatAreNotUtf8AreCutAsBytes) {
  const std::string stray = "ab\x80\x80\x80\x80\x80z";  // continuation bytes with no lead byte
  for (size_t pos = 0; pos < stray.size(); ++pos) EXPECT_EQ(utf8_char_start(stray, pos), pos);
  EXPECT_EQ(utf8_prefix(stray, 4).size(), 4u);
  const std::string cut = "a\xE2\x82";  // a 3-byte character the text ends inside
  EXPECT_EQ(utf8_char_bytes(cut, 1), 2u);
  EXPECT_EQ(utf8_prefix(cut, 2).size(), 1u);
}

// The excerpt under an error message: a window of a long line of
// multi-byte characters cuts none, wherever the column falls, and the caret
// stands under the character at the column.
TEST(Utf8, CaretExcerptsCutNoCharacter) {
  std::string line;
  for (int i = 0; i < 200; ++i) line += i % 2 ? "\xE2\x82\xAC" : "x\xC3\xA9";  // "€", "xé"
  for (size_t column = 1; column <= line.size() + 1; ++column) {
    const std::string excerpt = caret_excerpt(line, column);
    ASSERT_TRUE(whole_characters(excerpt)) << column;
  }
  const std::string excerpt = caret_excerpt("r\xC3\xA9lu(x0) ?", 11);  // the '?' (byte 10) after "rélu(x0) "
  EXPECT_EQ(excerpt.substr(excerpt.find('\n') + 1), std::string(2 + 9, ' ') + "^") << excerpt;
}

// "found '...'" quotes the whole character the parser stopped at.
TEST(Utf8, ParseErrorsQuoteWholeCharacters) {
  try {
    (void)parse_tuple("relu(\xC3\xA9)");
    ADD_FAILURE() << "no error";
  } catch (const ParseError& e) {
    EXPECT_NE(e.message().find("found '\xC3\xA9'"), std::string::npos) << e.message();
    EXPECT_TRUE(whole_characters(e.what())) << e.what();
  }
}

}  // namespace
}  // namespace tgr::util
