// unicorn/grammar/gbnf_compile.hpp — compile_gbnf's code: the GBNF parser,
// the expansion of groups and repetitions into helper rules, and the checks
// (undefined rules, missing root, left recursion). Included by grammar.hpp
// where its code is compiled (unicorn/base/linkage.hpp).
//
// The syntax, as llama.cpp reads it: `name ::= alternatives`, names of
// letters, digits, '-' and '_'; alternatives separated by '|'; sequences of
// "literals", [classes] ([^...] negated, a-z ranges), `.` (any character),
// rule names and (groups), each optionally followed by * + ? {m} {m,} {m,n};
// escapes \n \r \t \\ \" \' \[ \] \- \^ \xHH \uHHHH \UHHHHHHHH; `#` comments
// to the end of the line. A newline ends a rule except inside a group, after
// `::=` and after `|`.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

#include "unicorn/grammar/grammar.hpp"

namespace unicorn::grammar {

UNICORN_DECL CharClass::CharClass(std::vector<std::pair<uint32_t, uint32_t>> ranges) {
  std::sort(ranges.begin(), ranges.end());
  for (const auto& [lo, hi] : ranges) {
    if (lo > hi) continue;
    if (!ranges_.empty() && lo <= ranges_.back().second + 1)
      ranges_.back().second = std::max(ranges_.back().second, hi);
    else
      ranges_.emplace_back(lo, hi);
  }
  for (const auto& [lo, hi] : ranges_)
    for (uint32_t c = lo; c <= std::min<uint32_t>(hi, 127); ++c) ascii_[c >> 6] |= uint64_t(1) << (c & 63);
}

UNICORN_DECL bool CharClass::contains_slow(uint32_t cp) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), std::pair<uint32_t, uint32_t>(cp, kMaxCodePoint + 1));
  return it != ranges_.begin() && std::prev(it)->second >= cp;
}

UNICORN_DECL CharClass::Overlap CharClass::overlap(uint32_t lo, uint32_t hi) const {
  // The first range that ends at or after lo.
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), lo,
                             [](const std::pair<uint32_t, uint32_t>& r, uint32_t v) { return r.second < v; });
  if (it == ranges_.end() || it->first > hi) return Overlap::kNone;
  return it->first <= lo && it->second >= hi ? Overlap::kAll : Overlap::kSome;
}

UNICORN_DECL CharClass CharClass::complement() const {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : ranges_) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return CharClass(std::move(out));
}

UNICORN_DECL CharClass CharClass::united(const CharClass& other) const {
  auto all = ranges_;
  all.insert(all.end(), other.ranges_.begin(), other.ranges_.end());
  return CharClass(std::move(all));
}

// Builds a Grammar from GBNF text (compile_gbnf).
class GbnfCompiler {
 public:
  explicit GbnfCompiler(std::string_view src) : src_(src) {}

  std::shared_ptr<const Grammar> compile() {
    skip_space(true);
    while (pos_ < src_.size()) {
      const size_t start = pos_;
      const std::string name = parse_name();
      skip_space(false);
      if (src_.substr(pos_, 3) != "::=") fail(pos_, "expected '::=' after rule name '" + name + "'");
      pos_ += 3;
      skip_space(true);
      const uint32_t id = rule_id(name, start);
      if (rules_[id].defined)
        fail(start, "rule '" + name + "' is defined twice (first at " + where(rules_[id].pos) + ")");
      rules_[id].defined = true;
      rules_[id].pos = start;
      current_ = id;
      rules_[id].alts = parse_alternatives(false);
      skip_space(false);
      if (pos_ < src_.size() && src_[pos_] != '\n' && src_[pos_] != '\r')
        fail(pos_, std::string("unexpected '") + src_[pos_] + "' (a rule ends at the end of its line)");
      skip_space(true);
    }
    for (uint32_t r = 0; r < rules_.size(); ++r)
      if (!rules_[r].defined) fail(rules_[r].pos, "undefined rule '" + rules_[r].name + "'");
    const auto root = ids_.find("root");
    if (root == ids_.end()) throw Error("grammar: no rule named 'root'");
    check_left_recursion();
    return build(root->second);
  }

 private:
  struct RawRule {
    std::string name;
    std::vector<std::vector<Element>> alts;
    size_t pos = 0;         // definition (or first reference while undefined)
    bool defined = false;
    uint32_t owner = 0;     // the user rule a helper was made for
  };

  // Grammar size limits: a grammar is untrusted input (a request's).
  static constexpr uint32_t kMaxRepetition = 10000;
  static constexpr size_t kMaxElements = 2'000'000;
  static constexpr size_t kMaxDepth = 200;  // nested groups

  [[noreturn]] void fail(size_t at, const std::string& what) const {
    throw Error("grammar: " + where(at) + ": " + what);
  }
  std::string where(size_t at) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < src_.size(); ++i) {
      if (src_[i] == '\n') {
        ++line;
        col = 1;
      } else if ((static_cast<unsigned char>(src_[i]) & 0xC0) != 0x80) {
        ++col;
      }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(col);
  }

  void skip_space(bool newlines) {
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n' && src_[pos_] != '\r') ++pos_;
      } else if (newlines && (c == '\n' || c == '\r')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  static bool is_word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (pos_ < src_.size() && is_word_char(src_[pos_])) ++pos_;
    if (pos_ == start) {
      if (pos_ >= src_.size()) fail(pos_, "expected a rule name");
      fail(pos_, std::string("expected a rule name, found '") + src_[pos_] + "'");
    }
    return std::string(src_.substr(start, pos_ - start));
  }

  uint32_t rule_id(const std::string& name, size_t at) {
    const auto [it, added] = ids_.emplace(name, uint32_t(rules_.size()));
    if (added) {
      RawRule r;
      r.name = name;
      r.pos = at;
      r.owner = it->second;
      rules_.push_back(std::move(r));
    }
    return it->second;
  }

  uint32_t helper_rule(std::vector<std::vector<Element>> alts) {
    const uint32_t owner = rules_[current_].owner;
    RawRule r;
    r.name = rules_[owner].name + "#" + std::to_string(++helpers_);
    r.alts = std::move(alts);
    r.pos = rules_[owner].pos;
    r.defined = true;
    r.owner = owner;
    for (const auto& a : r.alts) count(a.size() + 1);
    rules_.push_back(std::move(r));
    return uint32_t(rules_.size() - 1);
  }

  // Every element made counts against kMaxElements, so a grammar cannot ask for
  // more memory than that however it nests its repetitions.
  void count(size_t elements) {
    total_ += elements;
    if (total_ > kMaxElements) fail(pos_, "grammar is too large");
  }

  uint32_t class_id(CharClass c) {
    std::vector<uint64_t> key;
    for (const auto& [lo, hi] : c.ranges()) key.push_back(uint64_t(lo) << 32 | hi);
    const auto [it, added] = class_ids_.emplace(std::move(key), uint32_t(classes_.size()));
    if (added) classes_.push_back(std::move(c));
    return it->second;
  }

  // One code point of the source (UTF-8), or an escape.
  uint32_t parse_char() {
    if (pos_ >= src_.size()) fail(pos_, "unexpected end of grammar");
    const size_t at = pos_;
    const auto b = static_cast<unsigned char>(src_[pos_]);
    if (b == '\\') {
      if (pos_ + 1 >= src_.size()) fail(at, "unexpected end of grammar after '\\'");
      const char e = src_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': return uint32_t(e);
        case 'x': return parse_hex(2, at);
        case 'u': return parse_hex(4, at);
        case 'U': return parse_hex(8, at);
        default: fail(at, std::string("unknown escape '\\") + e + "'");
      }
    }
    if (b < 0x80) {
      ++pos_;
      return b;
    }
    const int len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
    if (len == 0 || b > 0xF4 || pos_ + size_t(len) > src_.size()) fail(at, "invalid UTF-8");
    uint32_t cp = b & (0x7F >> len);
    for (int i = 1; i < len; ++i) {
      const auto c = static_cast<unsigned char>(src_[pos_ + size_t(i)]);
      if ((c & 0xC0) != 0x80) fail(at, "invalid UTF-8");
      cp = cp << 6 | (c & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) fail(at, "invalid UTF-8");
    pos_ += size_t(len);
    return cp;
  }

  uint32_t parse_hex(int digits, size_t at) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (pos_ >= src_.size()) fail(at, "escape needs " + std::to_string(digits) + " hex digits");
      const char c = src_[pos_];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) fail(at, "escape needs " + std::to_string(digits) + " hex digits");
      v = v << 4 | uint32_t(d);
      ++pos_;
    }
    if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF)) fail(at, "escape is not a Unicode scalar value");
    return v;
  }

  Element char_element(uint32_t cp) { return {Element::kChar, class_id(CharClass({{cp, cp}}))}; }

  std::vector<std::vector<Element>> parse_alternatives(bool nested) {
    if (++depth_ > kMaxDepth) fail(pos_, "groups nested too deeply");
    std::vector<std::vector<Element>> alts;
    alts.push_back(parse_sequence(nested));
    while (pos_ < src_.size() && src_[pos_] == '|') {
      ++pos_;
      skip_space(true);
      alts.push_back(parse_sequence(nested));
    }
    --depth_;
    return alts;
  }

  std::vector<Element> parse_sequence(bool nested) {
    std::vector<Element> seq;
    size_t last = seq.size();  // start of the last item, for a postfix
    bool have_last = false;
    while (pos_ < src_.size()) {
      const size_t at = pos_;
      const char c = src_[pos_];
      if (c == '"') {
        ++pos_;
        last = seq.size();
        while (true) {
          if (pos_ >= src_.size() || src_[pos_] == '\n' || src_[pos_] == '\r') fail(at, "unterminated literal");
          if (src_[pos_] == '"') break;
          seq.push_back(char_element(parse_char()));
        }
        ++pos_;
        have_last = seq.size() > last;  // "" is nothing to repeat
      } else if (c == '[') {
        ++pos_;
        const bool negated = pos_ < src_.size() && src_[pos_] == '^';
        if (negated) ++pos_;
        std::vector<std::pair<uint32_t, uint32_t>> ranges;
        while (true) {
          if (pos_ >= src_.size()) fail(at, "unterminated character class");
          if (src_[pos_] == ']') break;
          const uint32_t lo = parse_char();
          uint32_t hi = lo;
          if (pos_ + 1 < src_.size() && src_[pos_] == '-' && src_[pos_ + 1] != ']') {
            ++pos_;
            hi = parse_char();
            if (hi < lo) fail(at, "character range is backwards");
          }
          ranges.emplace_back(lo, hi);
        }
        ++pos_;
        CharClass cls(std::move(ranges));
        if (negated) cls = cls.complement();
        if (cls.ranges().empty()) fail(at, "character class matches nothing");
        last = seq.size();
        seq.push_back({Element::kChar, class_id(std::move(cls))});
        have_last = true;
      } else if (c == '.') {
        ++pos_;
        last = seq.size();
        seq.push_back({Element::kChar, class_id(CharClass({{0, kMaxCodePoint}}))});
        have_last = true;
      } else if (is_word_char(c)) {
        const std::string name = parse_name();
        last = seq.size();
        seq.push_back({Element::kRef, rule_id(name, at)});
        have_last = true;
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        auto alts = parse_alternatives(true);
        if (pos_ >= src_.size() || src_[pos_] != ')') fail(at, "unclosed '('");
        ++pos_;
        last = seq.size();
        append_group(seq, std::move(alts));
        have_last = true;
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_last) fail(at, std::string("'") + c + "' has nothing before it to repeat");
        uint32_t min = 0, max = 0;
        bool bounded = true;
        ++pos_;
        if (c == '*') {
          bounded = false;
        } else if (c == '+') {
          min = 1;
          bounded = false;
        } else if (c == '?') {
          max = 1;
        } else {
          skip_space(nested);
          min = parse_count(at);
          skip_space(nested);
          if (pos_ < src_.size() && src_[pos_] == ',') {
            ++pos_;
            skip_space(nested);
            if (pos_ < src_.size() && src_[pos_] == '}') bounded = false;
            else max = parse_count(at);
          } else {
            max = min;
          }
          skip_space(nested);
          if (pos_ >= src_.size() || src_[pos_] != '}') fail(at, "expected '}' to end the repetition");
          ++pos_;
          if (bounded && max < min) fail(at, "repetition maximum is below its minimum");
        }
        std::vector<Element> item(seq.begin() + std::ptrdiff_t(last), seq.end());
        seq.resize(last);
        repeat(seq, item, min, max, bounded, at);
        have_last = false;  // x** is an error, as in llama.cpp
      } else {
        break;
      }
      if (total_ + seq.size() > kMaxElements) fail(at, "grammar is too large");
      skip_space(nested);
    }
    count(seq.size() + 1);
    return seq;
  }

  uint32_t parse_count(size_t at) {
    const size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '9') {
      v = v * 10 + uint64_t(src_[pos_] - '0');
      if (v > kMaxRepetition) fail(at, "repetition count above " + std::to_string(kMaxRepetition));
      ++pos_;
    }
    if (pos_ == start) fail(at, "expected a number in the repetition");
    return uint32_t(v);
  }

  // A group in a sequence: one alternative is spliced in; alternatives of one
  // character each become one class; anything else is a helper rule.
  void append_group(std::vector<Element>& seq, std::vector<std::vector<Element>> alts) {
    if (alts.size() == 1) {
      seq.insert(seq.end(), alts[0].begin(), alts[0].end());
      return;
    }
    bool all_chars = true;
    for (const auto& a : alts) all_chars = all_chars && a.size() == 1 && a[0].kind == Element::kChar;
    if (all_chars) {
      CharClass u;
      for (const auto& a : alts) u = u.united(classes_[a[0].arg]);
      seq.push_back({Element::kChar, class_id(std::move(u))});
      return;
    }
    seq.push_back({Element::kRef, helper_rule(std::move(alts))});
  }

  // The item as one element.
  Element unit(const std::vector<Element>& item) {
    if (item.size() == 1) return item[0];
    return {Element::kRef, helper_rule({item})};
  }

  void repeat(std::vector<Element>& seq, const std::vector<Element>& item, uint32_t min, uint32_t max,
              bool bounded, size_t at) {
    if (uint64_t(item.size()) * std::max(min, max) > kMaxElements) fail(at, "grammar is too large");
    for (uint32_t i = 0; i < min; ++i) seq.insert(seq.end(), item.begin(), item.end());
    if (!bounded) {
      const Element u = unit(item);
      if (u.kind == Element::kChar) {
        seq.push_back({Element::kCharStar, u.arg});
      } else {
        const uint32_t star = helper_rule({});
        rules_[star].alts = {{u, {Element::kRef, star}}, {}};
        count(4);
        seq.push_back({Element::kRef, star});
      }
      return;
    }
    if (max == min) return;
    const Element u = unit(item);
    // opt_1 ::= u | ε ; opt_k ::= u opt_{k-1} | ε
    uint32_t inner = helper_rule({{u}, {}});
    for (uint32_t k = 2; k <= max - min; ++k) inner = helper_rule({{u, {Element::kRef, inner}}, {}});
    seq.push_back({Element::kRef, inner});
  }

  bool nullable(const Element& e) const {
    return e.kind == Element::kCharStar || (e.kind == Element::kRef && nullable_[e.arg]);
  }

  // A rule that can reach itself without consuming a byte would make the
  // closure loop: refuse it, naming the cycle by the user's rule names.
  void check_left_recursion() {
    const size_t n = rules_.size();
    nullable_.assign(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (nullable_[r]) continue;
        for (const auto& alt : rules_[r].alts) {
          bool all = true;
          for (const auto& e : alt) all = all && nullable(e);
          if (all) {
            nullable_[r] = true;
            changed = true;
            break;
          }
        }
      }
    }
    std::vector<std::vector<uint32_t>> leads(n);
    for (size_t r = 0; r < n; ++r)
      for (const auto& alt : rules_[r].alts)
        for (const auto& e : alt) {
          if (e.kind == Element::kRef) leads[r].push_back(e.arg);
          if (!nullable(e)) break;
        }
    std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<uint32_t> path;
    // Iterative DFS: a grammar's rule graph can be deep.
    for (uint32_t start = 0; start < n; ++start) {
      if (color[start]) continue;
      std::vector<std::pair<uint32_t, size_t>> stack{{start, 0}};
      color[start] = 1;
      path = {start};
      while (!stack.empty()) {
        auto& [r, next] = stack.back();
        if (next < leads[r].size()) {
          const uint32_t to = leads[r][next++];
          if (color[to] == 1) report_cycle(path, to);
          if (color[to] == 0) {
            color[to] = 1;
            path.push_back(to);
            stack.emplace_back(to, 0);
          }
        } else {
          color[r] = 2;
          path.pop_back();
          stack.pop_back();
        }
      }
    }
  }

  [[noreturn]] void report_cycle(const std::vector<uint32_t>& path, uint32_t to) const {
    std::string cycle;
    const auto from = std::find(path.begin(), path.end(), to);
    std::string last;
    for (auto it = from; it != path.end(); ++it) {
      const std::string& name = rules_[rules_[*it].owner].name;
      if (name == last) continue;
      cycle += (cycle.empty() ? "" : " -> ") + name;
      last = name;
    }
    cycle += " -> " + rules_[rules_[to].owner].name;
    fail(rules_[rules_[to].owner].pos, "rule '" + rules_[rules_[to].owner].name +
                                           "' can reach itself without consuming any input (" + cycle +
                                           "): left recursion, or a repetition of something that can be empty");
  }

  std::shared_ptr<const Grammar> build(uint32_t root) {
    auto g = std::make_shared<Grammar>();
    g->classes_ = std::move(classes_);
    g->root_ = root;
    for (auto& r : rules_) {
      std::vector<uint32_t> starts;
      for (auto& alt : r.alts) {
        starts.push_back(uint32_t(g->elements_.size()));
        g->elements_.insert(g->elements_.end(), alt.begin(), alt.end());
        g->elements_.push_back({Element::kEnd, 0});
      }
      if (g->elements_.size() > kMaxElements) throw Error("grammar: grammar is too large");
      g->alternatives_.push_back(std::move(starts));
      g->names_.push_back(std::move(r.name));
    }
    return g;
  }

  std::string_view src_;
  size_t pos_ = 0;
  size_t depth_ = 0;
  size_t total_ = 0;
  uint32_t current_ = 0;
  uint32_t helpers_ = 0;
  std::vector<RawRule> rules_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<CharClass> classes_;
  std::map<std::vector<uint64_t>, uint32_t> class_ids_;
  std::vector<bool> nullable_;
};

UNICORN_DECL std::shared_ptr<const Grammar> compile_gbnf(std::string_view gbnf) {
  return GbnfCompiler(gbnf).compile();
}

}  // namespace unicorn::grammar
