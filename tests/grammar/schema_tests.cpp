// JSON Schema to GBNF: refused keywords, valid documents accepted token by
// token, invalid ones refused at the token where they go wrong, and seeded
// random walks over the allowed tokens that always give valid JSON.
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar_test_util.hpp"
#include "sample_schemas.hpp"
#include "unicorn/grammar/json_schema.hpp"

namespace unicorn::grammar {
namespace {

using Json = nlohmann::ordered_json;
using testing::bit;
using testing::mask_of;

std::string schema_error(const std::string& schema) {
  try {
    gbnf_from_json_schema(Json::parse(schema));
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(JsonSchema, RefusesWhatItDoesNotSupport) {
  struct Case {
    const char* schema;
    const char* message;
  };
  const Case cases[] = {
      {R"({"type":"object","properties":{"a":{"type":"object","patternProperties":{"^x":{}}}}})",
       "json_schema: 'patternProperties' at /properties/a is not supported"},
      {R"({"type":"string","pattern":"^a+$"})", "json_schema: 'pattern' at / is not supported"},
      {R"({"not":{"type":"string"}})", "json_schema: 'not' at / is not supported"},
      {R"({"if":{},"then":{}})", "json_schema: 'if' at / is not supported"},
      {R"({"type":"array","items":{"type":"object","properties":{"b":{"type":"string","format":"email"}}}})",
       "json_schema: 'format' 'email' (date, time, date-time, uuid are) at /items/properties/b is not supported"},
      {R"({"allOf":[{"type":"string"},{"maxLength":3}]})", "json_schema: 'allOf' with more than one schema at / is not supported"},
      {R"({"type":"object","minProperties":1})", "json_schema: 'minProperties' at / is not supported"},
      {R"({"type":"array","uniqueItems":true})", "json_schema: 'uniqueItems' at / is not supported"},
      {R"({"type":"array","prefixItems":[{}]})", "json_schema: 'prefixItems' at / is not supported"},
      {R"({"$ref":"https://example.com/s.json"})",
       "json_schema: '$ref' to 'https://example.com/s.json' (only '#/...' in the same document) at / is not supported"},
      {R"({"$ref":"#/$defs/a","type":"string","$defs":{"a":{}}})", "json_schema: 'type' beside '$ref' at / is not supported"},
      {R"({"type":"number","maximum":3})",
       "json_schema: 'maximum' for a number (integer bounds are supported; a number takes minimum 0 only) at / is not supported"},
      {R"({"type":"object","dependentRequired":{}})", "json_schema: 'dependentRequired' at / is not supported"},
      {R"({"type":"object","propertyNames":{}})", "json_schema: 'propertyNames' at / is not supported"},
      {R"({"type":"array","contains":{}})", "json_schema: 'contains' at / is not supported"},
      {R"({"type":"number","multipleOf":2})", "json_schema: 'multipleOf' at / is not supported"},
      {R"({"properties":{"a/b":{"x-custom":1}}})", "json_schema: 'x-custom' at /properties/a~1b is not supported"},
      {R"({"type":"object","properties":{"a":{}},"required":["b"]})",
       "json_schema: 'required' property 'b' that is not in properties at / is not supported"},
      {R"({"type":"integer","minimum":5,"maximum":4})", "json_schema: at /: no integer lies within the bounds"},
      {R"({"type":"strin"})", "json_schema: at /type: unknown type 'strin'"},
      {R"({"$ref":"#/$defs/missing"})", "json_schema: at /$ref: '#/$defs/missing' points at nothing"},
      {"false", "json_schema: at /: the schema false allows no value"},
  };
  for (const auto& c : cases) EXPECT_EQ(schema_error(c.schema), c.message) << c.schema;
}

// A small validator for the subset, independent of the converter.
bool valid(const nlohmann::json& v, const Json& s, const Json& doc, std::string& why, const std::string& at = "");

bool fail(std::string& why, const std::string& at, const std::string& what) {
  why = at + ": " + what;
  return false;
}

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool valid_type(const nlohmann::json& v, const std::string& t, const Json& s, const Json& doc, std::string& why,
                const std::string& at) {
  if (t == "null") return v.is_null() || fail(why, at, "not null");
  if (t == "boolean") return v.is_boolean() || fail(why, at, "not a boolean");
  if (t == "integer" || t == "number") {
    if (!v.is_number()) return fail(why, at, "not a number");
    if (t == "integer" && !v.is_number_integer()) return fail(why, at, "not an integer");
    const double x = v.get<double>();
    if (s.contains("minimum") && x < s["minimum"].get<double>()) return fail(why, at, "below minimum");
    if (s.contains("maximum") && x > s["maximum"].get<double>()) return fail(why, at, "above maximum");
    if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>()) return fail(why, at, "not above exclusiveMinimum");
    if (s.contains("exclusiveMaximum") && x >= s["exclusiveMaximum"].get<double>()) return fail(why, at, "not below exclusiveMaximum");
    return true;
  }
  if (t == "string") {
    if (!v.is_string()) return fail(why, at, "not a string");
    const std::string str = v.get<std::string>();
    if (s.contains("minLength") && code_points(str) < s["minLength"].get<size_t>()) return fail(why, at, "too short");
    if (s.contains("maxLength") && code_points(str) > s["maxLength"].get<size_t>()) return fail(why, at, "too long");
    if (s.contains("format")) {
      static const std::map<std::string, std::regex> kFormats = {
          {"date", std::regex(R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))")},
          {"time", std::regex(R"(([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([zZ]|[-+]([01]\d|2[0-3]):[0-5]\d))")},
          {"date-time", std::regex(R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[tT]([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([zZ]|[-+]([01]\d|2[0-3]):[0-5]\d))")},
          {"uuid", std::regex(R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})")}};
      if (!std::regex_match(str, kFormats.at(s["format"].get<std::string>()))) return fail(why, at, "not the format");
    }
    return true;
  }
  if (t == "array") {
    if (!v.is_array()) return fail(why, at, "not an array");
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return fail(why, at, "too few items");
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return fail(why, at, "too many items");
    for (size_t i = 0; i < v.size(); ++i)
      if (s.contains("items") && !valid(v[i], s["items"], doc, why, at + "/" + std::to_string(i))) return false;
    return true;
  }
  if (t == "object") {
    if (!v.is_object()) return fail(why, at, "not an object");
    const Json props = s.value("properties", Json::object());
    for (const auto& r : s.value("required", Json::array()))
      if (!v.contains(r.get<std::string>())) return fail(why, at, "missing " + r.get<std::string>());
    for (const auto& [k, x] : v.items()) {
      if (props.contains(k)) {
        if (!valid(x, props[k], doc, why, at + "/" + k)) return false;
      } else if (s.contains("additionalProperties")) {
        const auto& ap = s["additionalProperties"];
        if (ap == false) return fail(why, at, "extra property " + k);
        if (ap.is_object() && !valid(x, ap, doc, why, at + "/" + k)) return false;
      } else if (s.contains("properties")) {
        return fail(why, at, "extra property " + k + " (the converter allows none without additionalProperties)");
      }
    }
    return true;
  }
  return fail(why, at, "unknown type " + t);
}

bool valid(const nlohmann::json& v, const Json& s, const Json& doc, std::string& why, const std::string& at) {
  if (s.is_boolean()) return s.get<bool>() || fail(why, at, "schema false");
  if (s.contains("$ref")) return valid(v, doc.at(Json::json_pointer(s["$ref"].get<std::string>().substr(1))), doc, why, at);
  if (s.contains("const")) return v == nlohmann::json::parse(s["const"].dump()) || fail(why, at, "not the const");
  if (s.contains("enum")) {
    for (const auto& e : s["enum"])
      if (v == nlohmann::json::parse(e.dump())) return true;
    return fail(why, at, "not in the enum");
  }
  for (const char* key : {"anyOf", "oneOf"})
    if (s.contains(key)) {
      for (const auto& sub : s[key]) {
        std::string ignored;
        if (valid(v, sub, doc, ignored, at)) return true;
      }
      return fail(why, at, std::string("no ") + key + " branch");
    }
  if (!s.contains("type")) return true;
  if (s["type"].is_string()) return valid_type(v, s["type"].get<std::string>(), s, doc, why, at);
  for (const auto& t : s["type"]) {
    std::string ignored;
    if (valid_type(v, t.get<std::string>(), s, doc, ignored, at)) return true;
  }
  return fail(why, at, "none of the types");
}

// Schemas for the feeding and random-walk tests, with documents each accepts.
struct SchemaCase {
  const char* name;
  Json schema;
  std::vector<std::string> valid_docs;
};

std::vector<SchemaCase> schema_cases() {
  std::vector<SchemaCase> out;
  const Json twenty = samples::twenty_field_schema();
  out.push_back({"twenty fields", twenty,
                 {samples::dump_in_schema_order(samples::twenty_field_document(0), twenty, -1),
                  samples::dump_in_schema_order(samples::twenty_field_document(1), twenty, -1)}});
  out.push_back({"optional properties and extra keys", Json::parse(R"({
      "type": "object",
      "properties": {"a": {"type": "integer", "minimum": -20, "maximum": 1234},
                     "b": {"type": ["string", "null"], "maxLength": 3},
                     "c": {"const": {"x": [1, 2]}}},
      "required": ["b"],
      "additionalProperties": {"type": "boolean"}})"),
                 {R"({"b": null})", R"({"a": -20, "b": "abc", "c": {"x":[1,2]}})", R"({"b": "", "ab": true, "bb": false})",
                  R"({"a": 1234, "b": "x", "a1": true})"}});
  out.push_back({"recursive tree", Json::parse(R"({
      "$ref": "#/definitions/node",
      "definitions": {"node": {"type": "object",
          "properties": {"name": {"type": "string", "minLength": 1}, "kids": {"type": "array", "items": {"$ref": "#/definitions/node"}, "maxItems": 3}},
          "required": ["name", "kids"], "additionalProperties": false}}})"),
                 {R"({"name": "root", "kids": [{"name": "a", "kids": []}, {"name": "b", "kids": [{"name": "c", "kids": []}]}]})"}});
  out.push_back({"top-level array of enums and formats", Json::parse(R"({
      "type": "array", "minItems": 2, "maxItems": 4,
      "items": {"anyOf": [{"enum": ["red", 1, null, [true]]}, {"type": "string", "format": "date"},
                          {"type": "string", "format": "time"}, {"type": "integer", "exclusiveMinimum": 99}]}})"),
                 {R"(["red", 1])", R"([null, [true], "2024-02-29", "23:59:60.5+01:00"])", R"([100,12345])"}});
  out.push_back({"any JSON (empty schema)", Json::object(), {R"([1, {"a": "b"}, "c"])", "true", "-0.5e-7"}});
  return out;
}

// Valid documents: every token allowed by the mask and accepted; the end
// tokens allowed exactly where the document may end; complete at the end.
TEST(JsonSchema, AcceptsValidDocumentsTokenByToken) {
  UNICORN_NEED_GEMMA3();
  for (const auto& c : schema_cases()) {
    const auto g = compile_gbnf(gbnf_from_json_schema(c.schema));
    for (const auto& doc : c.valid_docs) {
      std::string why;
      ASSERT_TRUE(valid(nlohmann::json::parse(doc), c.schema, c.schema, why)) << c.name << ": " << doc << ": " << why;
      Matcher m(g, vocab);
      const auto ids = tok.encode(doc);
      for (size_t i = 0; i < ids.size(); ++i) {
        const auto words = mask_of(m);
        ASSERT_TRUE(bit(words, ids[i])) << c.name << ": token " << i << " '" << tok.token_bytes(ids[i]) << "' of " << doc;
        EXPECT_EQ(bit(words, tok.eos_id()), m.complete()) << c.name << " token " << i;
        EXPECT_EQ(bit(words, tok.end_of_turn_id()), m.complete()) << c.name << " token " << i;
        ASSERT_TRUE(m.accept(ids[i]));
      }
      EXPECT_TRUE(m.complete()) << c.name << ": " << doc;
      EXPECT_TRUE(bit(mask_of(m), tok.eos_id()));
    }
  }
}

// Invalid documents: the first token refused is the one where the text goes
// wrong (its bytes hold the first wrong byte), and the mask agrees.
TEST(JsonSchema, RefusesInvalidDocumentsWhereTheyGoWrong) {
  UNICORN_NEED_GEMMA3();
  struct Case {
    const char* schema;
    const char* doc;
    size_t wrong_at;  // byte offset of the first byte that cannot be
  };
  const char* person = R"({"type":"object","properties":{"name":{"type":"string","maxLength":5},
      "age":{"type":"integer","minimum":0,"maximum":150},"role":{"enum":["admin","user"]},
      "tags":{"type":"array","items":{"type":"string"},"maxItems":2}},
      "required":["name","age"],"additionalProperties":false})";
  const Case cases[] = {
      {person, R"({"name": "Bob"})", 14},                                   // missing required age: '}' refused
      {person, R"({"age": 3})", 2},                                         // properties in schema order: name first
      {person, R"({"name": "Bobby!", "age": 3})", 15},                      // sixth character
      {person, R"({"name": "Bob", "age": 151})", 25},                       // 151 > 150
      {person, R"({"name": "Bob", "age": -1})", 23},                        // minimum 0
      {person, R"({"name": "Bob", "age": 1.5})", 24},                       // integer
      {person, R"({"name": "Bob", "age": 3, "role": "root"})", 35},         // enum
      {person, R"({"name": "Bob", "age": 3, "x": 1})", 27},                 // no other keys
      {person, R"({"name": "Bob", "age": 3, "tags": ["a", "b", "c"]})", 43},  // maxItems 2
      {person, R"({"name": "Bob", "age": 3}  )", 25},                       // nothing after the document
      {R"({"type":"string","format":"date"})", R"("2024-13-01")", 7},
      {R"({"type":"boolean"})", R"(tru)", 3},  // incomplete: refused at the end token
  };
  for (const auto& c : cases) {
    const auto g = compile_gbnf(gbnf_from_json_schema(Json::parse(c.schema)));
    Matcher m(g, vocab);
    std::vector<int32_t> ids = tok.encode(c.doc);
    ids.push_back(tok.eos_id());
    size_t offset = 0;
    bool refused = false;
    for (const int32_t id : ids) {
      const size_t len = id == tok.eos_id() ? 1 : tok.token_bytes(id).size();
      const bool allowed = bit(mask_of(m), id);
      EXPECT_EQ(allowed, m.allows(id)) << c.doc;
      if (!m.accept(id)) {
        EXPECT_FALSE(allowed);
        EXPECT_LE(offset, c.wrong_at) << c.doc << ": refused token '" << tok.token_bytes(id) << "' starts after the error";
        EXPECT_LT(c.wrong_at, offset + len) << c.doc << ": refused token '" << tok.token_bytes(id) << "' ends before the error";
        refused = true;
        break;
      }
      offset += len;
    }
    EXPECT_TRUE(refused) << c.doc;
  }
}

// Seeded random walks: sample only allowed tokens (favouring short ones with
// JSON punctuation, so that walks end), stop at the first end token. The text
// always parses and validates.
TEST(JsonSchema, RandomWalksGiveValidJson) {
  UNICORN_NEED_GEMMA3();
  std::mt19937 rng(20240601);
  std::vector<bool> favoured(vocab->size(), false);  // 2000 times as likely as others
  for (size_t id = 0; id < vocab->size(); ++id) {
    if (!vocab->is_text(int32_t(id))) continue;
    const auto b = vocab->token_bytes(int32_t(id));
    favoured[id] = b.size() <= 2 && b.find_first_of("\"{}[],:0123456789") != std::string::npos;
  }
  int walks = 0;
  for (const auto& c : schema_cases()) {
    const auto g = compile_gbnf(gbnf_from_json_schema(c.schema));
    for (int w = 0; w < 6; ++w, ++walks) {
      Matcher m(g, vocab);
      std::string text;
      bool ended = false;
      for (int step = 0; step < 3000 && !ended; ++step) {
        const auto words = mask_of(m);
        if (m.complete()) {
          ASSERT_TRUE(m.accept(tok.end_of_turn_id()));
          ended = true;
          break;
        }
        // Weights 1 and 2000: pick the group, then a token in it.
        std::vector<int32_t> light, heavy;
        for (size_t i = 0; i < words.size(); ++i)
          for (uint32_t bits = words[i]; bits; bits &= bits - 1) {
            const auto id = int32_t(i * 32 + size_t(__builtin_ctz(bits)));
            (favoured[size_t(id)] ? heavy : light).push_back(id);
          }
        ASSERT_FALSE(light.empty() && heavy.empty()) << c.name << ": nothing allowed after " << text;
        const double p_heavy = 2000.0 * double(heavy.size()) / (2000.0 * double(heavy.size()) + double(light.size()));
        const auto& group = std::uniform_real_distribution<double>(0, 1)(rng) < p_heavy ? heavy : light;
        const int32_t id = group[rng() % group.size()];
        ASSERT_TRUE(m.accept(id));
        text += tok.token_bytes(id);
      }
      ASSERT_TRUE(ended) << c.name << ": walk did not end: " << text;
      nlohmann::json v;
      ASSERT_NO_THROW(v = nlohmann::json::parse(text)) << c.name << ": " << text;
      std::string why;
      EXPECT_TRUE(valid(v, c.schema, c.schema, why)) << c.name << ": " << why << "\n" << text;
    }
  }
  EXPECT_EQ(walks, 30);
}

TEST(JsonSchema, JsonObjectModeIsAnyObject) {
  UNICORN_NEED_GEMMA3();
  const auto g = compile_gbnf(gbnf_json_object());
  for (const char* doc : {R"({})", R"({"a": {"b": [1, 2.5, -3e+2, "x\n\u00e9\ud83d\ude00"]}, "c": null})",
                          "{ \"a\" : true }"}) {
    Matcher m(g, vocab);
    for (const int32_t id : tok.encode(doc)) ASSERT_TRUE(m.accept(id)) << doc;
    EXPECT_TRUE(m.complete()) << doc;
  }
  // (1e400 would overflow a double, which nlohmann::json refuses: at most 2
  // exponent digits; found by fuzz_grammar)
  for (const char* doc : {"[1]", "\"a\"", " {}", "{\"a\" 1}", "{'a': 1}", "{\"a\": 01}", "{\"a\": \"\\ud800\"}",
                          "{\"a\": 1e400}", "{\n  \"a\": true\n}", "{\"a\":  1}"}) {
    Matcher m(g, vocab);
    bool all = true;
    for (const int32_t id : tok.encode(doc)) all = all && m.accept(id);
    EXPECT_FALSE(all && m.complete()) << doc;
  }
  // Whitespace is one space at most: no newline, no second space.
  Matcher m(g, vocab);
  ASSERT_TRUE(m.accept_bytes("{ "));
  EXPECT_FALSE(m.accept_bytes(" "));
  EXPECT_FALSE(m.accept_bytes("\n"));
  EXPECT_TRUE(m.accept_bytes("}"));
}

TEST(JsonSchema, IntegerRangesAreExact) {
  const auto v = testing::byte_vocabulary();
  struct Range {
    const char* schema;
    long lo, hi;
  };
  const Range ranges[] = {
      {R"({"type":"integer","minimum":0,"maximum":150})", 0, 150},
      {R"({"type":"integer","minimum":-20,"maximum":1234})", -20, 1234},
      {R"({"type":"integer","exclusiveMinimum":-105,"exclusiveMaximum":-7})", -104, -8},
      {R"({"type":"integer","minimum":99})", 99, 100000},
      {R"({"type":"integer","maximum":-3})", -100000, -3},
      {R"({"type":"integer","minimum":7.5,"maximum":19.9})", 8, 19},
  };
  for (const auto& r : ranges) {
    const auto g = compile_gbnf(gbnf_from_json_schema(Json::parse(r.schema)));
    for (long x = -1200; x <= 1300; ++x) {
      Matcher m(g, v);
      const bool ok = m.accept_bytes(std::to_string(x)) && m.complete();
      EXPECT_EQ(ok, x >= r.lo && x <= r.hi) << r.schema << " " << x;
    }
    Matcher lead(g, v);
    EXPECT_FALSE(lead.accept_bytes("01") && lead.complete()) << "no leading zeros";
  }
}

}  // namespace
}  // namespace unicorn::grammar
