// Fuzz target: an Ollama manifest (io/ollama.hpp) on any bytes, and the same
// bytes as an `ollama:` name. The manifest yields the model layer's digest,
// always sha256:<64 hex> (it becomes a path under blobs/), or unicorn::Error;
// a name yields four parts that cannot step out of manifests/, or
// unicorn::Error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz.hpp"
#include "unicorn/io/ollama.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);  // exact size: ASan sees overreads
  unicorn::fuzz::only_unicorn_errors([&] {
    const std::string d = unicorn::io::ollama_model_digest(text, "fuzz.json");
    FUZZ_CHECK(d.size() == 71 && d.starts_with("sha256:") &&
                   d.find_first_not_of("0123456789abcdefABCDEF", 7) == std::string::npos,
               "a digest that is not sha256:<64 hex>");
  });
  unicorn::fuzz::only_unicorn_errors([&] {
    const auto n = unicorn::io::parse_ollama_name(text);
    for (const std::string_view part : {std::string_view(n.host), std::string_view(n.ns), std::string_view(n.model),
                                        std::string_view(n.tag)})
      FUZZ_CHECK(!part.empty() && part != "." && part != ".." && part.find('/') == std::string_view::npos &&
                     part.find('\0') == std::string_view::npos,
                 "a name part that could leave manifests/");
  });
  return 0;
}
