// examples/bench/common.cpp — unicorn-bench's shared pieces (bench.hpp): the
// grammar constraint of --grammar / --json-schema, run statistics, which
// catalog entry runs a file, and the header every table starts with.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "catalog.hpp"
#include "options.hpp"  // examples/generate: --products, as the generator takes it
#include "unicorn/engine.hpp"
#include "unicorn/engine/pick.hpp"
#include "unicorn/grammar/json_schema.hpp"
#include "unicorn/grammar/matcher.hpp"
#include "unicorn/io/file_output.hpp"
#include "unicorn/text/load_tokenizer.hpp"
#include "program_exit.hpp"
#include "unicorn/config/hparams.hpp"
#include "unicorn/gpu/timing.hpp"
#include "unicorn/layout/print.hpp"
#include "ollama_env.hpp"
#include "tuning_env.hpp"
#include "bench.hpp"

namespace unicorn::examples::bench {

std::optional<Constraint> make_constraint(const Options& o) {
  if (o.grammar.empty() && o.json_schema.empty()) return std::nullopt;
  if (o.tokenizer.empty()) throw Error("--grammar and --json-schema need --tokenizer FILE (the model's vocabulary)");
  const auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot be read");
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  Constraint c;
  const std::string gbnf = !o.grammar.empty() ? read(o.grammar) : [&] {
    const nlohmann::json schema = nlohmann::json::parse(read(o.json_schema), nullptr, false);
    if (schema.is_discarded()) throw Error(o.json_schema + ": not JSON");
    return grammar::gbnf_from_json_schema(schema);
  }();
  c.rules = grammar::compile_gbnf(gbnf);
  c.vocabulary = grammar::Vocabulary::from_tokenizer(text::load_tokenizer(o.tokenizer));
  return c;
}

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

// Whether entry `e` runs the file for these options: its placement, streams
// and LM head are the options', and the file fits it (engine/pick.hpp:
// every hyperparameter, and every tensor's type and shape).
bool matches(const Entry& e, const ModelFile& file, const Options& o) {
  const DeploymentConfig& c = e.deployment.config;
  const bool streams_fit = o.batch ? c.streams > 1 : c.streams == 1;
  const bool head_fits = o.lm_head ? c.scheme.separate_lm_head() && c.scheme.lm_head == *o.lm_head
                                   : !c.scheme.separate_lm_head();
  return e.placement == o.placement && streams_fit && head_fits &&
         file.runs_in(e.deployment);
}

std::string fmt_stats(const Stats& s) {
  char b[64];
  std::snprintf(b, sizeof b, "%9.1f ± %-7.1f", s.median, (s.max - s.min) / 2);
  return b;
}

// The lines every table starts with.
void print_header(const nlohmann::json& j) {
  std::printf("device: %s, read bandwidth %.0f GB/s (measured), %u multiprocessors (%s)\n",
              j["device"].get<std::string>().c_str(), j["read_bandwidth_gbps"].get<double>(),
              j["multiprocessors"].get<unsigned>(), j["multiprocessors_from"].get<std::string>().c_str());
  if (j["weight_bytes_gtt"].get<uint64_t>())
    std::printf("placement %s: %.2f GiB of weights in Gtt, read at %.1f GB/s (measured)\n",
                j["placement"].get<std::string>().c_str(),
                j["weight_bytes_gtt"].get<uint64_t>() / 1073741824.0,
                j["gtt_read_bandwidth_gbps"].get<double>());
  std::printf("prefill linear layers: %s\n", j["prefill_linear"].get<std::string>().c_str());
  std::printf("model: %s, %s weights %.2f GiB, loaded in %.2f s (%.2f GB/s; host-to-device copies %.1f GB/s: "
              "%.2f s at best)\n",
              j["model"].get<std::string>().c_str(), j["file"].get<std::string>().c_str(),
              j["weight_bytes"].get<uint64_t>() / 1073741824.0, j["load_seconds"].get<double>(),
              j["load_gbps"].get<double>(), j["upload_bandwidth_gbps"].get<double>(),
              j["load_bound_seconds"].get<double>());
  if (j.value("depth", 0u))
    std::printf("depth %u (KV cache of %u positions): each decode step reads %.1f MiB of it beside the weights\n",
                j["depth"].get<unsigned>(), j["context"].get<unsigned>(),
                j["kv_bytes_per_token"].get<uint64_t>() / 1048576.0);
  const auto& cache = j["startup"]["pipeline_cache"];
  std::printf("start-up: engine %.3f s (pipeline cache %s)\n", j["startup"]["engine_seconds"].get<double>(),
              cache["path"].get<std::string>().empty() ? "off"
              : cache["loaded_bytes"].get<uint64_t>()   ? "read from disk"
                                                        : "empty, written");
}

}  // namespace unicorn::examples::bench
