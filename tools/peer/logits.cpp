// unicorn-logits — every position's logits of a fixed token sequence (bos,
// then (37 i + 11) mod V), from the engine unicorn-generate picks for a file:
// one side of the peer check against llama.cpp (tools/peer/peer_logits.sh).
//   unicorn-logits MODEL N OUT     OUT: N x V float32 logits
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "../../examples/official/engines.hpp"
#include "unicorn/engine.hpp"
#include "unicorn/engine/pick.hpp"
#include "unicorn/io/file_output.hpp"

int main(int argc, char** argv) {
  using namespace unicorn;
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL N OUT\n", argv[0]);
    return 2;
  }
  try {
    const int n = std::atoi(argv[2]);
    if (n < 1 || n > 512) throw Error("N: 1 to 512 tokens");
    const auto engines = examples::official::engines(examples::official::Shape::Generator);
    const CompiledDeployment& d = engines[pick_engine(engines, argv[1], "unicorn-logits")];
    EngineOptions options;
    options.context = 512;
    AnyEngine engine(d, options);
    engine.load(argv[1]);
    std::printf("engine %s; as loaded: %s\n", engine_text(d).c_str(), scheme_text(engine.config()).c_str());
    const uint32_t vocab = d.config.model.vocab;
    std::vector<int32_t> ids(n);
    for (int i = 0; i < n; ++i) ids[i] = i == 0 ? 2 : int32_t((uint32_t(i) * 37 + 11) % vocab);
    const std::vector<float> logits = engine.forward_logits(ids);
    io::write_file(argv[3], std::string_view(reinterpret_cast<const char*>(logits.data()), logits.size() * sizeof(float)));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unicorn-logits: %s\n", e.what());
    return 1;
  }
}
