// ir/scanner.h: the tokenizer the text form and the axiom files share.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "ir/scanner.h"

namespace tgr {
namespace {

// Failures carry the offset, so tests can check where the scanner stopped.
struct ScanFailure : std::runtime_error {
  ScanFailure(size_t at_offset, const std::string& what) : std::runtime_error(what), at(at_offset) {}
  size_t at;
};

class TestScanner : public Scanner {
 public:
  explicit TestScanner(std::string_view text, Style style = {}, size_t limit = std::string_view::npos)
      : Scanner(text, 0, limit, style) {}
  [[noreturn]] void fail(size_t at, const std::string& what) const override { throw ScanFailure(at, what); }
};

std::string failure_of(const std::function<void()>& body, size_t* at = nullptr) {
  try {
    body();
  } catch (const ScanFailure& f) {
    if (at) *at = f.at;
    return f.what();
  }
  return "(no failure)";
}

TEST(Scanner, IdentifiersPunctuationAndIntegers) {
  TestScanner s("  conv2d_1 [ stride = -12 ]");
  EXPECT_EQ(s.ident("a name"), "conv2d_1");
  EXPECT_TRUE(s.peek('['));
  EXPECT_FALSE(s.accept("]"));
  EXPECT_TRUE(s.accept("["));
  EXPECT_TRUE(s.peek_keyword("stride"));
  EXPECT_FALSE(s.peek_keyword("str"));  // a prefix of a longer identifier is not the keyword
  EXPECT_EQ(s.ident("a key"), "stride");
  s.expect("=", "after the key");
  EXPECT_EQ(s.integer("a number"), -12);
  s.expect("]", "to close");
  EXPECT_TRUE(s.at_end());
  s.expect_end();
}

TEST(Scanner, ExpectedMessagesNameWhatWasFound) {
  TestScanner text_form("f(x");
  EXPECT_EQ(text_form.ident("an operator"), "f");
  text_form.expect("(", "to open");
  size_t at = 0;
  EXPECT_EQ(failure_of([&] { text_form.expect(")", "to close the arguments"); }, &at),
            "expected ')' to close the arguments, found 'x'");
  EXPECT_EQ(at, 2u);
  (void)text_form.ident("x");
  EXPECT_EQ(failure_of([&] { text_form.expect(")", "to close"); }), "expected ')' to close, found the end of the text");

  // The axiom files' style: whole words, "the end of the file".
  const Scanner::Style file_style{true, true, "the end of the file"};
  TestScanner axiom_file("vars x", file_style);
  EXPECT_EQ(failure_of([&] { axiom_file.expect("axiom", "to start an entry"); }),
            "expected 'axiom' to start an entry, found 'vars'");
  TestScanner empty_file("  # only a comment\n", file_style);
  EXPECT_EQ(failure_of([&] { empty_file.ident("a name"); }), "expected a name, found the end of the file");
  EXPECT_EQ(failure_of([&] { TestScanner("7up").ident("a name"); }), "expected a name, found '7'");
  EXPECT_EQ(failure_of([&] { TestScanner("x").integer("a count"); }), "expected a count, found 'x'");
}

TEST(Scanner, CommentsOnlyWhereTheStyleHasThem) {
  TestScanner with_comments("# note\n  axiom", {true, true, "the end of the file"});
  EXPECT_TRUE(with_comments.peek_keyword("axiom"));
  TestScanner without("# note");
  EXPECT_TRUE(without.peek('#'));
}

TEST(Scanner, BlanksStopAtTheLineEnd) {
  TestScanner s(" \t\r\nnext");
  s.skip_blanks();
  EXPECT_EQ(s.pos(), 3u);
  EXPECT_TRUE(s.accept("next"));
}

TEST(Scanner, NothingIsReadPastTheLimit) {
  TestScanner s("ab=>cd", {}, 2);
  EXPECT_EQ(s.ident("a name"), "ab");
  EXPECT_FALSE(s.accept("=>"));
  EXPECT_TRUE(s.at_end());
  EXPECT_EQ(failure_of([&] { s.expect("=>", "between the sides"); }),
            "expected '=>' between the sides, found the end of the text");
}

}  // namespace
}  // namespace tgr
