// unicorn/grammar/grammar.hpp — a compiled grammar: llama.cpp's GBNF text
// turned into rules the matcher (matcher.hpp) walks byte by byte.
//
// The compiled form is a flat array of elements. A rule is a list of
// alternatives; an alternative is a run of elements ended by kEnd. An element
// is a character (a class of code points, consumed as its UTF-8 bytes), a
// character star (the same class repeated zero or more times: `[^"]*` becomes
// one element, so a string body is one parse position however long it gets,
// which is what lets the matcher cache its mask), or a reference to a rule.
// Groups and repetitions become helper rules, as in llama.cpp: `x*` is
// `h ::= x h | ε` (a reference in tail position pushes nothing, so a loop does
// not grow the stack), `x?` is `h ::= x | ε`, `x{m,n}` is m copies of x and a
// chain of n - m optional ones.
//
// compile_gbnf refuses what would make the matcher loop: a rule that can reach
// itself before consuming a byte (left recursion, or a repetition of something
// that can be empty). So expanding references (matcher's closure) always ends.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/base/linkage.hpp"

namespace unicorn::grammar {

class Vocabulary;  // vocabulary.hpp
namespace detail {
class MaskCache;  // matcher.hpp
}

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// A set of code points as sorted, disjoint, inclusive ranges (a negated class
// is stored as its complement), with the ASCII part as a bitmap.
class CharClass {
 public:
  CharClass() = default;
  explicit CharClass(std::vector<std::pair<uint32_t, uint32_t>> ranges);  // any order, may overlap

  bool contains(uint32_t cp) const {
    if (cp < 128) return (ascii_[cp >> 6] >> (cp & 63)) & 1;
    return contains_slow(cp);
  }
  enum class Overlap { kNone, kSome, kAll };
  // How much of [lo, hi] the class holds.
  Overlap overlap(uint32_t lo, uint32_t hi) const;
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return ranges_; }
  CharClass complement() const;
  CharClass united(const CharClass& other) const;
  bool operator==(const CharClass& o) const { return ranges_ == o.ranges_; }

 private:
  bool contains_slow(uint32_t cp) const;
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
  uint64_t ascii_[2] = {0, 0};
};

struct Element {
  enum Kind : uint8_t { kEnd, kChar, kCharStar, kRef };
  Kind kind;
  uint32_t arg;  // kChar, kCharStar: class index; kRef: rule index
};

class Grammar {
 public:
  const std::vector<Element>& elements() const { return elements_; }
  // Start index (into elements()) of each alternative of `rule`.
  const std::vector<uint32_t>& alternatives(uint32_t rule) const { return alternatives_[rule]; }
  const CharClass& char_class(uint32_t index) const { return classes_[index]; }
  uint32_t root() const { return root_; }
  size_t rule_count() const { return alternatives_.size(); }
  const std::string& rule_name(uint32_t rule) const { return names_[rule]; }

  // The masks cached for one vocabulary (matcher.hpp), made on first use and
  // shared by every matcher of this grammar; thread-safe.
  std::shared_ptr<detail::MaskCache> mask_cache(const std::shared_ptr<const Vocabulary>& vocabulary) const;

 private:
  friend class GbnfCompiler;
  std::vector<Element> elements_;
  std::vector<std::vector<uint32_t>> alternatives_;
  std::vector<CharClass> classes_;
  std::vector<std::string> names_;  // helper rules: "<parent>#<n>"
  uint32_t root_ = 0;
  mutable std::mutex cache_mutex_;
  mutable std::vector<std::shared_ptr<detail::MaskCache>> caches_;
};

// Compiles llama.cpp's GBNF; the start rule is "root". Throws unicorn::Error
// "grammar: line L, column C: ..." for syntax errors, undefined rules, rules
// defined twice and left recursion; "grammar: no rule named 'root'".
std::shared_ptr<const Grammar> compile_gbnf(std::string_view gbnf);

}  // namespace unicorn::grammar

#if UNICORN_DEFINE_HERE
#include "unicorn/grammar/gbnf_compile.hpp"
#endif  // UNICORN_DEFINE_HERE
