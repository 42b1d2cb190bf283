// unicorn/grammar/json_schema.hpp — JSON Schema to GBNF, for the server's
// response_format: {"type": "json_schema"} and {"type": "json_object"}.
//
// The subset (OpenAI's strict structured outputs and a little more; the
// reference with every keyword is docs/structured_output.md):
//   type (a name or an array of names), enum, const, anyOf, oneOf (as anyOf:
//   exclusivity is not enforced), allOf with one schema, $ref to any "#/..."
//   pointer of the document (#/$defs/x, #/definitions/x; recursion allowed);
//   object: properties (written in the schema's order; required ones always,
//   the others may be left out), required, additionalProperties (false, or
//   absent where properties are given: no other keys; true or a schema: more
//   keys after the declared ones, none of them a declared key; an object
//   schema without properties and additionalProperties is any object);
//   string: minLength, maxLength, format date, time, date-time, uuid;
//   integer: minimum, maximum, exclusiveMinimum, exclusiveMaximum (exact);
//   number: minimum 0 (no sign); array: items, minItems, maxItems,
//   uniqueItems false. Annotations are ignored (title, description, default,
//   examples, $comment, $schema, $id, deprecated, readOnly, writeOnly).
// Anything else throws unicorn::Error naming the keyword and where it is:
//   json_schema: 'pattern' at /properties/a is not supported
//
// Output shape: the JSON a model writes is checked byte by byte, so the
// grammar fixes what JSON leaves free. Whitespace: `ws` is nothing or one
// space between two tokens of JSON (none before or after the document), as
// Outlines does by default: every whitespace token is a decode step, and a
// model given room for indentation fills it (the demo model spent half of
// each answer on newlines and tabs); indenting is the client's to do. Numbers have at most 16 integer digits, 16 fraction
// digits and 2 exponent digits (so every number a model writes fits a double:
// nlohmann::json refuses 1e400). Strings are any JSON string (escapes
// included, no raw control characters, \u surrogates only in pairs). enum and
// const values are written compactly, as nlohmann::json dumps them.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "unicorn/base/error.hpp"
#include "unicorn/base/linkage.hpp"

namespace unicorn::grammar {

// The GBNF of a schema (a JSON document: an object, or true). Throws
// unicorn::Error naming an unsupported keyword and its JSON pointer.
// Properties are written in the order the schema lists them, so parse the
// schema as nlohmann::ordered_json: nlohmann::json sorts an object's keys, and
// the second overload then writes them in that sorted order.
std::string gbnf_from_json_schema(const nlohmann::ordered_json& schema);
std::string gbnf_from_json_schema(const nlohmann::json& schema);

// OpenAI's json_object mode: any JSON object.
std::string gbnf_json_object();

}  // namespace unicorn::grammar

#if UNICORN_DEFINE_HERE
#include "unicorn/grammar/json_schema_code.hpp"
#endif  // UNICORN_DEFINE_HERE
