// Cutting user text for messages without cutting a UTF-8 character: a
// message that quotes a window of a line, or one character of it, must not
// end in the first byte of a multi-byte character (the message would not be
// valid UTF-8; terminals and Python's decoding choke on it). Text that is not
// UTF-8 is cut as bytes: a continuation byte with no lead byte before it is a
// character of its own.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace tgr::util {

// Whether byte `c` continues a UTF-8 character (10xxxxxx).
constexpr bool utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The offset of the character that holds byte `pos` of `text`: `pos` moved
// back over continuation bytes to their lead byte (at most 3 bytes back, the
// longest UTF-8 character). `pos` at or past the end gives text.size().
constexpr size_t utf8_char_start(std::string_view text, size_t pos) {
  if (pos >= text.size()) return text.size();
  size_t start = pos;
  while (start > 0 && pos - start < 3 && utf8_continuation(text[start])) --start;
  const auto lead = static_cast<unsigned char>(text[start]);
  // A lead byte whose character reaches `pos` (11xxxxxx: 110 two bytes, 1110 three, 11110 four).
  const size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return start + length > pos ? start : pos;
}

// The bytes of the character at `pos`: a lead byte and the continuation
// bytes it announces (fewer when the text ends or has none), else 1.
constexpr size_t utf8_char_bytes(std::string_view text, size_t pos) {
  if (pos >= text.size()) return 0;
  const auto lead = static_cast<unsigned char>(text[pos]);
  const size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  size_t n = 1;
  while (n < length && pos + n < text.size() && utf8_continuation(text[pos + n])) ++n;
  return n;
}

// The longest prefix of `text` of at most `max_bytes` bytes that ends
// between two characters.
constexpr std::string_view utf8_prefix(std::string_view text, size_t max_bytes) {
  return text.substr(0, utf8_char_start(text, std::min(max_bytes, text.size())));
}

// The bytes text[begin, end) with both ends moved back to the start of the
// character they fall in: a window of a line that cuts no character.
constexpr std::string_view utf8_window(std::string_view text, size_t begin, size_t end) {
  begin = utf8_char_start(text, begin);
  end = std::max(begin, utf8_char_start(text, end));
  return text.substr(begin, end - begin);
}

// The characters of `text`: its bytes that do not continue a character
// (the columns it takes, for a caret under a position).
constexpr size_t utf8_length(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) { return !utf8_continuation(c); }));
}

}  // namespace tgr::util
