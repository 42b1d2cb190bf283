// unicorn/server/job_for_request.hpp — the jobs a checked completion request
// becomes: its prompt as tokens (the chat template rendered, images laid out
// as soft-token rows), checked against the model served (its id, vocabulary,
// vision encoder and context), its sampling and limits; and each later choice
// (the API's n), led by the first.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "unicorn/engine/core.hpp"
#include "unicorn/generation/image_prompt.hpp"
#include "unicorn/image/decode.hpp"
#include "unicorn/server/job.hpp"
#include "unicorn/server/request.hpp"
#include "unicorn/server/serve.hpp"
#include "unicorn/text/chat_template.hpp"

namespace unicorn::server {

// What a request's job is made for: the model served, under its id, and the
// context its prompt must fit.
struct ServedModel {
  const std::string& id;
  const Model& model;
  uint32_t context;
};

// The job for a checked request: its prompt's tokens (which must fit the
// context), its sampling and its limits; `rng` seeds an unseeded request.
inline std::shared_ptr<Job> make_job(const CompletionRequest& r, const ServedModel& served, std::mt19937_64& rng) {
  if (!r.model.empty() && r.model != served.id)
    throw ApiError{404, "The model '" + r.model + "' does not exist; this server serves '" + served.id + "'",
                   "invalid_request_error", "model", "model_not_found"};
  const auto& tok = served.model.tokenizer;
  auto job = std::make_shared<Job>();
  if (r.kind == CompletionRequest::Kind::Chat) {
    std::vector<std::shared_ptr<const std::string>> files;
    for (const auto& m : r.messages)
      for (const std::string& f : m.images) files.push_back(std::make_shared<const std::string>(f));
    if (!files.empty() && !served.model.images)
      throw bad_request("images: this model has no vision encoder (" + std::to_string(files.size()) + " image" +
                            (files.size() == 1 ? "" : "s") + " sent to a text-only Gemma 3; serve a 4B, 12B or 27B "
                            "model with its --mmproj file)", "messages", "unsupported_content");
    if (files.empty()) {
      job->prompt = tok.encode(text::render_chat(r.messages, true), /*add_bos=*/false);
    } else {
      // Decoded here, on the request's thread, so that a bad file is the
      // client's 400; the scheduler decodes it again when it encodes it.
      for (size_t i = 0; i < files.size(); ++i) {
        try {
          (void)image::decode_image(std::as_bytes(std::span(*files[i])), "image " + std::to_string(i + 1));
        } catch (const Error& e) {
          throw bad_request(std::string("messages: ") + e.what(), "messages", "invalid_image");
        }
      }
      const uint32_t rows = served.model.engine.config().vision.tokens_per_image;
      const text::ImagePrompt laid = text::encode_image_prompt(tok, text::render_chat(r.messages, true), files.size(),
                                                               rows, tok.find_token("<start_of_image>"));
      job->prompt = laid.ids;
      for (size_t i = 0; i < files.size(); ++i) job->images.push_back({laid.image_start[i], files[i]});
    }
  } else if (r.prompt_text) {
    job->prompt = tok.encode(*r.prompt_text, /*add_bos=*/true);
  } else {
    const uint32_t vocab = served.model.engine.config().model.vocab;
    for (size_t i = 0; i < r.prompt_ids.size(); ++i)
      if (uint32_t(r.prompt_ids[i]) >= vocab)
        throw bad_request("prompt[" + std::to_string(i) + "] = " + std::to_string(r.prompt_ids[i]) +
                              " is not a token id (the vocabulary has " + std::to_string(vocab) + ")",
                          "prompt", "invalid_value");
    job->prompt = r.prompt_ids;
  }
  if (job->prompt.size() >= served.context)
    throw bad_request("This model's maximum context length is " + std::to_string(served.context) +
                          " tokens. However, your " + (r.kind == CompletionRequest::Kind::Chat ? "messages" : "prompt") +
                          " resulted in " + std::to_string(job->prompt.size()) + " tokens.",
                      r.kind == CompletionRequest::Kind::Chat ? "messages" : "prompt", "context_length_exceeded");
  job->sampling = r.sampling;
  for (const auto& [id, _] : r.sampling.logit_bias)
    if (uint32_t(id) >= served.model.engine.config().model.vocab)
      throw bad_request("'logit_bias' names token " + std::to_string(id) + "; the vocabulary has " +
                            std::to_string(served.model.engine.config().model.vocab) + " tokens",
                        "logit_bias." + std::to_string(id), "invalid_value");
  if (!r.seeded) job->sampling.seed = uint32_t(rng());
  job->max_tokens = r.max_tokens.value_or(UINT32_MAX);
  job->stop = r.stop;
  job->cache_prompt = r.cache_prompt;
  job->ignore_eos = r.ignore_eos;
  job->score_prompt = r.echo && r.sampling.logprobs;
  job->grammar = r.grammar;
  job->deterministic = r.seeded || r.sampling.temperature <= 0.0f || r.sampling.top_k == 1;
  return job;
}

// Choice i (> 0) of a request: the first's job with its own random stream
// (a seed of its own, derived from the first's), led by the first.
inline std::shared_ptr<Job> later_choice(const std::shared_ptr<Job>& first, uint32_t i) {
  auto job = std::make_shared<Job>();
  job->prompt = first->prompt;
  job->sampling = first->sampling;
  job->sampling.seed = first->sampling.seed + i * 0x9e3779b9u;
  job->max_tokens = first->max_tokens;
  job->stop = first->stop;
  job->cache_prompt = first->cache_prompt;
  job->ignore_eos = first->ignore_eos;
  job->score_prompt = false;  // the prompt's log-probabilities are the first choice's
  job->deterministic = first->deterministic;
  job->grammar = first->grammar;
  job->leader = first;
  job->arrived = first->arrived;
  return job;
}

}  // namespace unicorn::server
