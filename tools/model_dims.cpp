// unicorn-hf-dims — print the engine dimensions of a Hugging Face config.json,
// for unicorn_add_engine (cmake/UnicornEngine.cmake), which builds this file at
// configure time and runs it instead of reading the JSON itself.
//
//   unicorn-hf-dims path/to/config.json
//
// prints one `field=value` line per ModelDims field but the name, in the
// field order of model/dims.hpp: unsigned integers in decimal, floats as a C++
// expression of the same float, e.g. `rms_eps=float(1e-06)`. The values are
// the loader's own (io/hf_config.hpp, then dims_from_hf()), so an engine built
// from a config.json accepts the directory it came from. An unreadable or
// unsupported config exits 1 with the reason on stderr.
#include <boost/hana/accessors.hpp>
#include <boost/hana/for_each.hpp>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <type_traits>

#include "unicorn/io/hf_config.hpp"
#include "unicorn/model/from_hf.hpp"

namespace {

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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: unicorn-hf-dims CONFIG_JSON\n";
    return 2;
  }
  try {
    const std::string source = argv[1];
    const unicorn::io::HfTextConfig hf = unicorn::io::parse_hf_config(source);
    unicorn::io::check_gemma3_supported(hf, source);
    const unicorn::ModelDims dims = unicorn::dims_from_hf(hf, unicorn::ModelDims{}, source);
    namespace hana = boost::hana;
    hana::for_each(hana::accessors<unicorn::ModelDims>(), [&](auto pair) {
      const auto value = hana::second(pair)(dims);
      using T = std::remove_cvref_t<decltype(value)>;
      if constexpr (std::is_floating_point_v<T>)
        std::cout << hana::to<char const*>(hana::first(pair)) << '=' << float_expression(value) << '\n';
      else if constexpr (std::is_unsigned_v<T>)
        std::cout << hana::to<char const*>(hana::first(pair)) << '=' << value << '\n';
      // the name is not in config.json: unicorn_add_engine names the model
    });
    std::cout.flush();
    return std::cout ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
