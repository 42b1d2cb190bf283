// Fuzz target: the server's request bodies (server/api.hpp, server/ollama_api.hpp),
// as any client may send them: /v1/chat/completions and /v1/completions,
// /tokenize and /detokenize (with the tiny test tokenizer,
// UNICORN_TINY_TOKENIZER), /api/chat, /api/generate and /api/show. A body
// is accepted or refused with an ApiError (a 400); one that is accepted asks
// for sampling the engine takes (EngineCore::set_sampling would refuse
// anything else with a 500) and for a conversation the chat template renders.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fuzz.hpp"
#include "unicorn/server/api.hpp"
#include "unicorn/server/ollama_api.hpp"

namespace {

const unicorn::text::Tokenizer& tiny() {
  static const unicorn::text::Tokenizer tok = [] {
    const char* path = std::getenv("UNICORN_TINY_TOKENIZER");
    if (!path) {
      std::fprintf(stderr, "fuzz_server_request: set UNICORN_TINY_TOKENIZER to tests/server/fixtures/tiny_tokenizer.json\n");
      std::exit(2);
    }
    return unicorn::text::Tokenizer::from_tokenizer_json(path);
  }();
  return tok;
}


template <class F>
void client_error_only(F&& f) {
  try {
    f();
  } catch (const unicorn::server::ApiError& e) {
    FUZZ_CHECK(e.status >= 400 && e.status < 500, "a malformed request is not a 4xx");
  } catch (const unicorn::Error&) {  // the tokenizer refused the text: the server answers 400
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)tiny();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace unicorn::server;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (const auto kind : {CompletionRequest::Kind::Chat, CompletionRequest::Kind::Text})
    client_error_only([&] {
      const CompletionRequest r = parse_completion_request(body, kind);
      FUZZ_CHECK(unicorn::sampling_params_valid(r.sampling),
                 "a request's sampling passed the checks but the engine would refuse it");
      if (kind == CompletionRequest::Kind::Chat) {
        FUZZ_CHECK(!r.messages.empty(), "a chat request without messages passed");
        (void)tiny().encode(unicorn::text::render_chat(r.messages, true));
      } else if (r.prompt_text) {
        (void)tiny().encode(*r.prompt_text, true);
      }
    });
  for (const auto route : {OllamaRequest::Route::Chat, OllamaRequest::Route::Generate})
    client_error_only([&] {
      const OllamaRequest r = parse_ollama_request(body, route, 256);
      const CompletionRequest& c = r.completion;
      FUZZ_CHECK(unicorn::sampling_params_valid(c.sampling),
                 "an Ollama request's sampling passed the checks but the engine would refuse it");
      FUZZ_CHECK(!r.num_ctx || (*r.num_ctx >= 1 && *r.num_ctx <= 256), "num_ctx past the server's context passed");
      if (r.load_only) return;
      if (c.kind == CompletionRequest::Kind::Chat) (void)tiny().encode(unicorn::text::render_chat(c.messages, true));
      else (void)tiny().encode(*c.prompt_text, true);
    });
  client_error_only([&] {
    OllamaModelFacts facts;
    facts.id = "tiny";
    facts.dims = unicorn::kGemma3_270M;
    (void)ollama_show(facts, body);
  });
  client_error_only([&] { (void)tokenize_response(tiny(), body); });
  client_error_only([&] { (void)detokenize_response(tiny(), body); });
  return 0;
}
