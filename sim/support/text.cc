#include "sim/support/text.h"

#include <algorithm>
#include <charconv>
#include <system_error>

namespace simloop::support {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest(std::string_view word, const std::vector<std::string>& candidates,
                    size_t max_distance) {
  std::string best;
  size_t best_d = max_distance + 1;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string suggest(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.empty()) return "";
  if (std::string near = closest(word, candidates, std::max<size_t>(2, word.size() / 4));
      !near.empty())
    return near;
  std::string holder;
  for (const auto& c : candidates)
    if (c.find(word) != std::string::npos) {
      if (!holder.empty() && holder != c) return "";  // more than one: no guess
      holder = c;
    }
  return holder;
}

uint64_t fnv1a(std::string_view text, uint64_t h) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string yaml_quoted(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {  // a control character, as \xNN
      out += "\\x";
      out += "0123456789abcdef"[u >> 4];
      out += "0123456789abcdef"[u & 0xf];
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool parse_u64(std::string_view s, uint64_t* v, int base) {
  if (base == 16 && (s.starts_with("0x") || s.starts_with("0X"))) s.remove_prefix(2);
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v, base);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> w;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' ||
                            s[i] == '\v' || s[i] == '\f'))
      ++i;
    const size_t start = i;
    while (i < s.size() && !(s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' ||
                             s[i] == '\v' || s[i] == '\f'))
      ++i;
    if (i > start) w.emplace_back(s.substr(start, i - start));
  }
  return w;
}

TextPos text_position(std::string_view text, size_t at) {
  TextPos p;
  for (size_t i = 0; i < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.col = 1;
    } else {
      ++p.col;
    }
  }
  return p;
}

TextPos json_error_position(std::string_view text, size_t bytes_read) {
  return text_position(text, bytes_read > 0 ? bytes_read - 1 : 0);
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  if (from.empty()) return std::string(s);
  for (size_t at = 0;;) {
    const size_t hit = s.find(from, at);
    out.append(s.substr(at, hit - at));
    if (hit == std::string_view::npos) return out;
    out.append(to);
    at = hit + from.size();
  }
}

}  // namespace simloop::support
