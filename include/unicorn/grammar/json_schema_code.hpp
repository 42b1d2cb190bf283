// unicorn/grammar/json_schema_code.hpp — gbnf_from_json_schema's code: one
// GBNF rule per schema node, named after its JSON pointer, equal bodies shared.
// Included by json_schema.hpp where its code is compiled (unicorn/base/linkage.hpp).
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "unicorn/grammar/json_schema.hpp"

namespace unicorn::grammar {

namespace detail {

using Json = nlohmann::ordered_json;

// The rules every JSON grammar may use. ws: see json_schema.hpp.
inline constexpr const char* kJsonWs = R"(ws ::= | " ")";
inline constexpr const char* kJsonString =
    R"(string ::= "\"" [^"\\\x00-\x1F]* ( "\\" string-escape [^"\\\x00-\x1F]* )* "\"")";
// \u escapes name a code point: a surrogate only as a high-low pair (strict
// JSON parsers, nlohmann::json's among them, refuse a lone one).
inline constexpr const char* kJsonStringEscape =
    R"(string-escape ::= ["\\/bfnrt] | "u" ( [0-9a-cA-CeEfF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} | [dD] [89abAB] [0-9a-fA-F]{2} "\\u" [dD] [c-fC-F] [0-9a-fA-F]{2} ))";
inline constexpr const char* kJsonStringChar = R"(string-char ::= [^"\\\x00-\x1F] | "\\" string-escape)";
inline constexpr const char* kJsonNumber =
    R"(number ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?)";
inline constexpr const char* kJsonInteger = R"(integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} ))";
inline constexpr const char* kJsonValue =
    R"(value ::= object | array | string | number | "true" | "false" | "null")";
inline constexpr const char* kJsonObject =
    R"(object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}")";
inline constexpr const char* kJsonArray = R"(array ::= "[" ws ( value ws ( "," ws value ws )* )? "]")";

// A GBNF literal of UTF-8 bytes.
inline std::string gbnf_literal(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7F) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

class SchemaToGbnf {
 public:
  explicit SchemaToGbnf(const Json& doc) : doc_(doc) {}

  std::string convert() {
    const std::string root = visit(doc_, "", "");
    std::string out = "root ::= " + root + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    for (const char* r : {kJsonValue, kJsonObject, kJsonArray, kJsonString, kJsonStringEscape, kJsonStringChar,
                          kJsonNumber, kJsonInteger, kJsonWs}) {
      const std::string rule(r);
      if (used_.count(rule.substr(0, rule.find(' ')))) out += rule + "\n";
    }
    return out;
  }

 private:
  // "json_schema: 'keyword' [detail] at /pointer is not supported"
  [[noreturn]] static void unsupported(const std::string& keyword, const std::string& ptr,
                                       const std::string& detail = "") {
    throw Error("json_schema: '" + keyword + "'" + (detail.empty() ? "" : " " + detail) + " at " +
                (ptr.empty() ? "/" : ptr) + " is not supported");
  }
  [[noreturn]] static void invalid(const std::string& ptr, const std::string& what) {
    throw Error("json_schema: at " + (ptr.empty() ? "/" : ptr) + ": " + what);
  }
  static std::string escape_pointer(const std::string& key) {
    std::string out;
    for (const char c : key) {
      if (c == '~') out += "~0";
      else if (c == '/') out += "~1";
      else out += c;
    }
    return out;
  }

  // A shared rule (value, string, ws, ...), emitted once when used.
  std::string use(const std::string& name) {
    if (!used_.insert(name).second) return name;
    if (name == "value") use("object"), use("array"), use("number");
    if (name == "object" || name == "array") use("value"), use("ws"), use("string");
    if (name == "string" || name == "string-char") use("string-escape");
    return name;
  }

  // A rule for `body` named after `hint`; an equal body is shared, and a body
  // that is one rule's name is that rule.
  std::string rule(const std::string& hint, const std::string& body) {
    if (std::all_of(body.begin(), body.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; }))
      return body;
    if (const auto it = bodies_.find(body); it != bodies_.end()) return it->second;
    std::string name = hint;
    for (int n = 2; taken_.count(name); ++n) name = hint + "-" + std::to_string(n);
    taken_.insert(name);
    rules_.emplace_back(name, body);
    bodies_.emplace(body, name);
    return name;
  }

  static std::string rule_hint(const std::string& hint) {
    std::string out;
    for (const char c : hint) {
      const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (word) out += c;
      else if (!out.empty() && out.back() != '-') out += '-';
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    if (out.empty()) out = "top";
    if (out == "root") out = "r-root";
    if (out.size() > 60) out.resize(60);
    // Names the shared rules use are not hints.
    static const std::set<std::string> kShared = {"value", "object", "array", "string", "string-escape",
                                                  "string-char", "number", "integer", "ws"};
    if (kShared.count(out)) out = "r-" + out;
    return out;
  }

  void check_keywords(const Json& s, const std::string& ptr) const {
    static const std::set<std::string> kKnown = {
        "type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "properties", "required",
        "additionalProperties", "minLength", "maxLength", "format", "minimum", "maximum", "exclusiveMinimum",
        "exclusiveMaximum", "items", "minItems", "maxItems", "uniqueItems",
        // annotations and containers: no effect on what is valid
        "title", "description", "default", "examples", "$comment", "$schema", "$id", "$defs", "definitions",
        "deprecated", "readOnly", "writeOnly"};
    for (const auto& [k, v] : s.items())
      if (!kKnown.count(k)) unsupported(k, ptr);
  }

  std::string visit(const Json& s, const std::string& ptr, const std::string& hint) {
    if (++depth_ > 64) invalid(ptr, "schema nested too deeply");
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    if (s.is_boolean()) {
      if (!s.get<bool>()) invalid(ptr, "the schema false allows no value");
      return use("value");
    }
    if (!s.is_object()) invalid(ptr, "a schema must be an object or a boolean");
    check_keywords(s, ptr);

    if (s.contains("$ref")) {
      static const std::set<std::string> kAnnotations = {"title", "description", "default", "examples", "$comment",
                                                         "$schema", "$id", "$defs", "definitions", "deprecated",
                                                         "readOnly", "writeOnly", "$ref"};
      for (const auto& [k, v] : s.items())
        if (!kAnnotations.count(k)) unsupported(k, ptr, "beside '$ref'");
      return ref(s["$ref"], ptr);
    }
    if (s.contains("const")) return rule(rule_hint(hint), gbnf_literal(s["const"].dump()));
    if (s.contains("enum")) {
      const auto& e = s["enum"];
      if (!e.is_array() || e.empty()) invalid(ptr + "/enum", "enum must be a non-empty array");
      std::string body;
      for (const auto& v : e) body += (body.empty() ? "" : " | ") + gbnf_literal(v.dump());
      return rule(rule_hint(hint), body);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      if (s.contains("type") || s.contains("properties") || s.contains("items"))
        unsupported(key, ptr, "beside 'type', 'properties' or 'items'");
      const auto& list = s[key];
      if (!list.is_array() || list.empty()) invalid(ptr + "/" + key, std::string(key) + " must be a non-empty array");
      std::string body;
      for (size_t i = 0; i < list.size(); ++i)
        body += (i ? " | " : "") + visit(list[i], ptr + "/" + key + "/" + std::to_string(i), hint + "-" + std::to_string(i));
      return rule(rule_hint(hint), body);
    }
    if (s.contains("allOf")) {
      const auto& list = s["allOf"];
      if (!list.is_array() || list.size() != 1) unsupported("allOf", ptr, "with more than one schema");
      return visit(list[0], ptr + "/allOf/0", hint);
    }

    std::vector<std::string> types;
    if (s.contains("type")) {
      const auto& t = s["type"];
      if (t.is_string()) types.push_back(t.get<std::string>());
      else if (t.is_array() && !t.empty())
        for (const auto& x : t) {
          if (!x.is_string()) invalid(ptr + "/type", "type names must be strings");
          types.push_back(x.get<std::string>());
        }
      else invalid(ptr + "/type", "type must be a name or a non-empty array of names");
    } else {
      // No type: what the keywords imply, else any value.
      if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties")) types.push_back("object");
      if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) types.push_back("array");
      if (s.contains("minLength") || s.contains("maxLength") || s.contains("format")) types.push_back("string");
      if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum"))
        types.push_back("number");
      if (types.empty()) return use("value");
    }
    std::string body;
    for (const auto& t : types) {
      std::string alt;
      if (t == "string") alt = string_type(s, ptr);
      else if (t == "integer") alt = integer_type(s, ptr);
      else if (t == "number") alt = number_type(s, ptr);
      else if (t == "boolean") alt = "\"true\" | \"false\"";
      else if (t == "null") alt = "\"null\"";
      else if (t == "object") alt = object_type(s, ptr, hint);
      else if (t == "array") alt = array_type(s, ptr, hint);
      else invalid(ptr + "/type", "unknown type '" + t + "'");
      body += (body.empty() ? "" : " | ") + alt;
    }
    return rule(rule_hint(hint), body);
  }

  std::string ref(const Json& r, const std::string& ptr) {
    if (!r.is_string()) invalid(ptr + "/$ref", "$ref must be a string");
    const std::string target = r.get<std::string>();
    if (const auto it = refs_.find(target); it != refs_.end()) return it->second;
    if (target.rfind("#", 0) != 0) unsupported("$ref", ptr, "to '" + target + "' (only '#/...' in the same document)");
    const Json* at = &doc_;
    std::string path = target.substr(1);
    if (!path.empty()) {
      Json::json_pointer jp;
      try {
        jp = Json::json_pointer(path);
      } catch (const Json::exception&) {
        invalid(ptr + "/$ref", "'" + target + "' is not a JSON pointer");
      }
      try {
        at = &doc_.at(jp);
      } catch (const Json::exception&) {
        invalid(ptr + "/$ref", "'" + target + "' points at nothing");
      }
    }
    // Named before the visit, so that a recursive reference finds the name.
    std::string name = rule_hint(target.substr(target.rfind('/') + 1));
    for (int n = 2; taken_.count(name); ++n) name = rule_hint(target.substr(target.rfind('/') + 1)) + "-" + std::to_string(n);
    taken_.insert(name);
    refs_.emplace(target, name);
    const std::string body = visit(*at, path, name + "-body");
    rules_.emplace_back(name, body);
    return name;
  }

  static std::optional<uint64_t> count(const Json& s, const char* key, const std::string& ptr) {
    if (!s.contains(key)) return std::nullopt;
    const auto& v = s[key];
    if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0))
      return v.get<uint64_t>();
    if (v.is_number_float() && v.get<double>() >= 0 && std::floor(v.get<double>()) == v.get<double>() && v.get<double>() < 1e9)
      return uint64_t(v.get<double>());
    invalid(ptr + "/" + key, std::string(key) + " must be a non-negative integer");
  }

  std::string string_type(const Json& s, const std::string& ptr) {
    if (s.contains("format")) {
      if (s.contains("minLength") || s.contains("maxLength"))
        unsupported(s.contains("minLength") ? "minLength" : "maxLength", ptr, "beside 'format'");
      const auto& f = s["format"];
      if (!f.is_string()) invalid(ptr + "/format", "format must be a string");
      const std::string date = R"("\"" [0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ))";
      const std::string time =
          R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" ( [0-5] [0-9] | "60" ) ( "." [0-9]{1,9} )? ( [zZ] | [-+] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ) "\"")";
      const std::string name = f.get<std::string>();
      if (name == "date") return date + " \"\\\"\"";
      if (name == "time") return "\"\\\"\" " + time;
      if (name == "date-time") return date + " [tT] " + time;
      if (name == "uuid")
        return R"("\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"")";
      unsupported("format", ptr, "'" + name + "' (date, time, date-time, uuid are)");
    }
    const auto min = count(s, "minLength", ptr), max = count(s, "maxLength", ptr);
    if (!min && !max) return use("string");
    const uint64_t lo = min.value_or(0);
    if (max && *max < lo) invalid(ptr, "maxLength is below minLength");
    if (lo > 10000 || max.value_or(0) > 10000) unsupported(lo > 10000 ? "minLength" : "maxLength", ptr, "above 10000");
    use("string-char");
    return "\"\\\"\" string-char{" + std::to_string(lo) + "," + (max ? std::to_string(*max) : "") + "} \"\\\"\"";
  }

  // An integer bound: a JSON number with an integral value that fits int64.
  static std::optional<int64_t> int_bound(const Json& s, const char* key, const std::string& ptr, bool up) {
    if (!s.contains(key)) return std::nullopt;
    const auto& v = s[key];
    if (v.is_boolean()) unsupported(key, ptr, "as a boolean (draft 4)");
    if (!v.is_number()) invalid(ptr + "/" + key, std::string(key) + " must be a number");
    if (v.is_number_unsigned()) {
      if (v.get<uint64_t>() > uint64_t(INT64_MAX)) unsupported(key, ptr, "beyond 64-bit integers");
      return int64_t(v.get<uint64_t>());
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    const double d = up ? std::ceil(v.get<double>()) : std::floor(v.get<double>());
    if (!(std::fabs(d) < 9e18)) unsupported(key, ptr, "beyond 64-bit integers");
    return int64_t(d);
  }

  std::string integer_type(const Json& s, const std::string& ptr) {
    std::optional<int64_t> lo = int_bound(s, "minimum", ptr, true), hi = int_bound(s, "maximum", ptr, false);
    if (const auto x = int_bound(s, "exclusiveMinimum", ptr, false)) {
      if (*x == INT64_MAX) invalid(ptr, "no integer is above exclusiveMinimum");
      lo = std::max(lo.value_or(INT64_MIN), *x + 1);
    }
    if (const auto x = int_bound(s, "exclusiveMaximum", ptr, true)) {
      if (*x == INT64_MIN) invalid(ptr, "no integer is below exclusiveMaximum");
      hi = std::min(hi.value_or(INT64_MAX), *x - 1);
    }
    if (!lo && !hi) return use("integer");
    if (lo && hi && *lo > *hi) invalid(ptr, "no integer lies within the bounds");
    std::vector<std::string> alts;
    // Negative part: "-" and a magnitude in [max(1, -hi), -lo].
    if (!lo || *lo < 0) {
      const uint64_t mag_lo = hi && *hi < 0 ? uint64_t(-(*hi + 1)) + 1 : 1;
      const std::optional<uint64_t> mag_hi = lo ? std::optional<uint64_t>(uint64_t(-(*lo + 1)) + 1) : std::nullopt;
      alts.push_back("\"-\" ( " + natural_range(mag_lo, mag_hi) + " )");
    }
    if (!hi || *hi >= 0) {
      const uint64_t nat_lo = lo && *lo > 0 ? uint64_t(*lo) : 0;
      const std::optional<uint64_t> nat_hi = hi ? std::optional<uint64_t>(uint64_t(*hi)) : std::nullopt;
      alts.push_back(natural_range(nat_lo, nat_hi));
    }
    std::string body;
    for (const auto& a : alts) body += (body.empty() ? "( " : " | ( ") + a + " )";
    return body;
  }

  // Decimal numerals without leading zeros in [lo, hi] (hi absent: up to 19 digits).
  static std::string natural_range(uint64_t lo, std::optional<uint64_t> hi) {
    const std::string a = std::to_string(lo);
    std::vector<std::string> alts;
    if (!hi) {
      alts.push_back(same_length_range(a, std::string(a.size(), '9')));
      // Every longer numeral at once.
      if (a.size() < 19) alts.push_back("[1-9] [0-9]{" + std::to_string(a.size()) + ",18}");
    } else {
      const std::string b = std::to_string(*hi);
      for (size_t len = a.size(); len <= b.size(); ++len) {
        const std::string low = len == a.size() ? a : "1" + std::string(len - 1, '0');
        const std::string high = len == b.size() ? b : std::string(len, '9');
        alts.push_back(same_length_range(low, high));
      }
    }
    std::string out;
    for (const auto& x : alts) out += (out.empty() ? "" : " | ") + x;
    return out;
  }

  static std::string digit_class(char lo, char hi) {
    if (lo == hi) return std::string("\"") + lo + "\"";
    return std::string("[") + lo + "-" + hi + "]";
  }

  // Numerals of one length between x and y (x <= y), as GBNF alternatives.
  static std::string same_length_range(const std::string& x, const std::string& y) {
    if (x == y) return "\"" + x + "\"";
    size_t i = 0;
    while (x[i] == y[i]) ++i;
    const std::string prefix = i ? "\"" + x.substr(0, i) + "\" " : "";
    const size_t rest = x.size() - i - 1;
    if (rest == 0) return prefix + digit_class(x[i], y[i]);
    const std::string xs = x.substr(i + 1), ys = y.substr(i + 1);
    const bool x_zeros = xs == std::string(rest, '0'), y_nines = ys == std::string(rest, '9');
    std::vector<std::string> alts;
    char from = x[i], to = y[i];
    if (!x_zeros) {
      alts.push_back(prefix + "\"" + std::string(1, x[i]) + "\" ( " + same_length_range(xs, std::string(rest, '9')) + " )");
      ++from;
    }
    if (!y_nines) --to;
    if (from <= to) alts.push_back(prefix + digit_class(from, to) + " [0-9]{" + std::to_string(rest) + "}");
    if (!y_nines)
      alts.push_back(prefix + "\"" + std::string(1, y[i]) + "\" ( " + same_length_range(std::string(rest, '0'), ys) + " )");
    std::string out;
    for (const auto& a : alts) out += (out.empty() ? "" : " | ") + a;
    return out;
  }

  std::string number_type(const Json& s, const std::string& ptr) {
    for (const char* key : {"maximum", "exclusiveMinimum", "exclusiveMaximum"})
      if (s.contains(key))
        unsupported(key, ptr, "for a number (integer bounds are supported; a number takes minimum 0 only)");
    if (s.contains("minimum")) {
      const auto& m = s["minimum"];
      if (!m.is_number() || m.get<double>() != 0.0)
        unsupported("minimum", ptr, "other than 0 for a number (integer bounds are supported)");
      return R"(( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?)";
    }
    return use("number");
  }

  std::string object_type(const Json& s, const std::string& ptr, const std::string& hint) {
    const Json* props = s.contains("properties") ? &s["properties"] : nullptr;
    if (props && !props->is_object()) invalid(ptr + "/properties", "properties must be an object");
    std::set<std::string> required;
    if (s.contains("required")) {
      const auto& r = s["required"];
      if (!r.is_array()) invalid(ptr + "/required", "required must be an array");
      for (const auto& k : r) {
        if (!k.is_string()) invalid(ptr + "/required", "required must name properties");
        if (!props || !props->contains(k.get<std::string>()))
          unsupported("required", ptr, "property '" + k.get<std::string>() + "' that is not in properties");
        required.insert(k.get<std::string>());
      }
    }
    // Extra keys: absent (with properties) or false: none.
    std::optional<std::string> extra_value;
    if (s.contains("additionalProperties")) {
      const auto& ap = s["additionalProperties"];
      if (ap.is_boolean()) {
        if (ap.get<bool>()) extra_value = use("value");
      } else if (ap.is_object()) {
        extra_value = visit(ap, ptr + "/additionalProperties", hint + "-additional");
      } else {
        invalid(ptr + "/additionalProperties", "additionalProperties must be a boolean or a schema");
      }
    } else if (!props) {
      return use("object");
    }
    use("ws");
    struct Member {
      std::string kv;
      bool required;
    };
    std::vector<Member> members;
    std::vector<std::string> keys;
    if (props)
      for (const auto& [key, sub] : props->items()) {
        const std::string value =
            visit(sub, ptr + "/properties/" + escape_pointer(key), hint.empty() ? key : hint + "-" + key);
        members.push_back({gbnf_literal(Json(key).dump()) + " ws \":\" ws " + value + " ws",
                           required.count(key) > 0});
        keys.push_back(key);
      }
    std::string extra;  // one extra member
    if (extra_value) extra = rule(rule_hint(hint + "-extra"), key_not_in(keys) + " ws \":\" ws " + *extra_value + " ws");
    // after(i): the members from i on when one was written before (each
    // starts with a comma); first(i): the same when none was. A run of
    // required members is written inline, anything with a choice is a rule.
    const size_t n = members.size();
    std::vector<bool> all_required(n + 1, true);
    for (size_t i = n; i-- > 0;) all_required[i] = members[i].required && all_required[i + 1];
    std::vector<std::optional<std::string>> after_memo(n + 1), first_memo(n + 1);
    std::function<std::string(size_t)> after, first;
    after = [&](size_t i) -> std::string {
      if (after_memo[i]) return *after_memo[i];
      std::string text;
      if (i == n) {
        text = extra.empty() ? "" : "( \",\" ws " + extra + " )*";
      } else {
        const std::string rest = after(i + 1);
        text = (members[i].required ? "\",\" ws " + members[i].kv : "( \",\" ws " + members[i].kv + " )?") +
               (rest.empty() ? "" : " " + rest);
        if (!(all_required[i] && extra.empty())) text = rule(rule_hint(hint + "-after-" + keys[i]), text);
      }
      return *(after_memo[i] = text);
    };
    first = [&](size_t i) -> std::string {
      if (first_memo[i]) return *first_memo[i];
      std::string text;
      if (i == n) {
        text = extra.empty() ? "" : "( " + extra + " ( \",\" ws " + extra + " )* )?";
      } else {
        const std::string rest = after(i + 1);
        text = members[i].kv + (rest.empty() ? "" : " " + rest);
        if (!members[i].required) {
          const std::string other = first(i + 1);
          text = rule(rule_hint(hint + "-from-" + keys[i]), text + " | " + (other.empty() ? "\"\"" : other));
        }
      }
      return *(first_memo[i] = text);
    };
    const std::string body = first(0);
    return "\"{\" ws " + (body.empty() ? "" : body + " ") + "\"}\"";
  }

  // A JSON string key that is none of `keys` (their plain spelling: a key
  // written with escapes for plain characters is not recognised).
  std::string key_not_in(const std::vector<std::string>& keys) {
    use("string");
    if (keys.empty()) return "string";
    // A trie of the keys' bytes; at each node: end the string (unless a key
    // ends there), take a byte no key continues with (then any rest), or
    // follow a key's byte. Multi-byte characters are followed byte by byte
    // as GBNF literals of code points, so the trie is over code points.
    struct TrieNode {
      std::map<std::string, size_t> next;  // one UTF-8 character -> child
      bool end = false;
    };
    std::vector<TrieNode> trie(1);
    for (const auto& k : keys) {
      size_t at = 0;
      for (size_t i = 0; i < k.size();) {
        const auto c = static_cast<unsigned char>(k[i]);
        const size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        const std::string ch = k.substr(i, len);
        i += len;
        auto it = trie[at].next.find(ch);
        if (it == trie[at].next.end()) {
          trie.push_back({});
          it = trie[at].next.emplace(ch, trie.size() - 1).first;
        }
        at = it->second;
      }
      trie[at].end = true;
    }
    const std::string rest = rule("key-rest", R"([^"\\\x00-\x1F]* ( "\\" string-escape [^"\\\x00-\x1F]* )* "\"")");
    std::vector<std::string> names(trie.size());
    // Children have larger indices: name them first.
    for (size_t i = trie.size(); i-- > 0;) {
      std::string body, excluded;
      if (!trie[i].end) body = "\"\\\"\"";
      for (const auto& [ch, child] : trie[i].next) {
        body += (body.empty() ? "" : " | ") + gbnf_literal(ch) + " " + names[child];
        std::string lit = gbnf_literal(ch);
        excluded += lit.substr(1, lit.size() - 2);
        if (ch == "-" || ch == "]" || ch == "^") excluded.insert(excluded.size() - 1, "\\");
      }
      body += (body.empty() ? "" : " | ") + std::string("[^\"\\\\\\x00-\\x1F") + excluded + "] " + rest;
      body += " | \"\\\\\" string-escape " + rest;
      names[i] = rule("key-not-declared", body);
    }
    return "\"\\\"\" " + names[0];
  }

  std::string array_type(const Json& s, const std::string& ptr, const std::string& hint) {
    if (s.contains("uniqueItems") && s["uniqueItems"] != false) unsupported("uniqueItems", ptr);
    std::string item;
    if (s.contains("items")) {
      const auto& it = s["items"];
      if (it.is_array()) unsupported("items", ptr, "as an array (draft 4 tuples)");
      if (it.is_boolean() && !it.get<bool>()) item.clear();
      else item = visit(it, ptr + "/items", hint + "-item");
    } else {
      item = use("value");
    }
    use("ws");
    const uint64_t min = count(s, "minItems", ptr).value_or(0);
    const std::optional<uint64_t> max = count(s, "maxItems", ptr);
    if (max && *max < min) invalid(ptr, "maxItems is below minItems");
    if (min > 1000 || max.value_or(0) > 1000) unsupported(min > 1000 ? "minItems" : "maxItems", ptr, "above 1000");
    if (item.empty() || (max && *max == 0)) {
      if (min > 0) invalid(ptr, "minItems needs items, but items is false");
      return "\"[\" ws \"]\"";
    }
    const std::string more = "( \",\" ws " + item + " ws ){" + std::to_string(min > 0 ? min - 1 : 0) + "," +
                             (max ? std::to_string(*max - 1) : "") + "}";
    const std::string items = item + " ws " + more;
    return "\"[\" ws " + (min > 0 ? items : "( " + items + " )?") + " \"]\"";
  }

  const Json& doc_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::map<std::string, std::string> bodies_;
  std::set<std::string> taken_{"root", "value", "object", "array", "string", "string-escape", "string-char",
                               "number", "integer", "ws"};
  std::set<std::string> used_;
  std::map<std::string, std::string> refs_;
  int depth_ = 0;
};

}  // namespace detail

UNICORN_DECL std::string gbnf_from_json_schema(const nlohmann::ordered_json& schema) {
  return detail::SchemaToGbnf(schema).convert();
}

UNICORN_DECL std::string gbnf_from_json_schema(const nlohmann::json& schema) {
  return gbnf_from_json_schema(nlohmann::ordered_json::parse(schema.dump()));
}

UNICORN_DECL std::string gbnf_json_object() {
  std::string out = "root ::= object\n";
  for (const char* r : {detail::kJsonValue, detail::kJsonObject, detail::kJsonArray, detail::kJsonString,
                        detail::kJsonStringEscape, detail::kJsonNumber, detail::kJsonWs})
    out += std::string(r) + "\n";
  return out;
}

}  // namespace unicorn::grammar
