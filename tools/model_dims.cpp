// unicorn-model-dims — the engine a model file needs, for unicorn_add_engine
// (cmake/UnicornEngine.cmake), which builds this file at configure time and
// runs it instead of reading the file itself.
//
//   unicorn-model-dims path/to/config.json QUANT [KV]   # QUANT: a named scheme (Q4_0_QAT, Q4_K_M, ...)
//   unicorn-model-dims path/to/file.gguf [KV]           # the scheme is the file's own
//
// prints one `field=value` line per ModelDims field but the name, in the
// field order of config/dims.hpp (unsigned integers in decimal, floats as a C++
// expression of the same float, e.g. `rms_eps=float(1e-06)`), then
// `scheme=` a C++ expression of the Scheme and `scheme_name=` its name (empty
// for a mix without one). KV is the KV cache's format, F16 (default) or F32.
// The values are the loader's own (io/hf_config.hpp and dims_from_hf(), or
// model/from_gguf.hpp), so an engine built from a file accepts that file. An
// unreadable or unsupported file exits 1 with the reason on stderr.
#include <boost/hana/accessors.hpp>
#include <boost/hana/for_each.hpp>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <type_traits>

#include "unicorn/io/gguf.hpp"
#include "unicorn/io/hf_config.hpp"
#include "unicorn/model/from_gguf.hpp"
#include "unicorn/model/from_hf.hpp"
#include "unicorn/quant/scheme.hpp"

namespace {

using unicorn::Error;
using unicorn::Format;

// The shortest decimal that gives `v` back, checked through the double the
// compiler will parse it as, else 9 significant digits (always enough).
std::string float_expression(float v) {
  char buf[64];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  std::string s(buf, end);
  if (static_cast<float>(std::strtod(s.c_str(), nullptr)) != v) {
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
    s = buf;
  }
  return "float(" + s + ")";
}

std::string format_expression(Format f) { return "unicorn::Format::" + std::string(unicorn::format_name(f)); }

std::string layers_expression(const unicorn::MoreBitsLayers& m) {
  switch (m.rule) {
    case unicorn::MoreBitsLayers::Rule::UseMoreBits: return "unicorn::more_bits::kUseMoreBits";
    case unicorn::MoreBitsLayers::Rule::First: return "unicorn::more_bits::first(" + std::to_string(m.count) + ")";
    case unicorn::MoreBitsLayers::Rule::FirstPart: return "unicorn::more_bits::first_part(" + std::to_string(m.count) + ")";
    case unicorn::MoreBitsLayers::Rule::AllWhereGqa4: return "unicorn::more_bits::kAllWhereGqa4";
  }
  return "";
}

std::string scheme_expression(const unicorn::Scheme& s) {
  return "unicorn::Scheme{.embedding = " + format_expression(s.embedding) +
         ", .attention = " + format_expression(s.attention) + ", .ffn = " + format_expression(s.ffn) +
         ", .kv_cache = " + format_expression(s.kv_cache) + ", .lm_head = " + format_expression(s.lm_head) +
         ", .attn_v = " + format_expression(s.attn_v) + ", .attn_output = " + format_expression(s.attn_output) +
         ", .ffn_down = " + format_expression(s.ffn_down) +
         ", .attn_v_more_bits = " + format_expression(s.attn_v_more_bits) +
         ", .ffn_down_more_bits = " + format_expression(s.ffn_down_more_bits) +
         ", .attn_v_layers = " + layers_expression(s.attn_v_layers) +
         ", .ffn_down_layers = " + layers_expression(s.ffn_down_layers) + "}";
}

Format kv_format(const std::string& name) {
  if (name == "F16") return Format::F16;
  if (name == "F32") return Format::F32;
  throw Error("KV must be F16 or F32, not '" + name + "'");
}

std::string scheme_names() {
  std::string all;
  for (const auto& n : unicorn::kNamedSchemes) all += (all.empty() ? "" : ", ") + std::string(n.name);
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::cerr << "usage: unicorn-model-dims CONFIG_JSON QUANT [KV] | unicorn-model-dims FILE.gguf [KV]\n";
    return 2;
  }
  try {
    const std::string source = argv[1];
    char magic[4] = {};
    std::ifstream(source, std::ios::binary).read(magic, 4);
    const bool gguf = std::string_view(magic, 4) == "GGUF";
    unicorn::ModelDims dims;
    unicorn::Scheme scheme;
    if (gguf) {
      if (argc > 3) throw Error(source + ": a GGUF file's weights are loaded as they are: its scheme is its own, "
                                "and QUANT is for config.json");
      const Format kv = kv_format(argc == 3 ? argv[2] : "F16");
      const unicorn::io::GgufFile g = unicorn::io::GgufFile::open(source);
      dims = unicorn::dims_from_gguf(g);
      scheme = unicorn::scheme_from_gguf(g, dims, kv);
    } else {
      if (argc < 3) throw Error(source + ": give QUANT, the scheme to store the weights in (" + scheme_names() + ")");
      const unicorn::io::HfTextConfig hf = unicorn::io::parse_hf_config(source);
      unicorn::io::check_gemma3_supported(hf, source);
      dims = unicorn::dims_from_hf(hf, unicorn::ModelDims{}, source);
      const auto named = unicorn::named_scheme(argv[2], kv_format(argc == 4 ? argv[3] : "F16"));
      if (!named) throw Error("QUANT must be one of " + scheme_names() + ", not '" + std::string(argv[2]) + "'");
      scheme = *named;
    }
    namespace hana = boost::hana;
    hana::for_each(hana::accessors<unicorn::ModelDims>(), [&](auto pair) {
      const auto value = hana::second(pair)(dims);
      using T = std::remove_cvref_t<decltype(value)>;
      if constexpr (std::is_floating_point_v<T>)
        std::cout << hana::to<char const*>(hana::first(pair)) << '=' << float_expression(value) << '\n';
      else if constexpr (std::is_unsigned_v<T>)
        std::cout << hana::to<char const*>(hana::first(pair)) << '=' << value << '\n';
      // the name is not in the file: unicorn_add_engine names the model
    });
    std::cout << "scheme=" << scheme_expression(scheme) << '\n';
    std::cout << "scheme_name=" << unicorn::scheme_name(scheme) << '\n';
    std::cout.flush();
    return std::cout ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
