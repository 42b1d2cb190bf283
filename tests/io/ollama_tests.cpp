// io/ollama.hpp: `ollama:` names resolved through a store laid out as Ollama
// lays out its own (manifests/<host>/<namespace>/<model>/<tag> holding the
// manifest JSON, blobs/sha256-<hex> holding each layer), and every way a name
// can fail to resolve reported by name.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "io_test_util.hpp"
#include "ollama_env.hpp"
#include "unicorn/io/ollama.hpp"

namespace {

namespace fs = std::filesystem;
using unicorn::io::ollama_model_blob;
using unicorn::io::parse_ollama_name;
using unicorn::io::test::TempDir;

std::string hex_digest(char c) { return std::string(64, c); }

// A manifest as `ollama pull gemma3` writes one: config, model, template,
// license and params layers.
nlohmann::json manifest(const std::string& model_hex) {
  const auto layer = [](const char* type, const std::string& hex, int size) {
    return nlohmann::json{{"mediaType", type}, {"digest", "sha256:" + hex}, {"size", size}};
  };
  return {{"schemaVersion", 2},
          {"mediaType", "application/vnd.docker.distribution.manifest.v2+json"},
          {"config", layer("application/vnd.docker.container.image.v1+json", hex_digest('c'), 490)},
          {"layers", {layer("application/vnd.ollama.image.model", model_hex, 5),
                      layer("application/vnd.ollama.image.template", hex_digest('d'), 358),
                      layer("application/vnd.ollama.image.license", hex_digest('e'), 8432),
                      layer("application/vnd.ollama.image.params", hex_digest('f'), 77)}}};
}

// A store with gemma3:latest and gemma3:27b (one blob each), me/mine:q4, and
// a model from another registry.
class OllamaStore : public ::testing::Test {
 protected:
  void SetUp() override {
    add("registry.ollama.ai/library/gemma3/latest", hex_digest('1'));
    add("registry.ollama.ai/library/gemma3/27b", hex_digest('2'));
    add("registry.ollama.ai/me/mine/q4", hex_digest('3'));
    add("example.com:5000/team/model/v1", hex_digest('4'));
    fs::create_directories(root() / "manifests/registry.ollama.ai/library/llama3.2");
  }
  void add(const std::string& manifest_path, const std::string& hex, bool with_blob = true) {
    const fs::path p = root() / "manifests" / manifest_path;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << manifest(hex).dump();
    fs::create_directories(root() / "blobs");
    if (with_blob) std::ofstream(root() / "blobs" / ("sha256-" + hex)) << "GGUF";
  }
  fs::path root() const { return tmp_.path() / "models"; }
  fs::path blob(char c) const { return root() / "blobs" / ("sha256-" + hex_digest(c)); }
  std::string error_of(const std::string& name) const {
    try {
      (void)ollama_model_blob(root(), name);
    } catch (const unicorn::Error& e) {
      return e.what();
    }
    ADD_FAILURE() << name << " resolved";
    return {};
  }
  TempDir tmp_;
};

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

TEST_F(OllamaStore, NamesResolveToTheModelBlob) {
  EXPECT_EQ(ollama_model_blob(root(), "ollama:gemma3:27b"), blob('2'));
  EXPECT_EQ(ollama_model_blob(root(), "ollama:gemma3"), blob('1')) << "no tag means latest";
  EXPECT_EQ(ollama_model_blob(root(), "gemma3:latest"), blob('1'));
  EXPECT_EQ(ollama_model_blob(root(), "ollama:library/gemma3:27b"), blob('2'));
  EXPECT_EQ(ollama_model_blob(root(), "ollama:registry.ollama.ai/library/gemma3:27b"), blob('2'));
  EXPECT_EQ(ollama_model_blob(root(), "ollama:me/mine:q4"), blob('3'));
  EXPECT_EQ(ollama_model_blob(root(), "ollama:example.com:5000/team/model:v1"), blob('4'));
}

TEST_F(OllamaStore, MissingPiecesAreNamed) {
  EXPECT_CONTAINS(error_of("ollama:gemma3:4b"), "no tag '4b' of gemma3 (its tags: 27b, latest)");
  EXPECT_CONTAINS(error_of("ollama:gemma2"), "has no model 'gemma2' (it has: gemma3, llama3.2)");
  EXPECT_CONTAINS(error_of("ollama:gemma2"), "`ollama pull gemma2:latest`");
  EXPECT_CONTAINS(error_of("ollama:llama3.2"), "no tag 'latest' of llama3.2 (no tags at all)");
  EXPECT_CONTAINS(error_of("ollama:you/yours:q4"), "no model 'yours' in registry.ollama.ai/you");
  fs::remove(blob('2'));
  EXPECT_CONTAINS(error_of("ollama:gemma3:27b"), "the manifest names blob sha256:" + hex_digest('2'));
  EXPECT_CONTAINS(error_of("ollama:gemma3:27b"), "is missing; `ollama pull gemma3:27b` fetches it again");
  const TempDir empty;
  try {
    (void)ollama_model_blob(empty.path(), "ollama:gemma3");
    ADD_FAILURE() << "an empty folder resolved";
  } catch (const unicorn::Error& e) {
    EXPECT_CONTAINS(e.what(), "no Ollama model store at " + empty.path().string());
    EXPECT_CONTAINS(e.what(), "set OLLAMA_MODELS");
  }
}

TEST_F(OllamaStore, ManifestsWithoutAModelLayerOrMalformed) {
  const fs::path m = root() / "manifests/registry.ollama.ai/library/gemma3/latest";
  const std::string where = m.string() + ": ";
  auto manifest_with = [&](const std::string& text) {
    std::ofstream(m, std::ios::trunc) << text;
    return error_of("ollama:gemma3");
  };
  nlohmann::json j = manifest(hex_digest('1'));
  j["layers"].erase(0);
  EXPECT_CONTAINS(manifest_with(j.dump()), where + "no layer of type application/vnd.ollama.image.model (its layers: "
                                           "application/vnd.ollama.image.template, application/vnd.ollama.image.license, "
                                           "application/vnd.ollama.image.params)");
  EXPECT_CONTAINS(manifest_with(""), where + "not valid JSON");
  EXPECT_CONTAINS(manifest_with("{\"layers\": [ {\"mediaType\": "), where + "not valid JSON");
  EXPECT_CONTAINS(manifest_with("[1, 2]"), where + "an Ollama manifest is a JSON object, this is array");
  EXPECT_CONTAINS(manifest_with("{}"), where + "the manifest has no \"layers\" list");
  EXPECT_CONTAINS(manifest_with("{\"layers\": {}}"), where + "the manifest has no \"layers\" list");
  EXPECT_CONTAINS(manifest_with("{\"layers\": [7]}"), where + "a layer is not a JSON object");
  EXPECT_CONTAINS(manifest_with("{\"layers\": [{\"digest\": 1}]}"), where + "a layer has no \"mediaType\" string");
  EXPECT_CONTAINS(manifest_with("{\"layers\": []}"), where + "no layer of type application/vnd.ollama.image.model (the manifest lists no layers)");
  const std::string model = "{\"mediaType\": \"application/vnd.ollama.image.model\"";
  EXPECT_CONTAINS(manifest_with("{\"layers\": [" + model + "}]}"), where + "the model layer has no \"digest\" string");
  // A digest that would step out of blobs/ is not a digest.
  EXPECT_CONTAINS(manifest_with("{\"layers\": [" + model + ", \"digest\": \"sha256:../../../etc/passwd\"}]}"),
                  "is not sha256:<64 hex digits>");
  EXPECT_CONTAINS(manifest_with("{\"layers\": [" + model + ", \"digest\": \"md5:" + hex_digest('1') + "\"}]}"),
                  "is not sha256:<64 hex digits>");
}

TEST(OllamaName, PartsDefaultsAndRefusals) {
  const auto n = parse_ollama_name("ollama:gemma3");
  EXPECT_EQ(n.host, "registry.ollama.ai");
  EXPECT_EQ(n.ns, "library");
  EXPECT_EQ(n.model, "gemma3");
  EXPECT_EQ(n.tag, "latest");
  EXPECT_EQ(n.text(), "gemma3:latest");
  EXPECT_EQ(parse_ollama_name("ollama:me/m:q4_K_M").text(), "me/m:q4_K_M");
  EXPECT_EQ(parse_ollama_name("ollama:h.io:443/ns/m:1.0").text(), "h.io:443/ns/m:1.0");
  for (const char* bad : {"ollama:", "ollama::27b", "ollama:../gemma3", "ollama:gemma3:..", "ollama:a/b/c/d",
                          "ollama:ns./m", "ollama:gemma3@sha256:00", "ollama:-x", "ollama:gem ma"})
    EXPECT_THROW((void)parse_ollama_name(bad), unicorn::Error) << bad;
}

TEST(OllamaStoreRoot, FromOllamaModelsElseHome) {
  const auto saved_models = std::getenv("OLLAMA_MODELS") ? std::string(std::getenv("OLLAMA_MODELS")) : std::string();
  const auto saved_home = std::getenv("HOME") ? std::string(std::getenv("HOME")) : std::string();
  ::setenv("OLLAMA_MODELS", " '/srv/ollama' ", 1);
  EXPECT_EQ(unicorn::tools::ollama_store_root(), fs::path("/srv/ollama"));
  ::unsetenv("OLLAMA_MODELS");
  ::setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(unicorn::tools::ollama_store_root(), fs::path("/home/someone/.ollama/models"));
  ::unsetenv("HOME");
  EXPECT_THROW((void)unicorn::tools::ollama_store_root(), unicorn::Error);
  if (!saved_home.empty()) ::setenv("HOME", saved_home.c_str(), 1);
  if (!saved_models.empty()) ::setenv("OLLAMA_MODELS", saved_models.c_str(), 1);
  // Other --model values pass through untouched.
  EXPECT_EQ(unicorn::tools::resolve_model_path("models/gemma3-demo.gguf"), "models/gemma3-demo.gguf");
}

}  // namespace
