// unicorn/server/serve.hpp — the server's entry point and its options,
// declared apart from the implementation (http.hpp: Boost.Beast, Asio): the
// server program (examples/server/program.cpp) includes only this; the HTTP
// code is compiled once for every server binary of a build
// (unicorn_add_server links examples/server/serve.cpp, built once).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace unicorn::detail {
class EngineCore;
}
namespace unicorn::text {
class Tokenizer;
struct EncodedImages;  // generation/image_prompt.hpp
}

namespace unicorn::server {

// Which decode steps run the same kernels whatever their size
// (EngineCore::BatchPasses::Fixed), so that a request's text does not depend
// on what shares its steps. The others take the fastest kernels for their size
// (BySize): on the H100 a lone stream's step on the fixed kernels costs about
// twice its matrix-vector one (notes/server.md).
enum class BatchInvariance {
  Deterministic,  // steps holding a deterministic job (seeded or greedy): the default
  Always,         // every step
  Off,            // no step
};

// How the decode steps share the GPU with a prefill pass in flight (on the
// device's second queue, EngineCore::begin_prefill). Whatever the choice, a
// running stream waits at most one pass for its next token.
enum class PrefillOverlap {
  // One step runs beside each pass, the next waits for it: the default. The
  // most tokens/s and the shortest time to first token when many prompts
  // arrive at once; a running stream's token may take a pass's time.
  OneStep,
  // Steps go on until the pass is done: the shortest inter-token latency, but
  // the steps slow the pass, so new prompts wait longer, and streams that
  // started early finish early, leaving steps of few streams at the end
  // (4-7 % fewer tokens/s in a burst of 32 prompts, notes/server.md).
  AllSteps,
  Off,  // every step waits for the pass before it
};

// What the tools fill in from their flags.
struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless --host says otherwise
  uint16_t port = 8080;
  std::string api_key;                      // empty: no check; else "Authorization: Bearer <key>"
  uint32_t slots = 0;                       // 0: every compiled stream
  uint32_t queue_limit = 64;                // requests waiting for a slot, then 503
  uint32_t context = 0;                     // tokens per slot; 0: the compiled context
  size_t max_body_bytes = size_t(8) << 20;  // a larger request body gets a 413
  uint32_t max_connections = 512;           // open connections; more are answered 503 and closed
  std::chrono::seconds idle_timeout{60};    // a connection that sends nothing for this long is closed
  std::chrono::seconds shutdown_grace{30};  // after SIGINT/SIGTERM, running completions get this long
  bool log_requests = true;                 // one line per request on stderr
  BatchInvariance batch_invariance = BatchInvariance::Deterministic;  // see scheduler.hpp
  PrefillOverlap prefill_overlap = PrefillOverlap::OneStep;  // see above
  std::string model_id;                     // the name /v1/models lists and requests may give
  // Web pages whose scripts may call the server (CORS): their origins
  // ("https://app.example"), or "*" for any. Empty: no CORS headers, so a
  // browser lets no page of another origin read an answer.
  std::vector<std::string> cors_origins;
  bool webui = true;  // GET / and /index.html: the chat page (chat_page.hpp); false: 404
};

// What serve() runs on, made by the loader it is given from a loaded engine
// (AnyEngine or Engine<D>: `return server::Model(engine);`) and its tokenizer.
struct Model {
  template <class LoadedEngine>
  explicit Model(LoadedEngine& e) : engine(e.core()), tokenizer(e.tokenizer()) {
    if (e.sees_images()) images = e.image_encoder();
    if (auto* d = e.draft()) draft = &d->core();  // loaded with LoadOptions::draft
  }

  detail::EngineCore& engine;
  const text::Tokenizer& tokenizer;
  // The model's image encoder (text::ImageEncoder); empty: it reads text only.
  std::function<text::EncodedImages(std::span<const std::string>)> images;
  // A draft model for speculative rounds of a slot generating alone
  // (Scheduler::set_draft); none: batched steps only.
  detail::EngineCore* draft = nullptr;
};

// Listens on options.host:options.port (printing "listening on
// http://HOST:PORT"; /health answers 503 meanwhile), calls `load`, then serves
// until SIGINT/SIGTERM or a failed engine. Returns the process's exit status:
// 0 after a clean shutdown, 1 when listening, loading or the engine failed.
int serve(const ServerOptions& options, const std::function<Model()>& load);

}  // namespace unicorn::server
