// unicorn/text/chat_session.hpp — a multi-turn conversation on one engine.
//
// The KV cache is kept across turns: each turn feeds only the new text (the
// close of the previous model turn and the new user turn), never the earlier
// turns again. A cancelled answer (Ctrl-C) is closed like a finished one.
#pragma once

#include <atomic>
#include <string>

#include "unicorn/text/chat_template.hpp"
#include "unicorn/text/generate.hpp"

namespace unicorn::text {

class ChatSession {
 public:
  ChatSession(unicorn::detail::EngineCore& engine, const Tokenizer& tok, std::string system_prompt = "")
      : engine_(engine), tok_(tok), system_(std::move(system_prompt)) {}

  // Answers `user`, streaming text to `on_text`; returns what generate() saw.
  GenerateResult answer(const std::string& user, const GenerateOptions& opt,
                        const std::function<void(std::string_view)>& on_text,
                        const std::atomic<bool>* cancel = nullptr) {
    std::vector<int32_t> ids;
    if (turns_ == 0) {
      std::vector<ChatMessage> msgs;
      if (!system_.empty()) msgs.push_back({"system", system_});
      msgs.push_back({"user", user});
      ids = tok_.encode(render_chat(msgs, true));
      engine_.reset();
    } else {
      // Close the previous model turn, then the new user turn, as the template would.
      ids = closing_;
      const auto more = tok_.encode("\n<start_of_turn>user\n" + std::string(detail_trim(user)) +
                                    "<end_of_turn>\n<start_of_turn>model\n");
      ids.insert(ids.end(), more.begin(), more.end());
    }
    if (engine_.position() + ids.size() >= engine_.context_limit())
      throw Error("the conversation no longer fits the context of " +
                  std::to_string(engine_.context_limit()) + " tokens: start a new one (/reset)");
    GenerateResult r = generate(engine_, tok_, ids, opt, on_text, cancel);
    // The last chosen token was not fed: an answer cut at the limit or by a stop
    // string keeps it (it was shown); every answer then ends with <end_of_turn>.
    closing_.clear();
    if (r.stopped_by == "limit" || r.stopped_by == "stop string") closing_.push_back(r.pending);
    closing_.push_back(tok_.end_of_turn_id());
    ++turns_;
    return r;
  }

  void reset() {
    turns_ = 0;
    closing_.clear();
    engine_.reset();
  }
  int turns() const { return turns_; }

 private:
  static std::string_view detail_trim(std::string_view s) { return detail::js_trim(s); }

  unicorn::detail::EngineCore& engine_;
  const Tokenizer& tok_;
  std::string system_;
  std::vector<int32_t> closing_;
  int turns_ = 0;
};

}  // namespace unicorn::text
