// unicorn-perplexity — perplexity and KL divergence over a text, with llama-perplexity's habits.
// UNICORN_DEPLOYMENT_HEADER / UNICORN_DEPLOYMENT name the compiled engine: one
// deployment, or a std::tuple of them from which the file's formats pick one.
//
//   unicorn-perplexity -f text.txt                        the built-in demo model, where compiled in
//   unicorn-perplexity -m model.gguf -f text.txt -c 512 -b 128 [--json]
//   unicorn-perplexity -m f16.gguf -f text.txt --kl-divergence-base base.kld
//   unicorn-perplexity -m q4_0.gguf --kl-divergence-base base.kld --kl-divergence
//
// The text is tokenized with <bos> in front and cut into windows of -c tokens (what
// does not fill a window is dropped; two windows at least). Each window runs from an
// empty KV cache with <bos> in place of its first token, and its second half is scored:
// the logits at positions c/2 .. c-2 predict the next token. PPL = exp(mean NLL), its
// uncertainty PPL * sqrt(var(NLL) / (n - 1)). The unscored half goes through the prefill
// pass with no LM head, the scored half through the pass that keeps every position's
// logits, -b tokens a pass; log-softmax runs on the host over the logits read back.
//
// --kl-divergence-base FILE alone saves the run's windows and each scored position's
// log-probabilities (kld_base.hpp); with --kl-divergence the windows come from FILE and
// each position is compared with the saved one: mean KL divergence, how often both put
// the same token on top, and Δp, the change in the right token's probability.
//
// Exit codes: 0 success; 1 a run-time error (bad file, device, text); 2 bad command line.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unistd.h>

#include UNICORN_DEPLOYMENT_HEADER
#include "kld_base.hpp"
#include "scoring.hpp"
#include "unicorn/engine.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/text/load_tokenizer.hpp"
#include "program_exit.hpp"
#include "tuning_env.hpp"
#include "unicorn/io/file_output.hpp"

namespace {

using namespace unicorn;
using namespace unicorn::perplexity;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

template <class T>
struct DeploymentList {
  using type = std::tuple<T>;
};
template <class... Ds>
struct DeploymentList<std::tuple<Ds...>> {
  using type = std::tuple<Ds...>;
};
using Deployments = DeploymentList<UNICORN_DEPLOYMENT>::type;

struct Options {
  std::string model, text_file, tokenizer, kld_base;
  uint32_t ctx = 0, batch = 0, chunks = 0;  // 0: the default
  bool kld = false, json = false;
};

constexpr uint32_t kDefaultCtx = 512;  // llama-perplexity's

// Redrawn only when the percentage changes, only on a terminal.
void progress_bar(const char* what, uint64_t done, uint64_t total) {
  static int shown = -1;
  const int pct = total ? int(100 * done / total) : 100;
  if (pct == shown || !isatty(2)) return;
  shown = done == total ? -1 : pct;
  const int width = 30, filled = width * pct / 100;
  std::fprintf(stderr, "\r%s [%.*s%*s] %3d%%", what, filled, "==============================", width - filled, "",
               pct);
  if (done == total) std::fputc('\n', stderr);
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot read the text file");
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The model's tokenizer; a GGUF file that carries none (unicorn-convert writes
// none) falls back on the one compiled in with the default model.
text::Tokenizer tokenizer_of(const Options& o) {
  namespace fs = std::filesystem;
  if (o.tokenizer.empty() && !fs::is_directory(o.model)) {
    const auto g = io::GgufFile::open(o.model);
    if (!g.find("tokenizer.ggml.model")) {
#ifdef UNICORN_DEFAULT_TOKENIZER
      return text::load_tokenizer(UNICORN_DEFAULT_TOKENIZER);
#else
      throw Error(o.model + ": the file carries no tokenizer; give --tokenizer tokenizer.json");
#endif
    }
  }
  return text::tokenizer_for(o.model, o.tokenizer);
}

json report_json(const Totals& t) {
  const auto ppl = t.ppl();
  json j = {{"ppl", ppl.value}, {"ppl_uncertainty", ppl.uncertainty}, {"mean_nll", t.mean_nll().value},
            {"scored", t.rows.size()}};
  if (!t.against_base) return j;
  const auto base = t.ppl_base(), ratio = t.log_ppl_ratio(), kld = t.kld(), top = t.same_top(), dp = t.p_diff();
  const auto klds = t.sorted(&RowScore::kld), dps = t.sorted(&RowScore::p_diff);
  json kld_pct, dp_pct;
  for (double f : {0.999, 0.99, 0.95, 0.9, 0.5, 0.1, 0.05, 0.01}) {
    char key[16];
    std::snprintf(key, sizeof key, "%g", 100 * f);
    kld_pct[key] = percentile(klds, f);
  }
  for (double f : {0.999, 0.99, 0.95, 0.9, 0.75, 0.5, 0.25, 0.1, 0.05, 0.01, 0.001}) {
    char key[16];
    std::snprintf(key, sizeof key, "%g", 100 * f);
    dp_pct[key] = percentile(dps, f);
  }
  j["ppl_base"] = base.value;
  j["ppl_base_uncertainty"] = base.uncertainty;
  j["ln_ppl_ratio"] = ratio.value;
  j["ln_ppl_ratio_uncertainty"] = ratio.uncertainty;
  j["kld"] = {{"mean", kld.value}, {"uncertainty", kld.uncertainty}, {"max", klds.back()}, {"min", klds.front()},
              {"percentiles", kld_pct}};
  j["same_top"] = {{"fraction", top.value}, {"uncertainty", top.uncertainty}};
  j["delta_p"] = {{"mean", dp.value}, {"uncertainty", dp.uncertainty}, {"rms", t.rms_p_diff()},
                  {"max", dps.back()}, {"min", dps.front()}, {"percentiles", dp_pct}};
  return j;
}

// printf into `out`.
__attribute__((format(printf, 2, 3))) void appendf(std::string& out, const char* format, ...) {
  char line[256];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  out.append(line, size_t(std::clamp(n, 0, int(sizeof line) - 1)));
}

// The report as llama-perplexity prints it.
std::string report_text(const Totals& t) {
  std::string out;
  const auto ppl = t.ppl();
  appendf(out, "Final estimate: PPL = %.4f +/- %.5f\n", ppl.value, ppl.uncertainty);
  if (!t.against_base) return out;
  const auto base = t.ppl_base(), ratio = t.log_ppl_ratio(), kld = t.kld(), top = t.same_top(), dp = t.p_diff();
  const auto klds = t.sorted(&RowScore::kld), dps = t.sorted(&RowScore::p_diff);
  appendf(out, "\n====== Perplexity statistics ======\n");
  appendf(out, "Mean PPL(Q)                   : %10.6f ± %10.6f\n", ppl.value, ppl.uncertainty);
  appendf(out, "Mean PPL(base)                : %10.6f ± %10.6f\n", base.value, base.uncertainty);
  appendf(out, "Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n", ratio.value, ratio.uncertainty);
  appendf(out, "Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f\n", std::exp(ratio.value),
              std::exp(ratio.value) * ratio.uncertainty);
  appendf(out, "\n====== KL divergence statistics ======\n");
  appendf(out, "Mean    KLD: %12.8f ± %12.8f\n", kld.value, kld.uncertainty);
  appendf(out, "Maximum KLD: %12.8f\n", klds.back());
  for (double f : {0.999, 0.99, 0.95, 0.9}) appendf(out, "%4.1f%%   KLD: %12.8f\n", 100 * f, percentile(klds, f));
  appendf(out, "Median  KLD: %12.8f\n", percentile(klds, 0.5));
  for (double f : {0.1, 0.05, 0.01}) appendf(out, "%4.1f%%   KLD: %12.8f\n", 100 * f, percentile(klds, f));
  appendf(out, "Minimum KLD: %12.8f\n", klds.front());
  appendf(out, "\n====== Token probability statistics ======\n");
  appendf(out, "Mean    Δp: %6.3f ± %5.3f %%\n", 100 * dp.value, 100 * dp.uncertainty);
  appendf(out, "Maximum Δp: %6.3f%%\n", 100 * dps.back());
  for (double f : {0.999, 0.99, 0.95, 0.9, 0.75}) appendf(out, "%4.1f%%   Δp: %6.3f%%\n", 100 * f, 100 * percentile(dps, f));
  appendf(out, "Median  Δp: %6.3f%%\n", 100 * percentile(dps, 0.5));
  for (double f : {0.25, 0.1, 0.05, 0.01, 0.001})
    appendf(out, "%4.1f%%   Δp: %6.3f%%\n", 100 * f, 100 * percentile(dps, f));
  appendf(out, "Minimum Δp: %6.3f%%\n", 100 * dps.front());
  appendf(out, "RMS Δp    : %6.3f %%\n", 100 * t.rms_p_diff());
  appendf(out, "Same top p: %6.3f ± %5.3f %%\n", 100 * top.value, 100 * top.uncertainty);
  return out;
}

// Compiled once for every deployment of the binary (AnyEngine).
int run(const CompiledDeployment& d, const Options& o) {
  const uint32_t max_batch = std::min(d.config.prefill_chunk, d.layout.logit_rows);
  const uint32_t vocab = d.config.model.vocab;

  auto check_ctx = [&](uint32_t ctx) {
    if (ctx < 4 || ctx > d.config.max_context)
      throw Error("-c " + std::to_string(ctx) + ": windows must be 4 to " + std::to_string(d.config.max_context) +
                  " tokens (the engine's compiled context)");
  };
  const uint32_t batch = o.batch ? o.batch : max_batch;
  if (batch > max_batch)
    throw Error("-b " + std::to_string(batch) + ": this engine runs at most " + std::to_string(max_batch) +
                " tokens a pass (its compiled prefill chunk and logit rows)");
  // The windows, each first token already <bos>.
  std::optional<KldBase> base;
  std::vector<int32_t> tokens;
  uint32_t ctx = o.ctx ? o.ctx : kDefaultCtx, chunks = 0;
  if (o.kld) {
    base = KldBase::open(o.kld_base);
    const KldHeader& h = base->header();
    if (h.vocab != vocab)
      throw Error(o.kld_base + ": saved for a vocabulary of " + std::to_string(h.vocab) + " tokens; this model has " +
                  std::to_string(vocab));
    if (o.ctx && o.ctx != h.ctx)
      throw Error(o.kld_base + ": saved with -c " + std::to_string(h.ctx) + ", not " + std::to_string(o.ctx));
    check_ctx(ctx = h.ctx);
    chunks = o.chunks ? std::min(o.chunks, h.chunks) : h.chunks;
    tokens.assign(base->tokens().begin(), base->tokens().begin() + size_t(chunks) * ctx);
  } else {
    check_ctx(ctx);
    const auto tok = tokenizer_of(o);
    tokens = tok.encode(read_text(o.text_file), /*add_bos=*/true);
    if (tokens.size() < 2 * size_t(ctx))
      throw Error(o.text_file + ": " + std::to_string(tokens.size()) + " tokens; windows of " + std::to_string(ctx) +
                  " need at least " + std::to_string(2 * ctx) + " (lower -c or give more text)");
    chunks = uint32_t(tokens.size() / ctx);
    if (o.chunks) chunks = std::min(chunks, o.chunks);
    tokens.resize(size_t(chunks) * ctx);
    for (uint32_t c = 0; c < chunks; ++c) tokens[size_t(c) * ctx] = tok.bos_id();
  }

  const auto t0 = Clock::now();
  AnyEngine engine(d, unicorn::tools::engine_options_from_env());
  const auto load = engine.load(o.model, {.progress = [](uint64_t d, uint64_t t) { progress_bar("loading", d, t); }});
  const std::string format(format_name(engine.config().scheme.attention));
  const std::string embedding(format_name(engine.config().scheme.embedding));  // the file's
  std::fprintf(stderr, "loaded %s (%s, %s%s, %.1f MiB) in %.2f s on %s\n", o.model.c_str(), load.format.c_str(),
               format.c_str(), embedding == format ? "" : (", " + embedding + " embedding").c_str(),
               load.bytes / 1048576.0, std::chrono::duration<double>(Clock::now() - t0).count(),
               engine.context().info().name.c_str());
  const uint32_t first = ctx / 2, scored = scored_per_window(ctx);
  std::fprintf(stderr, "perplexity: %u windows of %u tokens, %u scored each, %u tokens a pass\n", chunks, ctx, scored,
               batch);

  std::optional<KldBaseWriter> writer;
  if (!o.kld_base.empty() && !o.kld)
    writer.emplace(o.kld_base, KldHeader{vocab, ctx, chunks, scored}, std::span(tokens));
  Totals totals;
  totals.against_base = o.kld;
  totals.rows.resize(size_t(chunks) * scored);
  std::vector<double> chunk_ppl;
  std::vector<uint16_t> saved(writer ? size_t(batch) * vocab : 0);
  std::vector<SavedRow> saved_rows(batch);
  const auto start = Clock::now();
  for (uint32_t c = 0; c < chunks; ++c) {
    const std::span<const int32_t> window(tokens.data() + size_t(c) * ctx, ctx);
    engine.reset();
    for (uint32_t at = 0; at < first; at += batch)
      engine.feed(window.subspan(at, std::min(batch, first - at)));
    for (uint32_t at = first; at < ctx - 1; at += batch) {
      const uint32_t n = std::min(batch, ctx - 1 - at);
      const auto logits = engine.forward_logits(window.subspan(at, n));
      RowScore* rows = totals.rows.data() + size_t(c) * scored + (at - first);
      for_rows(n, [&](uint32_t i) {
        const std::span<const float> row(logits.data() + size_t(i) * vocab, vocab);
        const int32_t target = window[at + i + 1];
        if (base) rows[i] = compare_row(row, target, base->row(c, at - first + i));
        else rows[i] = score_row(row, target, writer ? std::span(saved).subspan(size_t(i) * vocab, vocab)
                                                     : std::span<uint16_t>{}, &saved_rows[i]);
      });
      if (writer)
        for (uint32_t i = 0; i < n; ++i)
          writer->add_row(saved_rows[i].floor, saved_rows[i].next_log_prob,
                          std::span(saved).subspan(size_t(i) * vocab, vocab));
      progress_bar("perplexity", uint64_t(c) * ctx + at + n + 1, uint64_t(chunks) * ctx);
    }
    const Totals so_far{{totals.rows.begin(), totals.rows.begin() + size_t(c + 1) * scored}, false};
    chunk_ppl.push_back(so_far.ppl().value);
    if (!o.json && !isatty(2)) {  // llama-perplexity's line of windows so far, where no bar is drawn
      std::string line;
      appendf(line, "[%u]%.4f,%s", c + 1, chunk_ppl.back(), c + 1 == chunks ? "\n" : "");
      io::write_stdout(line);
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (writer) writer->finish();

  if (o.json) {
    json j = report_json(totals);
    j["model"] = o.model;
    j["format"] = format;
    j["embedding_format"] = embedding;
    j["device"] = engine.context().info().name;
    j["ctx"] = ctx;
    j["batch"] = batch;
    j["tokens"] = tokens.size();
    j["chunks"] = chunks;
    j["chunk_ppl"] = chunk_ppl;
    j["seconds"] = seconds;
    j["tokens_per_second"] = double(tokens.size()) / seconds;
    if (writer) j["kl_divergence_base"] = o.kld_base;
    io::write_stdout(j.dump(1) + "\n");
  } else {
    io::write_stdout(report_text(totals));
    std::fprintf(stderr, "%zu tokens in %.2f s (%.1f tokens/s)%s%s\n", tokens.size(), seconds,
                 double(tokens.size()) / seconds, writer ? "; log-probabilities saved to " : "",
                 writer ? o.kld_base.c_str() : "");
  }
  return 0;
}

// The first compiled deployment whose formats are the file's (a Hugging Face
// directory is quantized at load time: the first deployment takes it).
template <class... D>
std::vector<CompiledDeployment> compiled_all(std::tuple<D...>*) {
  return {compiled_deployment<D>()...};
}
// Whether an engine of scheme `s` holds an embedding of ggml type `type` (-1: none).
bool takes_embedding_of(const Scheme& s, int64_t type) {
  const FormatInfo* f = type >= 0 ? find_format(uint32_t(type)) : nullptr;
  return f && s.takes_embedding(f->format);
}
int dispatch(const Options& o, const std::optional<io::GgufFile>& g) {
  const auto deployments = compiled_all(static_cast<Deployments*>(nullptr));
  std::vector<std::string> tried;  // each engine's formats, once
  for (const CompiledDeployment& d : deployments) {
    const Scheme& s = d.config.scheme;
    auto type_of = [&](const char* name) {
      const auto* t = g->find_tensor(name);
      return t ? int64_t(t->ggml_type) : -1;
    };
    const bool fits = deployments.size() == 1 || !g ||
                      (takes_embedding_of(s, type_of("token_embd.weight")) &&
                       type_of("blk.0.attn_q.weight") == int64_t(s.attention) &&
                       type_of("blk.0.ffn_up.weight") == int64_t(s.ffn));
    if (fits) return run(d, o);
    const std::string formats = std::string(format_name(s.attention)) +
                                (s.separate_lm_head() ? " with a " + std::string(format_name(s.embedding)) + " embedding" : "");
    if (std::find(tried.begin(), tried.end(), formats) == tried.end()) tried.push_back(formats);
  }
  std::string has;
  for (const std::string& t : tried) has += (has.empty() ? "" : ", ") + t;
  throw Error(o.model + ": no engine of this binary runs its formats (it has: " + has +
              "); unicorn-convert --gguf writes the file in one of them");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{std::string(UNICORN_BINARY_NAME) + ": perplexity and KL divergence over a text (llama-perplexity's)"};
  Options o;
  app.add_option("-m,--model", o.model, "GGUF file or Hugging Face directory (default: the built-in demo model, where compiled in)");
  app.add_option("-f,--file", o.text_file, "the text to score");
  app.add_option("-c,--ctx-size", o.ctx, "tokens a window (default 512; with --kl-divergence, the base file's)");
  app.add_option("-b,--batch-size", o.batch, "tokens a GPU pass (default and most: the engine's prefill chunk)")
      ->check(CLI::Range(1u, 1u << 20));
  app.add_option("--chunks", o.chunks, "score at most this many windows")->check(CLI::Range(1u, 1u << 30));
  app.add_option("--kl-divergence-base", o.kld_base,
                 "alone: save this run's log-probabilities to FILE; with --kl-divergence: compare with FILE");
  app.add_flag("--kl-divergence", o.kld, "compare with --kl-divergence-base FILE (its windows replace -f)");
  app.add_option("--tokenizer", o.tokenizer, "tokenizer.json or GGUF to use instead of the model's own");
  app.add_flag("--json", o.json, "the results as JSON on standard output");
  try {
    app.parse(argc, argv);
    if (o.kld && o.kld_base.empty()) throw CLI::ValidationError("--kl-divergence needs --kl-divergence-base FILE");
    if (!o.kld && o.text_file.empty()) throw CLI::ValidationError("give the text with -f FILE");
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return unicorn::tools::exit_for(app, e, UNICORN_BINARY_NAME);  // --help
    std::fprintf(stderr, "%s: %s (see --help)\n", UNICORN_BINARY_NAME, e.what());
    return 2;
  }
  unicorn::tools::remove_temporaries_on_signals(UNICORN_BINARY_NAME);  // --kl-divergence-base's file
  std::signal(SIGPIPE, SIG_IGN);  // a reader that goes away (`| head`) is a write we handle
  try {
    if (o.model.empty()) {
#ifdef UNICORN_DEFAULT_MODEL
      o.model = UNICORN_DEFAULT_MODEL;
      std::fprintf(stderr, "%s: no --model given: the built-in demo model, %s.\n", UNICORN_BINARY_NAME,
                   UNICORN_DEFAULT_MODEL_ABOUT);
#else
      throw Error("--model is required (a GGUF file or a Hugging Face directory)");
#endif
    }
    std::optional<io::GgufFile> g;
    if (!std::filesystem::is_directory(o.model)) g = io::GgufFile::open(o.model);
    if (const int status = dispatch(o, g)) return status;
    return unicorn::tools::finish_stdout(UNICORN_BINARY_NAME);
  } catch (const io::StdoutClosed&) {
    return 0;  // the reader has what it wanted (`| head`)
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", UNICORN_BINARY_NAME, e.what());
    return 1;
  }
}
