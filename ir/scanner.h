// The tokenizer shared by the text form of graphs and rules (ir/text.h) and
// by the axiom files of specs/ (verifier/axioms.h), which embed that text
// form: white space, punctuation, identifiers, integers and the ", found ..."
// tail of error messages. A parser derives from Scanner and says, in fail(),
// which error type it throws (ParseError, AxiomError).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/utf8.h"

namespace tgr {

inline bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
inline bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The source line under an error message and a caret under `column`
// (1-based, a byte offset), each line indented by two spaces. A long line
// (a rule nested thousands deep is one line of 100 KB) is cut to a window
// around the column that cuts no UTF-8 character; the caret counts
// characters, not bytes.
inline std::string caret_excerpt(std::string_view line, size_t column) {
  constexpr size_t kLongest = 160, kAround = 60;
  const size_t col = util::utf8_char_start(line, std::min(column > 0 ? column - 1 : 0, line.size()));
  size_t start = 0, end = line.size();
  if (line.size() > kLongest) {
    start = util::utf8_char_start(line, col > kAround ? col - kAround : 0);
    end = util::utf8_char_start(line, std::min(line.size(), col + kAround));
  }
  const std::string before = start > 0 ? "..." : "", after = end < line.size() ? "..." : "";
  return "  " + before + std::string(line.substr(start, end - start)) + after + "\n  " +
         std::string(before.size() + util::utf8_length(line.substr(start, col - start)), ' ') + "^";
}

class Scanner {
 public:
  // Where the two languages differ.
  struct Style {
    bool hash_comments = false;                    // '#' to the end of the line is white space (axiom files)
    bool found_whole_word = false;                 // found() quotes a whole identifier rather than its first character
    const char* end_name = "the end of the text";  // what found() calls the end
  };

  // Scans text[pos, limit).
  Scanner(std::string_view text, size_t pos, size_t limit, Style style)
      : text_(text), pos_(pos), limit_(std::min(limit, text.size())), style_(style) {}
  virtual ~Scanner() = default;

  // Throws the parser's own error for byte offset `at` of the text.
  [[noreturn]] virtual void fail(size_t at, const std::string& what) const = 0;

  size_t pos() const { return pos_; }

  void skip_ws();      // white space, and comments where the style has them
  void skip_blanks();  // spaces, tabs and '\r' only: stays on the line
  bool at_end();
  bool peek(char c);
  bool accept(std::string_view token);
  // `word` follows, and not as the start of a longer identifier; not consumed.
  bool peek_keyword(std::string_view word);
  void expect(std::string_view token, const std::string& context);
  void expect_end();
  // ", found 'x'" or ", found the end of the text": the tail of "expected" messages.
  std::string found();
  std::string ident(const std::string& what);
  int64_t integer(const std::string& what);  // an optional '-' and decimal digits

 protected:
  std::string_view text_;
  size_t pos_;
  size_t limit_;
  Style style_;
};

}  // namespace tgr
