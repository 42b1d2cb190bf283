// The schemas and documents the grammar tests and grammar_bench share: a
// 20-field object schema (strings, numbers, enums, formats, a nested object,
// arrays, a $ref), and valid documents for it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace unicorn::grammar::samples {

inline nlohmann::ordered_json twenty_field_schema() {
  return nlohmann::ordered_json::parse(R"({
  "type": "object",
  "properties": {
    "id": {"type": "string", "format": "uuid"},
    "name": {"type": "string", "description": "full name"},
    "email": {"type": "string", "maxLength": 64},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "height_m": {"type": "number"},
    "weight_kg": {"type": "number", "minimum": 0},
    "is_active": {"type": "boolean"},
    "role": {"enum": ["admin", "editor", "viewer", "guest"]},
    "status": {"type": "string", "enum": ["active", "suspended", "deleted"]},
    "created": {"type": "string", "format": "date-time"},
    "birthday": {"type": "string", "format": "date"},
    "score": {"type": "number"},
    "rank": {"type": "integer"},
    "nickname": {"type": ["string", "null"]},
    "bio": {"type": "string"},
    "address": {
      "type": "object",
      "properties": {
        "street": {"type": "string"},
        "city": {"type": "string"},
        "zip": {"type": "string", "minLength": 5, "maxLength": 10},
        "country": {"enum": ["US", "DE", "FR", "JP"]}
      },
      "required": ["street", "city", "zip", "country"],
      "additionalProperties": false
    },
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
    "scores": {"type": "array", "items": {"type": "number"}, "minItems": 1},
    "manager": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/person"}]},
    "notes": {"type": "string"}
  },
  "required": ["id", "name", "email", "age", "height_m", "weight_kg", "is_active", "role", "status", "created",
               "birthday", "score", "rank", "nickname", "bio", "address", "tags", "scores", "manager", "notes"],
  "additionalProperties": false,
  "$defs": {
    "person": {
      "type": "object",
      "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
      "required": ["id", "name"],
      "additionalProperties": false
    }
  }
})");
}

// Valid documents for twenty_field_schema(), different text for each n.
inline nlohmann::json twenty_field_document(int n) {
  static const char* kNames[] = {"Alice Smith", "Bob Müller", "Chloé Dubois", "Daichi Tanaka 田中"};
  static const char* kBios[] = {
      "Software engineer who likes hiking, chess and long walks by the sea. Writes about \"compilers\".",
      "Data scientist; formerly a physicist at CERN.\nEnjoys baking sourdough bread.",
      "Product manager with ten years of experience in logistics, retail and e-commerce 🚚.",
      "Researcher in natural language processing — tokenizers, grammars and constrained decoding."};
  const int i = n % 4;
  nlohmann::json d = nlohmann::json::object();
  d["id"] = "3f2b8c1e-9a4d-4e6f-8b7a-1c2d3e4f5a6" + std::to_string(n % 10);
  d["name"] = kNames[i];
  d["email"] = "user" + std::to_string(n) + "@example.com";
  d["age"] = 20 + n % 60;
  d["height_m"] = 1.5 + 0.25 * (n % 3);
  d["weight_kg"] = 50 + n % 40;
  d["is_active"] = n % 2 == 0;
  d["role"] = std::vector<std::string>{"admin", "editor", "viewer", "guest"}[size_t(i)];
  d["status"] = "active";
  d["created"] = "2024-0" + std::to_string(1 + n % 9) + "-15T10:2" + std::to_string(n % 10) + ":00Z";
  d["birthday"] = "1990-12-0" + std::to_string(1 + n % 9);
  d["score"] = -12.75 + n;
  d["rank"] = -3 + n;
  d["nickname"] = n % 3 == 0 ? nlohmann::json(nullptr) : nlohmann::json("nick" + std::to_string(n));
  d["bio"] = kBios[i];
  d["address"] = {{"street", "12 Rue de la Paix"}, {"city", "Paris"}, {"zip", "7500" + std::to_string(n % 10)},
                  {"country", "FR"}};
  d["tags"] = {"alpha", "beta", "gamma"};
  d["scores"] = {1.5, 2.25, 100};
  // (a nested object under anyOf is written compactly, its keys sorted: the
  // person schema lists them in that order)
  d["manager"] = n % 2 ? nlohmann::json(nullptr) : nlohmann::json({{"id", 7}, {"name", "Eve"}});
  d["notes"] = "Met at the conference in 2023; follow up about the grant proposal.";
  return d;
}

// nlohmann::json sorts keys; the grammar writes properties in the schema's
// order. This writes `d` in the order of the schema's properties (nested
// objects too), indented by `indent` (-1: compact).
inline std::string dump_in_schema_order(const nlohmann::json& d, const nlohmann::ordered_json& schema, int indent,
                                        int level = 0) {
  if (!d.is_object() || !schema.is_object() || !schema.contains("properties")) return d.dump();
  const std::string nl = indent < 0 ? "" : "\n";
  const std::string pad = indent < 0 ? "" : std::string(size_t(indent * (level + 1)), ' ');
  const std::string close_pad = indent < 0 ? "" : std::string(size_t(indent * level), ' ');
  std::string out = "{" + nl;
  bool first = true;
  for (const auto& [key, sub] : schema["properties"].items()) {
    if (!d.contains(key)) continue;
    out += (first ? "" : "," + nl) + pad + nlohmann::json(key).dump() + (indent < 0 ? ":" : ": ") +
           dump_in_schema_order(d[key], sub, indent, level + 1);
    first = false;
  }
  return out + nl + close_pad + "}";
}

}  // namespace unicorn::grammar::samples
