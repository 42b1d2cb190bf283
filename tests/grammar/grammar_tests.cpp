// GBNF: the syntax and its errors, what grammars match, and the matcher's
// masks (exact against each token checked alone, end tokens, partial UTF-8).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "grammar_test_util.hpp"
#include "unicorn/grammar/json_schema.hpp"

namespace unicorn::grammar {
namespace {

using testing::bit;
using testing::byte_vocabulary;
using testing::mask_of;
using testing::matches;

std::string compile_error(const std::string& gbnf) {
  try {
    compile_gbnf(gbnf);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Gbnf, ErrorsNameLineAndColumn) {
  struct Case {
    const char* gbnf;
    const char* message;
  };
  const Case cases[] = {
      {"root ::= \"a\"\nfoo ::= bar", "grammar: line 2, column 9: undefined rule 'bar'"},
      {"root ::= \"a", "grammar: line 1, column 10: unterminated literal"},
      {"root ::= [a-", "grammar: line 1, column 10: unterminated character class"},
      {"root ::= [z-a]", "grammar: line 1, column 10: character range is backwards"},
      {"root ::= \"\\q\"", "grammar: line 1, column 11: unknown escape '\\q'"},
      {"root ::= \"\\x4\"", "grammar: line 1, column 11: escape needs 2 hex digits"},
      {"root ::= \"\\uD800\"", "grammar: line 1, column 11: escape is not a Unicode scalar value"},
      {"root = \"a\"", "grammar: line 1, column 6: expected '::=' after rule name 'root'"},
      {"root ::= \"a\" )", "grammar: line 1, column 14: unexpected ')' (a rule ends at the end of its line)"},
      {"root ::= ( \"a\"", "grammar: line 1, column 10: unclosed '('"},
      {"root ::= *", "grammar: line 1, column 10: '*' has nothing before it to repeat"},
      {"root ::= \"a\"{2,1}", "grammar: line 1, column 13: repetition maximum is below its minimum"},
      {"root ::= \"a\"{2", "grammar: line 1, column 13: expected '}' to end the repetition"},
      {"root ::= \"a\"{99999}", "grammar: line 1, column 13: repetition count above 10000"},
      {"root ::= []", "grammar: line 1, column 10: character class matches nothing"},
      {"root ::= \"a\"\nroot ::= \"b\"", "grammar: line 2, column 1: rule 'root' is defined twice (first at line 1, column 1)"},
      {"a ::= \"x\"", "grammar: no rule named 'root'"},
      {"root ::= root \"a\" | \"b\"",
       "grammar: line 1, column 1: rule 'root' can reach itself without consuming any input (root -> root): "
       "left recursion, or a repetition of something that can be empty"},
      {"root ::= a\na ::= b? \"x\"\nb ::= a \"y\"",
       "grammar: line 2, column 1: rule 'a' can reach itself without consuming any input (a -> b -> a)"},
      {"root ::= ( \"a\"? )*", "grammar: line 1, column 1: rule 'root' can reach itself without consuming any input"},
      {"# comment\n\nroot ::= ::=", "grammar: line 3, column 10: unexpected ':' (a rule ends at the end of its line)"},
      {"root ::= \"a\"\n  | \"b\"", "grammar: line 2, column 3: expected a rule name, found '|'"},
  };
  for (const auto& c : cases) {
    const std::string got = compile_error(c.gbnf);
    EXPECT_EQ(got.rfind(c.message, 0), 0u) << c.gbnf << "\n got: " << got << "\nwant: " << c.message;
  }
}

TEST(Gbnf, Syntax) {
  // Literals and escapes.
  EXPECT_TRUE(matches(R"(root ::= "a\n\t\"\\\x41\u00e9\U0001F600")", "a\n\t\"\\A\xC3\xA9\xF0\x9F\x98\x80"));
  // Classes, ranges, negation, any character.
  EXPECT_TRUE(matches("root ::= [a-c] [^a-c] .", "bx\xE6\x97\xA5"));
  EXPECT_FALSE(matches("root ::= [a-c] [^a-c]", "ba"));
  EXPECT_TRUE(matches(R"(root ::= [\]\-\\]+)", "]-\\"));
  // Alternatives, groups, rule references, comments, newlines inside groups.
  const char* g = R"(# a comment
root ::= greeting " " ( "world" | "there" # trailing comment
  | "you" )
greeting ::= "hello" | "hi"
)";
  EXPECT_TRUE(matches(g, "hello world"));
  EXPECT_TRUE(matches(g, "hi you"));
  EXPECT_FALSE(matches(g, "hi"));
  // Repetitions.
  EXPECT_TRUE(matches(R"(root ::= "a"*)", ""));
  EXPECT_TRUE(matches(R"(root ::= "ab"+)", "ababab"));
  EXPECT_FALSE(matches(R"(root ::= "ab"+)", ""));
  EXPECT_TRUE(matches(R"(root ::= "a"? "b")", "b"));
  for (int n = 0; n <= 6; ++n) {
    const std::string s(size_t(n), 'x');
    EXPECT_EQ(matches(R"(root ::= "x"{3})", s), n == 3) << n;
    EXPECT_EQ(matches(R"(root ::= "x"{2,})", s), n >= 2) << n;
    EXPECT_EQ(matches(R"(root ::= "x"{2,4})", s), n >= 2 && n <= 4) << n;
    EXPECT_EQ(matches(R"(root ::= ("x" | "y"){0,3})", s), n <= 3) << n;
  }
  // A right-recursive rule and an alternative that is empty.
  EXPECT_TRUE(matches("root ::= \"(\" root \")\" | ", "((()))"));
  EXPECT_FALSE(matches("root ::= \"(\" root \")\" | ", "(()"));
}

TEST(Gbnf, CompletenessAndExhaustion) {
  const auto v = byte_vocabulary();
  Matcher m(compile_gbnf(R"(root ::= "ab" "c"?)"), v);
  EXPECT_FALSE(m.complete());
  EXPECT_FALSE(m.accept_bytes("x"));
  EXPECT_TRUE(m.accept_bytes("ab"));
  EXPECT_TRUE(m.complete());
  EXPECT_FALSE(m.exhausted());
  auto words = mask_of(m);
  EXPECT_TRUE(bit(words, 0) && bit(words, 1)) << "end tokens where the root may end";
  EXPECT_TRUE(bit(words, 2 + 'c'));
  EXPECT_FALSE(bit(words, 2 + 'd'));
  EXPECT_TRUE(m.accept(2 + 'c'));
  EXPECT_TRUE(m.exhausted());
  words = mask_of(m);
  size_t set = 0;
  for (const uint32_t w : words) set += size_t(__builtin_popcount(w));
  EXPECT_EQ(set, 2u) << "only the end tokens";
  EXPECT_FALSE(m.accept(2 + 'c'));
  EXPECT_TRUE(m.accept(1));
  EXPECT_TRUE(m.ended());
  EXPECT_FALSE(m.accept(0)) << "nothing after an end token";
  words = mask_of(m);
  for (const uint32_t w : words) EXPECT_EQ(w, 0u);
}

TEST(Gbnf, MaskFillsExactlyTheWordsGiven) {
  const auto v = byte_vocabulary();
  Matcher m(compile_gbnf("root ::= [^a]*"), v);
  // 258 ids: 9 words would be enough; 12 are given, and 3 of them past it stay 0.
  std::vector<uint32_t> words(12, 0xFFFFFFFFu);
  m.allowed_tokens(words);
  EXPECT_EQ(words[8] & ~3u, 0u) << "ids 258.. are past the vocabulary";
  for (size_t w = 9; w < words.size(); ++w) EXPECT_EQ(words[w], 0u);
  // Fewer words than the vocabulary needs: just those.
  std::vector<uint32_t> few(2, 0);
  m.allowed_tokens(few);
  EXPECT_EQ(few[0], 0xFFFFFFFFu);  // both end tokens (complete) and bytes 0..29
  EXPECT_TRUE(m.allows(2 + 'b') && !m.allows(2 + 'a'));
}

// Gemma 3's byte tokens carry one byte of a code point each; classes are over
// code points, so a byte token is allowed where some code point it starts or
// continues can be, and a token that ends inside a code point leaves the
// matcher there.
TEST(Gbnf, PartialUtf8ThroughByteTokens) {
  UNICORN_NEED_GEMMA3();
  const auto byte_token = [&](int b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    return tok.find_token(name);
  };
  // 日 is E6 97 A5; Greek α..ω are CE B1 .. CF 89.
  Matcher greek(compile_gbnf("root ::= [α-ω]+"), vocab);
  auto words = mask_of(greek);
  EXPECT_TRUE(bit(words, byte_token(0xCE)));
  EXPECT_TRUE(bit(words, byte_token(0xCF)));
  EXPECT_FALSE(bit(words, byte_token(0xD0)));
  EXPECT_FALSE(bit(words, byte_token(0xE6)));
  EXPECT_FALSE(bit(words, byte_token('a')));
  ASSERT_TRUE(greek.accept(byte_token(0xCF)));
  words = mask_of(greek);
  EXPECT_TRUE(bit(words, byte_token(0x80)));   // U+03C0 π
  EXPECT_TRUE(bit(words, byte_token(0x89)));   // U+03C9 ω
  EXPECT_FALSE(bit(words, byte_token(0x8A)));  // U+03CA, past ω
  EXPECT_FALSE(greek.complete());
  EXPECT_FALSE(bit(words, tok.eos_id())) << "not complete inside a code point";
  ASSERT_TRUE(greek.accept(byte_token(0x80)));
  EXPECT_TRUE(greek.complete());
  testing::expect_mask_exact(greek, "after π");

  Matcher json(compile_gbnf(gbnf_json_object()), vocab);
  for (const int32_t id : tok.encode("{\"k\": \"")) ASSERT_TRUE(json.accept(id));
  ASSERT_TRUE(json.accept(byte_token(0xE6)));
  words = mask_of(json);
  EXPECT_FALSE(bit(words, tok.find_token("\""))) << "a string cannot end inside a code point";
  EXPECT_FALSE(bit(words, byte_token('a')));
  EXPECT_TRUE(bit(words, byte_token(0x97)));
  EXPECT_FALSE(bit(words, byte_token(0xE6))) << "a lead byte cannot follow a lead byte";
  testing::expect_mask_exact(json, "inside a string, after E6");
  ASSERT_TRUE(json.accept(byte_token(0x97)));
  ASSERT_TRUE(json.accept(byte_token(0xA5)));
  for (const int32_t id : tok.encode("\"}")) ASSERT_TRUE(json.accept(id));
  EXPECT_TRUE(json.complete());
  // Overlong and surrogate encodings are not code points.
  Matcher any(compile_gbnf("root ::= .+"), vocab);
  EXPECT_FALSE(any.allows(byte_token(0xC0)));
  ASSERT_TRUE(any.accept(byte_token(0xED)));
  EXPECT_TRUE(any.allows(byte_token(0x9F)));
  EXPECT_FALSE(any.allows(byte_token(0xA0))) << "ED A0 starts a surrogate";
}

// Special tokens other than the end tokens are never allowed, even by `.`.
TEST(Gbnf, SpecialTokensNeverAllowed) {
  UNICORN_NEED_GEMMA3();
  Matcher m(compile_gbnf("root ::= .*"), vocab);
  const auto words = mask_of(m);
  for (const char* name : {"<bos>", "<start_of_turn>", "<pad>", "<start_of_image>", "<image_soft_token>"})
    EXPECT_FALSE(bit(words, tok.find_token(name))) << name;
  EXPECT_TRUE(bit(words, tok.eos_id()));
  EXPECT_TRUE(bit(words, tok.end_of_turn_id()));
  EXPECT_TRUE(bit(words, tok.find_token("hello")));
  EXPECT_FALSE(m.accept(tok.bos_id()));
}

// The mask is exactly what each token's bytes say, at every step of feeding
// documents to grammars whose cache entries have uncertain tokens (strings,
// numbers, whitespace, nested rules, a whole-stack segment).
TEST(Gbnf, MaskIsExactWithGemma3) {
  UNICORN_NEED_GEMMA3();
  struct Case {
    std::string gbnf, text;
    size_t every;  // check every n-th token (the full check reads 262,145 tokens)
  };
  const std::vector<Case> cases = {
      {gbnf_json_object(), R"({"a": [1, -2.5e3, true, null], "b": {"c": "x\"y\u00e9 日本"}, "d": ""})", 3},
      {"root ::= ( [a-z]+ \" \" )* [0-9]{2,4} \"!\"", "hello there world 1234!", 2},
      {"root ::= \"<\" [^>]* \">\" ( \"\\n\" root )?", "<a b c>\n<d e>", 2},
  };
  for (const auto& c : cases) {
    Matcher m(compile_gbnf(c.gbnf), vocab);
    const auto ids = tok.encode(c.text);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i % c.every == 0) testing::expect_mask_exact(m, c.text + " before token " + std::to_string(i));
      ASSERT_TRUE(m.accept(ids[i])) << c.text << " token " << i;
    }
    testing::expect_mask_exact(m, c.text + " at the end");
    EXPECT_TRUE(m.complete()) << c.text;
  }
}

// With the small tokenizer every step is checked, over random grammars'
// random walks.
TEST(Gbnf, MaskIsExactWithTinyTokenizer) {
  const auto* t = testing::tiny();
  if (!t) GTEST_SKIP() << "UNICORN_TINY_TOKENIZER is not set";
  const char* grammars[] = {
      "root ::= ( \"ab\" | \"a\" [b-c]* | [^ab]{1,3} )+",
      "root ::= \"a\" root \"b\" | \"c\"*",
      "root ::= w ( \" \" w )*\nw ::= [a-z]{1,5}",
  };
  std::mt19937 rng(7);
  for (const char* g : grammars) {
    for (int walk = 0; walk < 5; ++walk) {
      Matcher m(compile_gbnf(g), t->vocabulary);
      for (int step = 0; step < 12; ++step) {
        const auto words = mask_of(m);
        testing::expect_mask_exact(m, std::string(g) + " step " + std::to_string(step));
        std::vector<int32_t> allowed;
        for (size_t id = 0; id < t->vocabulary->size(); ++id)
          if (bit(words, int32_t(id)) && !t->vocabulary->is_end(int32_t(id))) allowed.push_back(int32_t(id));
        if (allowed.empty()) break;
        ASSERT_TRUE(m.accept(allowed[rng() % allowed.size()]));
      }
    }
  }
}

// Grammars are shared between matchers (and threads); each matcher has its
// own state.
TEST(Gbnf, MatchersOfOneGrammarAreIndependent) {
  const auto v = byte_vocabulary({"ab", "abc"});
  const auto g = compile_gbnf("root ::= \"abc\" | \"abd\"");
  Matcher a(g, v), b(g, v);
  ASSERT_TRUE(a.accept_bytes("ab"));
  EXPECT_TRUE(a.allows(2 + 'c'));
  EXPECT_FALSE(b.allows(2 + 'c'));
  EXPECT_TRUE(b.allows(258 + 1));  // "abc"
  EXPECT_FALSE(a.allows(258 + 1));
}

}  // namespace
}  // namespace unicorn::grammar
