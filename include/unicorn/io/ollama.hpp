// unicorn/io/ollama.hpp — `ollama:NAME` model references: the GGUF blob that
// Ollama's own store holds for a model it pulled.
//
// Ollama's layout (ollama/ollama at fb30760, manifest/paths.go, manifest.go,
// types/model/name.go, envconfig/config.go), under the store root
// $OLLAMA_MODELS, else ~/.ollama/models:
//   manifests/<host>/<namespace>/<model>/<tag>   JSON: {"schemaVersion": 2,
//       "mediaType": ..., "config": {...}, "layers": [{"mediaType", "digest",
//       "size"}, ...]}
//   blobs/sha256-<64 hex>                         each layer's bytes
// A name is [[host/]namespace/]model[:tag]; the defaults are
// registry.ollama.ai, library and latest, so "gemma3:27b" is
// manifests/registry.ollama.ai/library/gemma3/27b. The layer of media type
// application/vnd.ollama.image.model is the GGUF file.
//
// The store root is a parameter (tests lay out a store of their own); the
// tools find Ollama's own default, $OLLAMA_MODELS else ~/.ollama/models
// (tools/tuning_env.hpp: the library reads no environment).
// Manifests are outside bytes: any content ends in a path or a unicorn::Error
// that names the manifest (tests/fuzz/fuzz_ollama_manifest.cpp).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "unicorn/base/error.hpp"
#include "unicorn/base/linkage.hpp"

namespace unicorn::io {

inline constexpr std::string_view kOllamaPrefix = "ollama:";
inline constexpr std::string_view kOllamaModelMediaType = "application/vnd.ollama.image.model";

// A model name in Ollama's four parts.
struct OllamaName {
  std::string host = "registry.ollama.ai";
  std::string ns = "library";
  std::string model;
  std::string tag = "latest";

  // As `ollama list` shows it: "gemma3:27b", "me/mine:latest", "host/ns/m:t".
  std::string text() const {
    std::string s;
    if (host != "registry.ollama.ai") s = host + "/" + ns + "/";
    else if (ns != "library") s = ns + "/";
    return s + model + ":" + tag;
  }
  std::filesystem::path manifest_dir() const { return std::filesystem::path("manifests") / host / ns / model; }
};

namespace detail {

// Ollama's part rules (types/model/name.go isValidPart): a letter, digit or
// '_' first, then those and '-', '_'; '.' except in a namespace; ':' only in
// a host. They also keep "..", "/" and empty parts out of the paths built here.
bool ollama_part_ok(std::string_view s, bool host, bool ns);

// Names (sorted) of the entries of `dir` that are directories or files, or
// none when it cannot be read.
std::vector<std::string> ollama_entries(const std::filesystem::path& dir, bool directories);

std::string join(const std::vector<std::string>& items);

}  // namespace detail

// Parses "gemma3", "gemma3:27b", "namespace/model:tag" or
// "host/namespace/model:tag" (with or without the "ollama:" prefix).
OllamaName parse_ollama_name(std::string_view text);

// The digest ("sha256:<64 hex>") of the model layer of a manifest's JSON text.
// `where` names the manifest in messages.
std::string ollama_model_digest(std::string_view manifest_json, const std::string& where);

// The model blob of `name` in the store at `root`; every way it can be
// missing is an Error that says which part and what exists instead.
std::filesystem::path ollama_model_blob(const std::filesystem::path& root, std::string_view name);

}  // namespace unicorn::io

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::io::detail {

UNICORN_DECL bool ollama_part_ok(std::string_view s, bool host, bool ns) {
  if (s.empty() || s.size() > (host ? 350u : 80u)) return false;
  const auto word = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  };
  if (!word(s[0])) return false;
  for (const char c : s.substr(1)) {
    if (word(c) || c == '-') continue;
    if (c == '.' && !ns) continue;
    if (c == ':' && host) continue;
    return false;
  }
  return true;
}

UNICORN_DECL std::vector<std::string> ollama_entries(const std::filesystem::path& dir, bool directories) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    const bool is_dir = it->is_directory(type_ec);
    if (!type_ec && is_dir == directories && !it->path().filename().string().starts_with("."))
      names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

UNICORN_DECL std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

}  // namespace unicorn::io::detail

namespace unicorn::io {

UNICORN_DECL OllamaName parse_ollama_name(std::string_view text) {
  const std::string given(text);
  if (text.starts_with(kOllamaPrefix)) text.remove_prefix(kOllamaPrefix.size());
  if (text.find('@') != std::string_view::npos)
    throw Error("ollama: '" + given + "': digest references (@sha256:...) are not supported; name a tag");
  OllamaName n;
  // A ':' after the last '/' starts the tag (a host may hold a port's ':').
  const size_t slash = text.rfind('/');
  const size_t colon = text.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    n.tag = std::string(text.substr(colon + 1));
    text = text.substr(0, colon);
  }
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t end = text.find('/', start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if (parts.size() > 3)
    throw Error("ollama: '" + given + "' has more than three '/'-separated parts ([[host/]namespace/]model[:tag])");
  n.model = parts.back();
  if (parts.size() >= 2) n.ns = parts[parts.size() - 2];
  if (parts.size() == 3) n.host = parts[0];
  const auto check = [&](const std::string& part, const char* what, bool host, bool ns) {
    if (!detail::ollama_part_ok(part, host, ns))
      throw Error("ollama: '" + given + "': " + what + " '" + part +
                  "' is not a valid Ollama name part (letters, digits, '_', '-' and '.'; the first a letter, "
                  "digit or '_')");
  };
  check(n.host, "host", true, false);
  check(n.ns, "namespace", false, true);
  check(n.model, "model", false, false);
  check(n.tag, "tag", false, false);
  return n;
}

UNICORN_DECL std::string ollama_model_digest(std::string_view manifest_json, const std::string& where) {
  const auto m = nlohmann::json::parse(manifest_json.begin(), manifest_json.end(), nullptr, false);
  if (m.is_discarded()) throw Error(where + ": not valid JSON; is this an Ollama manifest?");
  if (!m.is_object()) throw Error(where + ": an Ollama manifest is a JSON object, this is " + m.type_name());
  const auto layers = m.find("layers");
  if (layers == m.end() || !layers->is_array())
    throw Error(where + ": the manifest has no \"layers\" list");
  std::vector<std::string> types;
  for (const auto& layer : *layers) {
    if (!layer.is_object()) throw Error(where + ": a layer is not a JSON object");
    const auto type = layer.find("mediaType");
    if (type == layer.end() || !type->is_string()) throw Error(where + ": a layer has no \"mediaType\" string");
    if (*type != kOllamaModelMediaType) {
      types.push_back(type->get<std::string>());
      continue;
    }
    const auto digest = layer.find("digest");
    if (digest == layer.end() || !digest->is_string())
      throw Error(where + ": the model layer has no \"digest\" string");
    const std::string d = *digest;
    // Ollama accepts only sha256 digests (manifest/paths.go BlobsPath); the
    // hex also keeps the blob path inside the store.
    const bool hex = d.size() == 71 && (d.starts_with("sha256:") || d.starts_with("sha256-")) &&
                     std::all_of(d.begin() + 7, d.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
    if (!hex) throw Error(where + ": the model layer's digest '" + d + "' is not sha256:<64 hex digits>");
    return "sha256:" + d.substr(7);
  }
  throw Error(where + ": no layer of type " + std::string(kOllamaModelMediaType) +
              (types.empty() ? std::string(" (the manifest lists no layers)") : " (its layers: " + detail::join(types) + ")"));
}

UNICORN_DECL std::filesystem::path ollama_model_blob(const std::filesystem::path& root, std::string_view name) {
  namespace fs = std::filesystem;
  const OllamaName n = parse_ollama_name(name);
  const std::string ref = std::string(kOllamaPrefix) + n.text();
  std::error_code ec;
  if (!fs::is_directory(root / "manifests", ec))
    throw Error(ref + ": no Ollama model store at " + root.string() + " (it has no manifests/ folder): " +
                "set OLLAMA_MODELS to the folder `ollama pull` stores models in, or pull one first");
  const fs::path model_dir = root / n.manifest_dir();
  if (!fs::is_directory(model_dir, ec)) {
    const auto models = detail::ollama_entries(root / "manifests" / n.host / n.ns, true);
    throw Error(ref + ": Ollama's store " + root.string() + " has no model '" + n.model + "'" +
                (n.host == "registry.ollama.ai" && n.ns == "library" ? "" : " in " + n.host + "/" + n.ns) +
                (models.empty() ? std::string() : " (it has: " + detail::join(models) + ")") +
                "; `ollama pull " + n.text() + "` fetches it");
  }
  const fs::path manifest = model_dir / n.tag;
  if (!fs::is_regular_file(manifest, ec)) {
    const auto tags = detail::ollama_entries(model_dir, false);
    throw Error(ref + ": Ollama has no tag '" + n.tag + "' of " + n.model +
                (tags.empty() ? std::string(" (no tags at all)") : " (its tags: " + detail::join(tags) + ")"));
  }
  std::ifstream in(manifest, std::ios::binary);
  if (!in) throw Error(manifest.string() + ": cannot read the manifest");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(manifest.string() + ": cannot read the manifest");
  const std::string digest = ollama_model_digest(text.str(), manifest.string());
  const fs::path blob = root / "blobs" / ("sha256-" + digest.substr(7));
  if (!fs::is_regular_file(blob, ec))
    throw Error(ref + ": the manifest names blob " + digest + " but " + blob.string() +
                " is missing; `ollama pull " + n.text() + "` fetches it again");
  return blob;
}

}  // namespace unicorn::io

#endif  // UNICORN_DEFINE_HERE
