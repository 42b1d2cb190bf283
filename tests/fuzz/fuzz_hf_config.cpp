// Fuzz target: a Hugging Face config.json (io/hf_config.hpp) on any bytes,
// through the checks the loader and unicorn-convert make: parsed, checked as
// a supported Gemma 3, turned into ModelDims. Each ends in a value or in
// unicorn::Error.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "fuzz.hpp"
#include "unicorn/io/hf_config.hpp"
#include "unicorn/model/from_hf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto* text = reinterpret_cast<const char*>(data);
  const auto json = nlohmann::json::parse(text, text + size, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  unicorn::fuzz::only_unicorn_errors([&] {
    const auto c = unicorn::io::parse_hf_config_json(json, "fuzz.json");
    unicorn::io::check_gemma3_supported(c, "fuzz.json");
    (void)unicorn::dims_from_hf(c, unicorn::ModelDims{}, "fuzz.json");
  });
  return 0;
}
