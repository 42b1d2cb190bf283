// unicorn/generation/chat_session.hpp — a multi-turn conversation on one stream of
// an engine (AnyEngine::chat makes one).
//
// The KV cache is kept across turns: each turn feeds only the new text (the
// close of the previous model turn and the new user turn), never the earlier
// turns again. A cancelled answer (cancel(), from any thread) is closed like a
// finished one, so the conversation goes on; a cancel inside the prompt undoes
// the turn.
#pragma once

#include <atomic>
#include <string>

#include "unicorn/generation/generate.hpp"
#include "unicorn/generation/image_prompt.hpp"
#include "unicorn/text/chat_template.hpp"

namespace unicorn::text {

class ChatSession {
 public:
  // Made by AnyEngine::chat(). The engine and tokenizer outlive the session;
  // one session per stream at a time.
  // With `draft`, answers come speculatively (generate.hpp).
  ChatSession(unicorn::detail::EngineCore& engine, const Tokenizer& tok, std::string system_prompt = "",
              uint32_t stream = 0, ImageEncoder images = {}, unicorn::detail::EngineCore* draft = nullptr)
      : engine_(engine), tok_(tok), system_(std::move(system_prompt)), stream_(stream), encode_(std::move(images)),
        draft_(draft) {
    if (stream >= engine.streams())
      throw Error("chat: stream " + std::to_string(stream) + " asked; this engine has " +
                  std::to_string(engine.streams()));
  }
  ChatSession(const ChatSession&) = delete;
  ChatSession& operator=(const ChatSession&) = delete;

  // Answers `user`, streaming text to `on_text`; returns what the turn did.
  // opt.images (a model that sees images) go where `user` writes
  // <start_of_image>, or all before its text.
  GenerateResult answer(const std::string& user, const GenerateOptions& opt = {}, const TextSink& on_text = {}) {
    std::string said = user;
    if (count_image_markers(user) == 0 && !opt.images.empty()) {
      said.clear();
      for (size_t i = 0; i < opt.images.size(); ++i) said += kImageMarker;
      said += js_trim(user);
    }
    std::string text;
    if (turns_ == 0) {
      std::vector<ChatMessage> msgs;
      if (!system_.empty()) msgs.push_back({"system", system_});
      msgs.push_back({"user", said});
      text = render_chat(msgs, true);
      engine_.reset(stream_);
    } else {
      // Close the previous model turn, then the new user turn, as the template would.
      text = "\n" + render_turn("user", js_trim(said)) + std::string(kModelTurnOpening);
    }
    const uint32_t base = engine_.position(stream_) + uint32_t(turns_ == 0 ? 0 : closing_.size());
    PlacedImages placed = place_images(tok_, text, opt.images, encode_, base);
    std::vector<int32_t> ids = turns_ == 0 ? std::vector<int32_t>{} : closing_;
    ids.insert(ids.end(), placed.ids.begin(), placed.ids.end());
    if (engine_.position(stream_) + ids.size() >= engine_.context_limit())
      throw Error(turns_ == 0 ? "the prompt is " + std::to_string(ids.size()) + " tokens; the context holds " +
                                    std::to_string(engine_.context_limit())
                              : "the conversation no longer fits the context of " +
                                    std::to_string(engine_.context_limit()) + " tokens: start a new one (/reset)");
    cancel_ = false;
    const uint32_t turn_start = engine_.position(stream_);
    GenerateResult r = detail::generate(engine_, tok_, stream_, ids, opt, on_text, &cancel_, placed.images, draft_);
    if (r.pending < 0) {  // cancelled inside the prompt: the turn did not happen
      if (turns_ > 0 && engine_.can_rewind(stream_, turn_start)) engine_.rewind(stream_, turn_start);
      else reset();  // the first turn, or the earlier turns' positions are overwritten: start over
      return r;
    }
    // The last chosen token was not fed: an answer cut at the limit or by a stop
    // string keeps it (it was shown); every answer then ends with <end_of_turn>.
    closing_.clear();
    if (r.stopped_by == StopReason::length_limit || r.stopped_by == StopReason::stop_string)
      closing_.push_back(r.pending);
    closing_.push_back(tok_.end_of_turn_id());
    ++turns_;
    return r;
  }

  // Stops the answer being generated after its current token; safe from any
  // thread. The turn still counts, and the next one follows it.
  void cancel() { cancel_ = true; }

  // Starts a new conversation (same system prompt).
  void reset() {
    turns_ = 0;
    closing_.clear();
    engine_.reset(stream_);
  }
  int turns() const { return turns_; }
  uint32_t stream() const { return stream_; }

 private:
  static std::string_view js_trim(std::string_view s) { return unicorn::text::detail::js_trim(s); }

  unicorn::detail::EngineCore& engine_;
  const Tokenizer& tok_;
  std::string system_;
  uint32_t stream_;
  std::vector<int32_t> closing_;
  int turns_ = 0;
  std::atomic<bool> cancel_{false};
  ImageEncoder encode_;  // empty: the model reads text only
  unicorn::detail::EngineCore* draft_;  // speculative decoding's draft, or none
};

}  // namespace unicorn::text
