#include "ir/scanner.h"

#include <algorithm>
#include <charconv>

namespace tgr {

void Scanner::skip_ws() {
  while (pos_ < limit_) {
    if (std::isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    } else if (style_.hash_comments && text_[pos_] == '#') {
      while (pos_ < limit_ && text_[pos_] != '\n') ++pos_;
    } else {
      break;
    }
  }
}

void Scanner::skip_blanks() {
  while (pos_ < limit_ && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r')) ++pos_;
}

bool Scanner::at_end() {
  skip_ws();
  return pos_ >= limit_;
}

bool Scanner::peek(char c) {
  skip_ws();
  return pos_ < limit_ && text_[pos_] == c;
}

bool Scanner::accept(std::string_view token) {
  skip_ws();
  if (pos_ + token.size() > limit_ || text_.substr(pos_, token.size()) != token) return false;
  pos_ += token.size();
  return true;
}

bool Scanner::peek_keyword(std::string_view word) {
  skip_ws();
  if (pos_ + word.size() > limit_ || text_.substr(pos_, word.size()) != word) return false;
  const size_t end = pos_ + word.size();
  return end >= limit_ || !is_ident_char(text_[end]);
}

void Scanner::expect(std::string_view token, const std::string& context) {
  if (!accept(token)) fail(pos_, "expected '" + std::string(token) + "' " + context + found());
}

void Scanner::expect_end() {
  if (!at_end()) fail(pos_, "unexpected text after the end" + found());
}

std::string Scanner::found() {
  skip_ws();
  if (pos_ >= limit_) return std::string(", found ") + style_.end_name;
  size_t end = std::min(limit_, pos_ + util::utf8_char_bytes(text_, pos_));  // a whole character
  if (style_.found_whole_word && is_ident_char(text_[pos_]))
    while (end < limit_ && is_ident_char(text_[end])) ++end;
  return ", found '" + std::string(text_.substr(pos_, end - pos_)) + "'";
}

std::string Scanner::ident(const std::string& what) {
  skip_ws();
  if (pos_ >= limit_ || !is_ident_start(text_[pos_])) fail(pos_, "expected " + what + found());
  const size_t start = pos_;
  while (pos_ < limit_ && is_ident_char(text_[pos_])) ++pos_;
  return std::string(text_.substr(start, pos_ - start));
}

int64_t Scanner::integer(const std::string& what) {
  skip_ws();
  const size_t start = pos_;
  bool negative = false;
  if (pos_ < limit_ && text_[pos_] == '-') {
    negative = true;
    ++pos_;
  }
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text_.data() + pos_, text_.data() + limit_, v);
  if (ec != std::errc()) {
    pos_ = start;
    fail(pos_, "expected " + what + found());
  }
  pos_ = ptr - text_.data();
  return negative ? -v : v;
}

}  // namespace tgr
