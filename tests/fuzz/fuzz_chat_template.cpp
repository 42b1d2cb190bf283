// Fuzz target: Gemma 3's chat template (text/chat_template.hpp) with any
// messages, as a request's messages reach it. A conversation renders or is
// refused with unicorn::Error (roles that do not alternate); a rendering
// starts with <bos>, holds each turn's trimmed content in order (a system
// message with no turn after it is dropped, as Gemma's template drops it),
// and ends with the generation prompt when asked. js_trim leaves no JavaScript white
// space at either end and is idempotent.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz.hpp"
#include "unicorn/text/chat_template.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace text = unicorn::text;
  FuzzedDataProvider in(data, size);
  static const char* const kRoles[] = {"system", "user", "assistant", "model", "tool", ""};
  std::vector<text::ChatMessage> messages(in.ConsumeIntegralInRange<size_t>(0, 8));
  for (auto& m : messages) {
    m.role = in.ConsumeBool() ? std::string(kRoles[in.ConsumeIntegralInRange<size_t>(0, 5)])
                              : in.ConsumeRandomLengthString(10);
    m.content = in.ConsumeRandomLengthString(200);
  }
  const bool generation_prompt = in.ConsumeBool();
  for (const auto& m : messages) {
    const std::string_view t = text::detail::js_trim(m.content);
    FUZZ_CHECK(t.empty() || (text::detail::js_space_length(t, 0) == 0), "js_trim left leading white space");
    FUZZ_CHECK(text::detail::js_trim(t) == t, "js_trim is not idempotent");
    FUZZ_CHECK(std::string_view(m.content).find(t) != std::string_view::npos, "js_trim gave text not in its input");
  }
  unicorn::fuzz::only_unicorn_errors([&] {
    const std::string out = text::render_chat(messages, generation_prompt);
    FUZZ_CHECK(out.starts_with("<bos>"), "a rendering does not start with <bos>");
    // A leading system message goes into the first user turn (none: it is
    // dropped, as Gemma's template drops it).
    const bool lone_system = messages.size() == 1 && messages[0].role == "system";
    size_t at = 0;
    for (const auto& m : messages) {
      if (lone_system) break;
      at = out.find(text::detail::js_trim(m.content), at);
      FUZZ_CHECK(at != std::string::npos, "a turn's content is missing from the rendering, or out of order");
    }
    FUZZ_CHECK(!generation_prompt || out.ends_with("<start_of_turn>model\n"), "no generation prompt at the end");
  });
  return 0;
}
