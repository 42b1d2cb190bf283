// Label server: the server's request checks and response shapes
// (server/api.hpp, and Ollama's: server/ollama_api.hpp), its text streaming (text/text_stream.hpp) and its metrics
// text (server/metrics.hpp). No engine, no sockets: plain functions.
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>

#include "unicorn/server/api.hpp"
#include "unicorn/server/metrics.hpp"
#include "unicorn/server/ollama_api.hpp"
#include "unicorn/text/load_tokenizer.hpp"
#include "unicorn/text/text_stream.hpp"

using namespace unicorn;
using namespace unicorn::server;
using Kind = CompletionRequest::Kind;

namespace {

ApiError refusal(const std::string& body, Kind kind = Kind::Chat) {
  try {
    parse_completion_request(body, kind);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return {};
}

const std::string kHi = R"("messages":[{"role":"user","content":"Hi"}])";

}  // namespace

TEST(Request, ChatDefaultsAndFields) {
  const auto r = parse_completion_request(
      R"({"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},
          {"role":"assistant","content":[{"type":"text","text":"Hello"},{"type":"text","text":"!"}]},
          {"role":"user","content":"Bye"}],
          "max_completion_tokens":7,"temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.05,"seed":-3,
          "stop":["\n\n","END"],"presence_penalty":0.5,"frequency_penalty":-0.25,"repeat_penalty":1.1,
          "repeat_last_n":32,"stream":true,"stream_options":{"include_usage":true},"n":1,"logprobs":false,
          "user":"u1","cache_prompt":false,"ignore_eos":true})",
      Kind::Chat);
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[2].content, "Hello!");
  EXPECT_EQ(r.max_tokens, 7u);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
  EXPECT_EQ(r.sampling.top_k, 40u);
  EXPECT_FLOAT_EQ(r.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.frequency_penalty, -0.25f);
  EXPECT_EQ(r.sampling.repeat_last_n, 32u);
  EXPECT_TRUE(r.seeded);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_FALSE(r.cache_prompt);
  EXPECT_TRUE(r.ignore_eos);

  const auto d = parse_completion_request("{" + kHi + "}", Kind::Chat);
  EXPECT_FALSE(d.max_tokens) << "chat: until the context is full";
  EXPECT_FLOAT_EQ(d.sampling.temperature, 1.0f) << "OpenAI's default temperature";
  EXPECT_FALSE(d.seeded);
  EXPECT_TRUE(d.cache_prompt);
  // developer is OpenAI's newer name for system.
  const auto dev = parse_completion_request(
      R"({"messages":[{"role":"developer","content":"x"},{"role":"user","content":"y"}]})", Kind::Chat);
  EXPECT_EQ(dev.messages[0].role, "system");
  const auto biased = parse_completion_request("{" + kHi + R"(,"logit_bias":{"5":-100,"262143":2.5}})", Kind::Chat);
  EXPECT_EQ(biased.sampling.logit_bias, (std::vector<std::pair<int32_t, float>>{{262143, 2.5f}, {5, -100.f}}))
      << "in the order of the keys (as strings)";
  EXPECT_TRUE(parse_completion_request("{" + kHi + R"(,"logit_bias":null})", Kind::Chat).sampling.logit_bias.empty());
    const auto lp = parse_completion_request("{" + kHi + R"(,"logprobs":true,"top_logprobs":3})", Kind::Chat);
  EXPECT_TRUE(lp.sampling.logprobs);
  EXPECT_EQ(lp.sampling.top_logprobs, 3u);
  const auto legacy = parse_completion_request(R"({"prompt":"x","logprobs":2})", Kind::Text);
  EXPECT_TRUE(legacy.sampling.logprobs);
  EXPECT_EQ(legacy.sampling.top_logprobs, 2u);
  EXPECT_FALSE(parse_completion_request(R"({"prompt":"x","logprobs":null})", Kind::Text).sampling.logprobs);
  // Scoring a prompt, as evaluation harnesses do: echo, logprobs, no new token.
  const auto scoring = parse_completion_request(R"({"prompt":"x","echo":true,"logprobs":1,"max_tokens":0})", Kind::Text);
  EXPECT_TRUE(scoring.echo);
  EXPECT_EQ(scoring.max_tokens, 0u);
  // {"type": "text"} is the API's default response format (LangChain and others send it).
  EXPECT_NO_THROW(parse_completion_request("{" + kHi + R"(,"response_format":{"type":"text"}})", Kind::Chat));
  EXPECT_NO_THROW(parse_completion_request(R"({"prompt":"x","response_format":{"type":"text"}})", Kind::Text));
  // A JavaScript client may send 16.0 for 16.
  EXPECT_EQ(parse_completion_request("{" + kHi + R"(,"max_tokens":16.0})", Kind::Chat).max_tokens, 16u);
}

TEST(Request, TextPrompts) {
  EXPECT_EQ(parse_completion_request(R"({"prompt":"Once"})", Kind::Text).prompt_text, "Once");
  EXPECT_EQ(parse_completion_request(R"({"prompt":["Once"]})", Kind::Text).prompt_text, "Once");
  EXPECT_EQ(parse_completion_request(R"({"prompt":[2,9,10]})", Kind::Text).prompt_ids,
            (std::vector<int32_t>{2, 9, 10}));
  EXPECT_EQ(parse_completion_request(R"({"prompt":[[2,9]]})", Kind::Text).prompt_ids, (std::vector<int32_t>{2, 9}));
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x"})", Kind::Text).max_tokens, 16u)
      << "the legacy completions API's default";
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x","echo":false,"best_of":1,"logprobs":null})", Kind::Text)
                .prompt_text, "x");
}

// Every malformed or unsupported field is a 400 naming it: never a silent
// default, never an exception of another type.
TEST(Request, RefusalsNameTheField) {
  struct Case {
    std::string body;
    std::string param;
    Kind kind = Kind::Chat;
  };
  const Case cases[] = {
      {"", ""}, {"{", ""}, {"null", ""}, {"[]", ""}, {"42", ""}, {R"("text")", ""}, {"{} trailing", ""},
      {R"({"messages":[{"role":"user","content":"\xff"}]})", ""},  // invalid UTF-8
      {"{}", "messages"}, {R"({"messages":"hi"})", "messages"}, {R"({"messages":[]})", "messages"},
      {R"({"messages":[1]})", "messages[0]"}, {R"({"messages":[{"content":"x"}]})", "messages[0].role"},
      {R"({"messages":[{"role":"tool","content":"x"}]})", "messages[0].tool_call_id"},
      {R"({"messages":[{"role":"critic","content":"x"}]})", "messages[0].role"},
      {R"({"messages":[{"role":"user","content":"x","tool_calls":[]}]})", "messages[0].tool_calls"},
      {R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f"}}]}]})",
       "messages[1].tool_calls[0].function.arguments"},
      {R"({"messages":[{"role":"user"}]})", "messages[0].content"},
      {R"({"messages":[{"role":"user","content":5}]})", "messages[0].content"},
      {R"({"messages":[{"role":"user","content":"x","name":"bob"}]})", "messages[0].name"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})",
       "messages[0].content[0].image_url.url"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,a$=="}}]}]})",
       "messages[0].content[0].image_url.url"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:,abc"}}]}]})",
       "messages[0].content[0].image_url.url"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:x;base64,aGk=","size":1}}]}]})",
       "messages[0].content[0].image_url.size"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":5}]}]})",
       "messages[0].content[0].image_url"},
      {R"({"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"data:x;base64,aGk="}}]},{"role":"user","content":"b"}]})",
       "messages[1].content[0].type"},
      {R"({"messages":[{"role":"user","content":[{"type":"image","text":"x"}]}]})", "messages[0].content[0].type"},
      {R"({"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]})", "messages"},
      {R"({"messages":[{"role":"assistant","content":"a"}]})", "messages"},
      {"{" + kHi + R"(,"model":5})", "model"},
      {"{" + kHi + R"(,"temperature":-1})", "temperature"}, {"{" + kHi + R"(,"temperature":2.5})", "temperature"},
      {"{" + kHi + R"(,"temperature":"hot"})", "temperature"}, {"{" + kHi + R"(,"temperature":1e999})", ""},
      {"{" + kHi + R"(,"top_p":0})", "top_p"}, {"{" + kHi + R"(,"top_p":1.5})", "top_p"},
      {"{" + kHi + R"(,"top_k":-1})", "top_k"}, {"{" + kHi + R"(,"top_k":1.5})", "top_k"},
      {"{" + kHi + R"(,"min_p":2})", "min_p"}, {"{" + kHi + R"(,"max_tokens":0})", "max_tokens"},
      {"{" + kHi + R"(,"max_tokens":-5})", "max_tokens"}, {"{" + kHi + R"(,"max_tokens":"10"})", "max_tokens"},
      {"{" + kHi + R"(,"max_tokens":1e12})", "max_tokens"},
      {"{" + kHi + R"(,"max_completion_tokens":true})", "max_completion_tokens"},
      {"{" + kHi + R"(,"n":0})", "n"}, {"{" + kHi + R"(,"n":129})", "n"}, {"{" + kHi + R"(,"n":[[[[1]]]]})", "n"},
      {"{" + kHi + R"(,"logprobs":"yes"})", "logprobs"}, {"{" + kHi + R"(,"top_logprobs":3})", "top_logprobs"},
      {"{" + kHi + R"(,"logprobs":false,"top_logprobs":3})", "top_logprobs"},
      {"{" + kHi + R"(,"logprobs":true,"top_logprobs":21})", "top_logprobs"},
      {R"({"prompt":"x","logprobs":6})", "logprobs", Kind::Text},
      {R"({"prompt":"x","logprobs":true})", "logprobs", Kind::Text},
      {R"({"prompt":"x","top_logprobs":2})", "top_logprobs", Kind::Text},
      {"{" + kHi + R"(,"tools":[{"type":"function"}]})", "tools[0].function"},
      {"{" + kHi + R"(,"tools":[{"type":"retrieval","function":{"name":"f"}}]})", "tools[0].type"},
      {"{" + kHi + R"(,"tools":[{"type":"function","function":{"name":"a b"}}]})", "tools[0].function.name"},
      {"{" + kHi + R"(,"tools":[{"type":"function","function":{"name":"f","parameters":"x"}}]})",
       "tools[0].function.parameters"},
      {"{" + kHi + R"(,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]})",
       "tools[1].function.name"},
      {"{" + kHi + R"(,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string","pattern":"x"}}}}}]})",
       "tools"},
      {"{" + kHi + R"(,"tool_choice":"sometimes"})", "tool_choice"},
      {"{" + kHi + R"(,"tool_choice":"required"})", "tool_choice"},
      {"{" + kHi + R"(,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}})",
       "tool_choice.function.name"},
      {"{" + kHi + R"(,"tools":[{"type":"function","function":{"name":"f"}}],"response_format":{"type":"json_object"}})",
       "response_format"},
      {"{" + kHi + R"(,"response_format":{"type":"xml"}})", "response_format.type"},
      {"{" + kHi + R"(,"response_format":{"type":"json_schema"}})", "response_format.json_schema"},
      {"{" + kHi + R"(,"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"string","pattern":"a"}}}})",
       "response_format.json_schema.schema"},
      {"{" + kHi + R"(,"response_format":{"type":"json_schema","json_schema":{"schema":{},"extra":1}}})",
       "response_format.json_schema.extra"},
      {"{" + kHi + R"(,"response_format":{"type":"text","json_schema":{}}})", "response_format.json_schema"},
      {"{" + kHi + R"(,"grammar":"root ::= nothing"})", "grammar"}, {"{" + kHi + R"(,"grammar":5})", "grammar"},
      {"{" + kHi + R"(,"grammar":"root ::= \"a\"","json_schema":{"type":"object"}})", "json_schema"},
      {"{" + kHi + R"(,"grammar":"root ::= \"a\"","ignore_eos":true})", "ignore_eos"},
      {"{" + kHi + R"(,"response_format":{}})", "response_format.type"},
      {"{" + kHi + R"(,"response_format":"text"})", "response_format"},
      {"{" + kHi + R"(,"logit_bias":[5]})", "logit_bias"}, {"{" + kHi + R"(,"logit_bias":{"x":1}})", "logit_bias.x"},
      {"{" + kHi + R"(,"logit_bias":{"-1":1}})", "logit_bias.-1"},
      {"{" + kHi + R"(,"logit_bias":{"99999999999":1}})", "logit_bias.99999999999"},
      {"{" + kHi + R"(,"logit_bias":{"5":101}})", "logit_bias.5"},
      {"{" + kHi + R"(,"logit_bias":{"5":"up"}})", "logit_bias.5"},
      {"{" + kHi + R"(,"logit_bias":{"5":1,"05":2}})", "logit_bias.5"},
      {"{" + kHi + R"(,"foo":1})", "foo"},
      {"{" + kHi + R"(,"stream":"yes"})", "stream"},
      {"{" + kHi + R"(,"stream_options":{"include_usage":true}})", "stream_options"},
      {"{" + kHi + R"(,"stream":true,"stream_options":{"include_usage":"yes"}})", "stream_options.include_usage"},
      {"{" + kHi + R"(,"stream":true,"stream_options":{"other":1}})", "stream_options.other"},
      {"{" + kHi + R"(,"stream":true,"stream_options":[]})", "stream_options"},
      {"{" + kHi + R"(,"stop":[1]})", "stop[0]"}, {"{" + kHi + R"(,"stop":{"a":1}})", "stop"},
      {"{" + kHi + R"(,"stop":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]})", "stop"},
      {"{" + kHi + R"(,"stop":")" + std::string(300, 'x') + R"("})", "stop"},
      {"{" + kHi + R"(,"seed":"abc"})", "seed"}, {"{" + kHi + R"(,"seed":1.5})", "seed"},
      {"{" + kHi + R"(,"seed":18446744073709551615})", "seed"},
      {"{" + kHi + R"(,"presence_penalty":3})", "presence_penalty"},
      {"{" + kHi + R"(,"frequency_penalty":-3})", "frequency_penalty"},
      {"{" + kHi + R"(,"repeat_penalty":0})", "repeat_penalty"},
      {"{" + kHi + R"(,"repeat_last_n":5000})", "repeat_last_n"},
      {"{" + kHi + R"(,"user":5})", "user"}, {"{" + kHi + R"(,"cache_prompt":1})", "cache_prompt"},
      {"{" + kHi + R"(,"ignore_eos":"no"})", "ignore_eos"},
      {"{" + kHi + R"(,"prompt":"x"})", "prompt"},
      {"{}", "prompt", Kind::Text}, {R"({"prompt":""})", "prompt", Kind::Text},
      {R"({"prompt":[]})", "prompt", Kind::Text}, {R"({"prompt":["a","b"]})", "prompt", Kind::Text},
      {R"({"prompt":[-1]})", "prompt[0]", Kind::Text}, {R"({"prompt":[1.5]})", "prompt[0]", Kind::Text},
      {R"({"prompt":{}})", "prompt", Kind::Text}, {R"({"prompt":true})", "prompt", Kind::Text},
      {R"({"prompt":"x","echo":"yes"})", "echo", Kind::Text},
      {R"({"prompt":"x","max_tokens":0})", "max_tokens", Kind::Text},
      {R"({"prompt":"x","best_of":2})", "best_of", Kind::Text},
      {R"({"prompt":"x","suffix":"y"})", "suffix", Kind::Text},
      {R"({"prompt":"x","messages":[]})", "messages", Kind::Text},
      {R"({"prompt":"x","max_completion_tokens":5})", "max_completion_tokens", Kind::Text},
  };
  int n = 0;
  for (const Case& c : cases) {
    const ApiError e = refusal(c.body, c.kind);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.type, "invalid_request_error") << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
    EXPECT_FALSE(e.message.empty()) << c.body;
    // The error object is OpenAI's and serialises whatever the message holds.
    const Json j = e.body();
    EXPECT_TRUE(j["error"].contains("message") && j["error"].contains("type") && j["error"].contains("param") &&
                j["error"].contains("code"));
    EXPECT_NO_THROW((void)j.dump(-1, ' ', false, Json::error_handler_t::replace));
    ++n;
  }
  std::printf("[ refused ] %d malformed or unsupported request bodies, each a 400 naming its field\n", n);
}

// A hostile body nested a million deep is refused without recursion.
// Structured output: each way of asking compiles a grammar, and says which
// field it came from; "text" asks for none.
TEST(Request, StructuredOutput) {
  const auto field = [&](const std::string& extra) {
    return parse_completion_request("{" + kHi + "," + extra + "}", Kind::Chat);
  };
  EXPECT_FALSE(field(R"("response_format":{"type":"text"})").grammar);
  const auto object = field(R"("response_format":{"type":"json_object"})");
  ASSERT_TRUE(object.grammar);
  EXPECT_EQ(object.grammar_field, "response_format");
  const auto schema = field(R"("response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,
      "schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}}})");
  ASSERT_TRUE(schema.grammar);
  EXPECT_EQ(schema.grammar_field, "response_format.json_schema.schema");
  EXPECT_EQ(field(R"("grammar":"root ::= [a-z]+")").grammar_field, "grammar");
  EXPECT_EQ(field(R"("json_schema":{"type":"boolean"})").grammar_field, "json_schema");
  EXPECT_EQ(field(R"("n":3)").n, 3u);
  // Properties are generated in the schema's order, as the client wrote it
  // (the body's Json sorts keys; the schema is read again in order).
  const auto ordered = field(R"("response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object",
      "properties":{"zebra":{"type":"integer"},"apple":{"type":"integer"}},"required":["zebra","apple"],
      "additionalProperties":false}}})");
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, char(b)));
  grammar::Matcher in_order(ordered.grammar, grammar::Vocabulary::from_tokens(bytes, std::vector<bool>(256, false), -1, -1));
  grammar::Matcher sorted = in_order;
  EXPECT_TRUE(in_order.accept_bytes(R"({"zebra":1,"apple":2})"));
  EXPECT_TRUE(in_order.complete());
  EXPECT_FALSE(sorted.accept_bytes(R"({"apple":2,)"));
}

// Tools: the functions go into the system text ahead of the conversation, a
// grammar of calls is compiled, and an assistant's earlier calls and the
// tool results after them become model and user turns.
TEST(Request, ToolsAndToolMessages) {
  const auto r = parse_completion_request(R"({"messages":[
      {"role":"system","content":"Be brief."},
      {"role":"user","content":"Weather in Paris and Rome?"},
      {"role":"assistant","content":null,"tool_calls":[
        {"id":"c1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},
        {"id":"c2","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Rome\"}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"21 C"},
      {"role":"tool","tool_call_id":"c2","name":"weather","content":"25 C"}],
    "tools":[{"type":"function","function":{"name":"weather","description":"Weather now",
      "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],
    "tool_choice":"auto","parallel_tool_calls":true})", Kind::Chat);
  ASSERT_TRUE(r.tools.active());
  ASSERT_TRUE(r.grammar);
  EXPECT_EQ(r.grammar_field, "tools");
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_NE(r.messages[0].content.find(R"("name":"weather")"), std::string::npos) << r.messages[0].content;
  EXPECT_NE(r.messages[0].content.find("Be brief."), std::string::npos);
  EXPECT_EQ(r.messages[2].role, "assistant");
  EXPECT_EQ(r.messages[2].content, R"([{"name":"weather","parameters":{"city":"Paris"}},{"name":"weather","parameters":{"city":"Rome"}}])");
  EXPECT_EQ(r.messages[3].role, "user");
  EXPECT_NE(r.messages[3].content.find(R"("tool_call_id":"c1")"), std::string::npos);
  EXPECT_NE(r.messages[3].content.find(R"("result":"25 C")"), std::string::npos);
  // "auto": a call or free text; a parameter named "root" stays a key (the
  // schema's root rule is renamed, not the word in literals).
  const auto keyed = parse_completion_request("{" + kHi + R"(,"tools":[{"type":"function","function":{"name":"f",
      "parameters":{"type":"object","properties":{"root":{"type":"boolean"}},"required":["root"]}}}]})", Kind::Chat);
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, char(b)));
  const auto vocab = grammar::Vocabulary::from_tokens(bytes, std::vector<bool>(256, false), -1, -1);
  for (const std::string reply : {R"({"name":"f","parameters":{"root":true}})", "Sunny, 21 degrees.",
                                  R"([{"name":"f","parameters":{"root":false}}])"}) {
    grammar::Matcher m(keyed.grammar, vocab);
    EXPECT_TRUE(m.accept_bytes(reply) && m.complete()) << reply;
  }
  for (const std::string reply : {R"({"name":"g","parameters":{"root":true}})", R"({"name":"f","parameters":{"call":true}})",
                                  R"({"answer":1})"}) {
    grammar::Matcher m(keyed.grammar, vocab);
    EXPECT_FALSE(m.accept_bytes(reply) && m.complete()) << reply;
  }
  // "none": the tools are not offered, nothing constrains the answer.
  const auto none = parse_completion_request("{" + kHi + R"(,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"})", Kind::Chat);
  EXPECT_FALSE(none.grammar);
  EXPECT_EQ(none.messages.size(), 1u);
}

// A finished reply read back as calls: one object or an array of them; text
// and other JSON are no calls.
TEST(Response, ToolCallsAreReadFromTheReply) {
  ToolUse use;
  use.tools.push_back({"weather", "", nlohmann::json::object()});
  std::mt19937_64 rng(1);
  const auto one = read_calls(R"({"name": "weather", "parameters": {"city": "Paris"}})", use, rng);
  ASSERT_TRUE(one);
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].name, "weather");
  EXPECT_EQ((*one)[0].arguments, R"({"city":"Paris"})");
  EXPECT_TRUE(std::regex_match((*one)[0].id, std::regex("call_[0-9a-f]{24}")));
  const auto two = read_calls(R"([{"name":"weather","parameters":{}},{"name":"weather","parameters":{"a":1}}])", use, rng);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->size(), 2u);
  EXPECT_NE((*two)[0].id, (*two)[1].id);
  EXPECT_FALSE(read_calls("It is sunny.", use, rng));
  EXPECT_FALSE(read_calls(R"({"answer": 42})", use, rng));
  use.choice = ToolUse::Choice::None;
  EXPECT_FALSE(read_calls(R"({"name":"weather","parameters":{}})", use, rng));
  // The message and the streamed chunks in OpenAI's shapes.
  const ResponseHead head{Kind::Chat, "chatcmpl-1", 0, "m", "fp"};
  const auto whole = head.response("", FinishReason::Stop, Usage{3, 0, 5}, nullptr, *two);
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_TRUE(whole["choices"][0]["message"]["content"].is_null());
  EXPECT_EQ(whole["choices"][0]["message"]["tool_calls"][1]["function"]["arguments"], R"({"a":1})");
  const auto chunk = head.tool_calls_chunk(*two, true, false, nullptr, 2);
  EXPECT_EQ(chunk["choices"][0]["index"], 2);
  EXPECT_EQ(chunk["choices"][0]["delta"]["tool_calls"][1]["index"], 1);
  EXPECT_EQ(head.tool_calls_finish(false, 2)["choices"][0]["finish_reason"], "tool_calls");
}

TEST(Request, DeepNestingIsRefused) {
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  EXPECT_EQ(refusal("{" + kHi + R"(,"n":)" + deep + "}").param, "n");
  EXPECT_EQ(refusal(R"({"messages":)" + deep + "}").param, "messages[0]");
  EXPECT_EQ(refusal(deep).status, 400);
}

TEST(Response, ShapesFollowOpenAI) {
  const ResponseHead chat{Kind::Chat, "chatcmpl-1", 1700000000, "demo", "fp"};
  const Usage usage{11, 4, 3};
  const Json whole = chat.response("Hello", FinishReason::Length, usage);
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_EQ(whole["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(whole["usage"]["total_tokens"], 14);
  EXPECT_EQ(whole["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
  const Json first = chat.chunk("He", std::nullopt, true, true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["delta"]["content"], "He");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(first.contains("usage") && first["usage"].is_null());
  const Json last = chat.chunk("", FinishReason::Stop, false, false);
  EXPECT_TRUE(last["choices"][0]["delta"].empty());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(last.contains("usage"));
  const Json u = chat.usage_chunk(usage);
  EXPECT_TRUE(u["choices"].empty());
  EXPECT_EQ(u["usage"]["completion_tokens"], 3);

  const ResponseHead text{Kind::Text, "cmpl-1", 1700000000, "demo", "fp"};
  EXPECT_EQ(text.response("x", FinishReason::Stop, usage)["object"], "text_completion");
  EXPECT_EQ(text.response("x", FinishReason::Stop, usage)["choices"][0]["text"], "x");
  EXPECT_EQ(text.chunk("y", std::nullopt, true, false)["choices"][0]["text"], "y");
}

TEST(Metrics, PrometheusText) {
  Metrics m;
  m.request("chat_completions", 200);
  m.request("chat_completions", 200);
  m.request("completions", 400);
  m.completion(10, 4, 5, "stop");
  m.time_to_first_token(0.02);
  m.time_to_first_token(7);
  m.inter_token(0.003);
  m.gauges(3, 2);
  m.slots(8);
  const std::string t = m.text();
  EXPECT_NE(t.find("unicorn_requests_total{endpoint=\"chat_completions\",status=\"200\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("unicorn_requests_total{endpoint=\"completions\",status=\"400\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("unicorn_prompt_tokens_total 10\n"), std::string::npos);
  EXPECT_NE(t.find("unicorn_generated_tokens_total 5\n"), std::string::npos);
  EXPECT_NE(t.find("unicorn_queue_depth 3\n"), std::string::npos);
  EXPECT_NE(t.find("unicorn_slots_busy 2\n"), std::string::npos);
  EXPECT_NE(t.find("unicorn_time_to_first_token_seconds_bucket{le=\"0.025\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("unicorn_time_to_first_token_seconds_bucket{le=\"10\"} 2\n"), std::string::npos);
  EXPECT_NE(t.find("unicorn_time_to_first_token_seconds_count 2\n"), std::string::npos);
  EXPECT_NE(t.find("unicorn_inter_token_latency_seconds_bucket{le=\"+Inf\"} 1\n"), std::string::npos);
  // Every line is a comment or `name{labels} value`.
  const std::regex line(R"((# (HELP|TYPE) .*|[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? [0-9.e+-]+))");
  size_t start = 0;
  while (start < t.size()) {
    const size_t end = t.find('\n', start);
    const std::string l = t.substr(start, end - start);
    EXPECT_TRUE(std::regex_match(l, line)) << l;
    start = end + 1;
  }
}

// --- text streaming: stop strings held back, UTF-8 completed ---

class Stream : public ::testing::Test {
 protected:
  static const text::Tokenizer& tok() {
    static const text::Tokenizer t = text::load_tokenizer(std::getenv("UNICORN_TINY_TOKENIZER"));
    return t;
  }
  // Streams `text` token by token; returns the pieces and the stream.
  static std::pair<std::vector<std::string>, bool> run(const std::string& text, std::vector<std::string> stop) {
    text::TextStream s(tok(), std::move(stop));
    std::vector<std::string> out;
    for (int32_t id : tok().encode(text)) {
      out.push_back(s.push(id));
      if (s.stopped()) return {out, true};
    }
    out.push_back(s.finish());
    return {out, false};
  }
  static std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& p : v) s += p;
    return s;
  }
};

TEST_F(Stream, StopStringsEndTheTextBeforeThem) {
  auto [pieces, stopped] = run("The cat sat. END of it", {"END"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(joined(pieces), "The cat sat. ");
  // The earliest of several stop strings wins, whichever is listed first.
  std::tie(pieces, stopped) = run("alpha beta gamma", {"gamma", "beta"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(joined(pieces), "alpha ");
  // A partial match is held back, then released when it turns out not to be one.
  std::tie(pieces, stopped) = run("an ENDLESS road", {"END."});
  EXPECT_FALSE(stopped);
  EXPECT_EQ(joined(pieces), "an ENDLESS road");
  // Text is never shown past a stop string that spans tokens.
  std::tie(pieces, stopped) = run("one two three", {"o t"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(joined(pieces), "one tw");
  // Empty stop strings are ignored.
  std::tie(pieces, stopped) = run("abc", {""});
  EXPECT_FALSE(stopped);
  EXPECT_EQ(joined(pieces), "abc");
}

TEST_F(Stream, Utf8IsCompletedAcrossByteTokens) {
  auto [pieces, stopped] = run("caf\xc3\xa9 \xe2\x82\xac", {});  // byte tokens for é and €
  EXPECT_EQ(joined(pieces), "caf\xc3\xa9 \xe2\x82\xac");
  for (const auto& p : pieces) EXPECT_TRUE(text::is_valid_utf8(p)) << "a piece split a character";
}

// The logprobs objects in OpenAI's shapes: chat's content entries with bytes
// and alternatives, the legacy API's parallel arrays with text offsets that
// continue across stream chunks.
TEST_F(Stream, LogprobsShapes) {
  const auto ids = tok().encode("hello world");
  ASSERT_GE(ids.size(), 2u);
  std::vector<TokenLogprobEntry> entries;
  for (size_t i = 0; i < ids.size(); ++i)
    entries.push_back({ids[i], {-0.5f - float(i), {{ids[i], -0.5f - float(i)}, {ids[0] == 7 ? 8 : 7, -3.f}}}});
  const Json chat = chat_logprobs(entries, tok());
  ASSERT_EQ(chat["content"].size(), ids.size());
  EXPECT_TRUE(chat["refusal"].is_null());
  std::string joined;
  for (size_t i = 0; i < ids.size(); ++i) {
    const Json& c = chat["content"][i];
    EXPECT_EQ(c["token"], std::string(tok().token_bytes(ids[i])));
    EXPECT_FLOAT_EQ(c["logprob"].get<float>(), -0.5f - float(i));
    std::string bytes;
    for (const Json& b : c["bytes"]) bytes += char(b.get<int>());
    EXPECT_EQ(bytes, tok().token_bytes(ids[i]));
    ASSERT_EQ(c["top_logprobs"].size(), 2u);
    EXPECT_EQ(c["top_logprobs"][0]["token"], c["token"]);
    EXPECT_FLOAT_EQ(c["top_logprobs"][1]["logprob"].get<float>(), -3.f);
    joined += bytes;
  }
  EXPECT_EQ(joined, tok().decode(ids));
  size_t offset = 0;
  const Json first = completion_logprobs(std::span(entries).first(1), tok(), offset);
  const Json rest = completion_logprobs(std::span(entries).subspan(1), tok(), offset);
  EXPECT_EQ(first["text_offset"], Json::array({0}));
  EXPECT_EQ(rest["text_offset"][0], tok().token_bytes(ids[0]).size());
  EXPECT_EQ(offset, joined.size());
  EXPECT_EQ(rest["tokens"].size(), ids.size() - 1);
  EXPECT_FLOAT_EQ(first["token_logprobs"][0].get<float>(), -0.5f);
  EXPECT_FLOAT_EQ(first["top_logprobs"][0][std::string(tok().token_bytes(ids[0]))].get<float>(), -0.5f);
  // A whole response and a chunk carry it in choices[0].logprobs; null when not asked.
  const ResponseHead head{CompletionRequest::Kind::Chat, "chatcmpl-1", 0, "m", "f"};
  EXPECT_EQ(head.response("hi", FinishReason::Stop, {}, chat)["choices"][0]["logprobs"], chat);
  EXPECT_TRUE(head.response("hi", FinishReason::Stop, {})["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(head.chunk("hi", std::nullopt, false, false, chat)["choices"][0]["logprobs"], chat);
}

// --- Ollama's API (server/ollama_api.hpp) ---

namespace {

using Route = OllamaRequest::Route;

ApiError ollama_refusal(const std::string& body, Route route = Route::Chat, uint32_t context = 256) {
  try {
    parse_ollama_request(body, route, context);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return {};
}

}  // namespace

TEST(Ollama, ChatDefaultsAndOptions) {
  const auto d = parse_ollama_request(R"({"model":"m",)" + kHi + "}", Route::Chat, 256);
  EXPECT_EQ(d.model, "m");
  EXPECT_FALSE(d.load_only);
  EXPECT_TRUE(d.completion.stream) << "Ollama streams by default";
  EXPECT_EQ(d.completion.kind, Kind::Chat);
  EXPECT_TRUE(d.completion.model.empty()) << "the route checks the name (with :latest)";
  EXPECT_FLOAT_EQ(d.completion.sampling.temperature, 0.8f) << "Ollama's defaults";
  EXPECT_EQ(d.completion.sampling.top_k, 40u);
  EXPECT_FLOAT_EQ(d.completion.sampling.top_p, 0.9f);
  EXPECT_FALSE(d.completion.max_tokens);
  EXPECT_FALSE(d.completion.seeded);

  const auto r = parse_ollama_request(
      R"({"model":"m","stream":false,"keep_alive":"5m","truncate":true,"shift":false,"think":false,"tools":[],
          "format":"","logprobs":true,"top_logprobs":3,
          "messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi","images":[]},
                      {"role":"assistant","content":"Hello","thinking":"hmm","tool_calls":[]},{"role":"user","content":"Bye"}],
          "options":{"num_predict":7,"temperature":0.5,"top_k":20,"top_p":0.95,"min_p":0.05,"seed":42,"stop":["\n\n","END"],
                     "repeat_penalty":1.1,"repeat_last_n":-1,"presence_penalty":0.5,"frequency_penalty":-0.25,
                     "num_ctx":128,"num_gpu":99,"num_thread":8,"use_mmap":true,"numa":false,"typical_p":1,
                     "mirostat":0,"mirostat_tau":5,"penalize_newline":true,"num_keep":4,"seed_unused":null}})",
      Route::Chat, 256);
  EXPECT_FALSE(r.completion.stream);
  ASSERT_EQ(r.completion.messages.size(), 4u);
  EXPECT_EQ(r.completion.messages[2].content, "Hello") << "an earlier turn's thinking is not rendered";
  EXPECT_EQ(r.completion.max_tokens, 7u);
  EXPECT_FLOAT_EQ(r.completion.sampling.temperature, 0.5f);
  EXPECT_EQ(r.completion.sampling.top_k, 20u);
  EXPECT_FLOAT_EQ(r.completion.sampling.min_p, 0.05f);
  EXPECT_TRUE(r.completion.seeded);
  EXPECT_EQ(r.completion.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_FLOAT_EQ(r.completion.sampling.repeat_penalty, 1.1f);
  EXPECT_EQ(r.completion.sampling.repeat_last_n, 128u) << "-1: the whole (num_ctx) context";
  EXPECT_FLOAT_EQ(r.completion.sampling.frequency_penalty, -0.25f);
  EXPECT_EQ(r.num_ctx, 128u);
  EXPECT_TRUE(r.completion.sampling.logprobs);
  EXPECT_EQ(r.completion.sampling.top_logprobs, 3u);
  EXPECT_TRUE(sampling_params_valid(r.completion.sampling));

  // num_predict <= 0 is Ollama's "no limit"; seed -1 its random seed.
  for (const char* n : {"-1", "-2", "0"})
    EXPECT_FALSE(parse_ollama_request(R"({"model":"m",)" + kHi + R"(,"options":{"num_predict":)" + n + "}}", Route::Chat, 256)
                     .completion.max_tokens);
  EXPECT_FALSE(parse_ollama_request(R"({"model":"m",)" + kHi + R"(,"options":{"seed":-1}})", Route::Chat, 256).completion.seeded);
  // No messages: Ollama's load call.
  EXPECT_TRUE(parse_ollama_request(R"({"model":"m"})", Route::Chat, 256).load_only);
  EXPECT_TRUE(parse_ollama_request(R"({"model":"m","messages":[]})", Route::Chat, 256).load_only);
}

// format: "json" and a JSON schema are structured output, as OpenAI's
// response_format.
TEST(Ollama, FormatIsStructuredOutput) {
  const std::string m = R"({"model":"m","messages":[{"role":"user","content":"Hi"}])";
  const auto json = parse_ollama_request(m + R"(,"format":"json"})", OllamaRequest::Route::Chat, 256);
  EXPECT_TRUE(json.completion.grammar);
  EXPECT_EQ(json.completion.grammar_field, "format");
  EXPECT_TRUE(parse_ollama_request(m + R"(,"format":{"type":"object","properties":{"a":{"type":"boolean"}}}})",
                                   OllamaRequest::Route::Chat, 256).completion.grammar);
  EXPECT_FALSE(parse_ollama_request(m + R"(,"format":""})", OllamaRequest::Route::Chat, 256).completion.grammar);
}

TEST(Ollama, GenerateTemplatesOrRaw) {
  const auto g = parse_ollama_request(R"({"model":"m","prompt":"Why?","system":"Be terse."})", Route::Generate, 256);
  EXPECT_EQ(g.completion.kind, Kind::Chat) << "through the chat template";
  ASSERT_EQ(g.completion.messages.size(), 2u);
  EXPECT_EQ(g.completion.messages[0].role, "system");
  EXPECT_EQ(g.completion.messages[1].content, "Why?");
  const auto raw = parse_ollama_request(R"({"model":"m","prompt":"<start_of_turn>x","raw":true,"context":[],"suffix":""})",
                                        Route::Generate, 256);
  EXPECT_EQ(raw.completion.kind, Kind::Text);
  EXPECT_EQ(raw.completion.prompt_text, "<start_of_turn>x");
  EXPECT_TRUE(parse_ollama_request(R"({"model":"m","prompt":""})", Route::Generate, 256).load_only);
  EXPECT_TRUE(parse_ollama_request(R"({"model":"m","keep_alive":0})", Route::Generate, 256).load_only);
}

// Every malformed or unsupported field is a 400 whose message starts with
// the field (Ollama's {"error": "..."} carries only the message).
TEST(Ollama, RefusalsNameTheField) {
  struct Case {
    std::string body;
    std::string starts;
    Route route = Route::Chat;
  };
  const std::string m = R"({"model":"m",)" + kHi;
  const Case cases[] = {
      {"", "the body is not valid JSON"}, {"[]", "the body must be a JSON object"},
      {R"({"messages":[]})", "model is required"}, {R"({"model":5})", "'model' must be a string"},
      {m + R"(,"format":{"type":"object","not":{}}})", "'format': "},
      {m + R"(,"format":"yaml"})", "format: must be \"json\" or a JSON schema"},
      {m + R"(,"format":7})", "format: must be"},
      {R"({"model":"m","messages":[{"role":"user","content":"x","images":["a$k="]}]})", "messages[0].images[0]: base64"},
      {R"({"model":"m","messages":[{"role":"assistant","content":"x","images":["aGk="]}]})", "messages[0].images: only"},
      {R"({"model":"m","prompt":"x","images":[5]})", "'images[0]' must be a base64 string", Route::Generate},
      {R"({"model":"m","prompt":"x","raw":true,"images":["aGk="]})", "images with raw: true", Route::Generate},
      {R"({"model":"m","messages":[],"images":["aGk="]})", "'images' is not supported by this endpoint"},
      {R"({"model":"m","prompt":"x","images":"aGk="})", "'images' must be", Route::Generate},
      {R"({"model":"m","messages":[{"role":"tool","content":"x"}]})", "messages[0].role: 'tool'"},
      {R"({"model":"m","messages":[{"role":"robot","content":"x"}]})", "messages[0].role must be"},
      {R"({"model":"m","messages":[{"content":"x"}]})", "messages[0].role is required"},
      {R"({"model":"m","messages":[{"role":"user","content":5}]})", "'messages[0].content' must be a string"},
      {R"({"model":"m","messages":[{"role":"user","content":"x","name":"bob"}]})", "messages[0].name is not a field"},
      {R"({"model":"m","messages":[{"role":"assistant","content":"x","tool_calls":[{}]}]})", "messages[0].tool_calls:"},
      {R"({"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]})", "Conversation roles"},
      {R"({"model":"m","messages":"hi"})", "'messages' must be"},
      {m + R"(,"stream":"yes"})", "'stream' must be a boolean"},
      {m + R"(,"keep_alive":[]})", "'keep_alive' must be"},
      {m + R"(,"tools":[{"type":"function"}]})", "tools: this server does not call tools"},
      {m + R"(,"think":true})", "think: Gemma 3 is not a thinking model"},
      {m + R"(,"think":"high"})", "think:"},
      {m + R"(,"top_logprobs":3})", "top_logprobs needs logprobs"},
      {m + R"(,"top_logprobs":21,"logprobs":true})", "'top_logprobs' must be in [0, 20]"},
      {m + R"(,"suffix":"x"})", "'suffix' is not supported"},
      {m + R"(,"options":[]})", "'options' must be an object"},
      {m + R"(,"options":{"temperature":"hot"}})", "'options.temperature' must be a number"},
      {m + R"(,"options":{"temperature":3}})", "'options.temperature' must be in [0.0, 2.0]"},
      {m + R"(,"options":{"top_p":0}})", "'options.top_p' must be in (0.0, 1.0]"},
      {m + R"(,"options":{"top_k":-1}})", "'options.top_k' must be in"},
      {m + R"(,"options":{"num_predict":"ten"}})", "'options.num_predict' must be an integer"},
      {m + R"(,"options":{"repeat_last_n":-2}})", "'options.repeat_last_n' must be in [-1, 1024]"},
      {m + R"(,"options":{"stop":[1]}})", "'stop[0]' must be a string"},
      {m + R"(,"options":{"num_ctx":0}})", "'options.num_ctx' must be in [1,"},
      {m + R"(,"options":{"num_ctx":257}})", "options.num_ctx: 257 tokens is more than this server's context of 256"},
      {m + R"(,"options":{"typical_p":0.7}})", "options.typical_p: 0.7 is not supported"},
      {m + R"(,"options":{"mirostat":2}})", "options.mirostat: 2 is not supported"},
      {m + R"(,"options":{"tfs_z":0.5}})", "options.tfs_z"},
      {m + R"(,"options":{"num_gpu":"all"}})", "'options.num_gpu' must be an integer"},
      {m + R"(,"options":{"use_mmap":1}})", "'options.use_mmap' must be a boolean"},
      {m + R"(,"options":{"flux":1}})", "options.flux is not an option of Ollama's API"},
      {m + R"(,"_debug_render_only":true})", "'_debug_render_only' is not supported"},
      {R"({"model":"m","prompt":"x","raw":true,"system":"s"})", "raw mode does not support template, system, or context",
       Route::Generate},
      {R"({"model":"m","prompt":"x","template":"{{ .Prompt }}"})", "template:", Route::Generate},
      {R"({"model":"m","prompt":"x","context":[1,2]})", "context: Ollama's deprecated", Route::Generate},
      {R"({"model":"m","prompt":"x","suffix":"y"})", "suffix: Gemma 3 has no fill-in-the-middle", Route::Generate},
      {R"({"model":"m","prompt":5})", "'prompt' must be a string", Route::Generate},
      {R"({"model":"m","prompt":"x","messages":[]})", "'messages' is not supported", Route::Generate},
  };
  for (const Case& c : cases) {
    const ApiError e = ollama_refusal(c.body, c.route);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_TRUE(e.message.starts_with(c.starts)) << c.body << "\n  got: " << e.message << "\n want: " << c.starts;
    EXPECT_EQ(ollama::error_body(e), Json({{"error", e.message}})) << "Ollama's shape";
  }
  // -1 (the whole context) must fit the penalty window.
  EXPECT_TRUE(ollama_refusal(R"({"model":"m",)" + kHi + R"(,"options":{"repeat_last_n":-1}})", Route::Chat, 4096)
                  .message.starts_with("options.repeat_last_n: -1 asks for the whole context (4096 tokens)"));
}

TEST(Ollama, Replies) {
  using std::chrono::system_clock;
  const auto t = system_clock::time_point(std::chrono::seconds(1700000000)) + std::chrono::nanoseconds(123456789);
  EXPECT_EQ(ollama::rfc3339(t), "2023-11-14T22:13:20.123456789Z");
  EXPECT_EQ(ollama::rfc3339(system_clock::time_point()), "1970-01-01T00:00:00.000000000Z");

  const OllamaHead chat{Route::Chat, "tiny:latest"}, gen{Route::Generate, "tiny"};
  EXPECT_EQ(chat.chunk("Hel", nullptr, t), Json::parse(R"({"model":"tiny:latest","created_at":"2023-11-14T22:13:20.123456789Z",
                                                           "message":{"role":"assistant","content":"Hel"},"done":false})"));
  EXPECT_EQ(gen.chunk("lo", nullptr, t).value("response", ""), "lo");
  EXPECT_FALSE(gen.chunk("lo", nullptr, t).contains("message"));

  const auto arrived = std::chrono::steady_clock::time_point(std::chrono::seconds(10));
  const OllamaStats s = ollama_stats(arrived, arrived + std::chrono::milliseconds(30), arrived + std::chrono::milliseconds(100),
                                     Usage{12, 4, 7});
  EXPECT_EQ(s.total_ns, 100000000);
  EXPECT_EQ(s.prompt_ns, 30000000);
  EXPECT_EQ(s.eval_ns, 70000000);
  EXPECT_EQ(s.prompt_tokens, 12u) << "the whole prompt, cached prefix included";
  EXPECT_EQ(s.eval_tokens, 7u);
  const OllamaStats unstarted = ollama_stats(arrived, std::nullopt, arrived + std::chrono::milliseconds(5), Usage{3, 0, 0});
  EXPECT_EQ(unstarted.prompt_ns, 5000000);
  EXPECT_EQ(unstarted.eval_ns, 0);

  const Json final = chat.final("", FinishReason::Length, s, nullptr, t);
  EXPECT_EQ(final, Json::parse(R"({"model":"tiny:latest","created_at":"2023-11-14T22:13:20.123456789Z",
                                   "message":{"role":"assistant","content":""},"done":true,"done_reason":"length",
                                   "total_duration":100000000,"load_duration":0,"prompt_eval_count":12,
                                   "prompt_eval_duration":30000000,"eval_count":7,"eval_duration":70000000})"));
  EXPECT_EQ(gen.final("all of it", FinishReason::Stop, s, nullptr, t)["response"], "all of it");
  EXPECT_EQ(gen.final("x", FinishReason::Stop, s, nullptr, t)["done_reason"], "stop");
  const Json lp = Json::array({{{"token", "a"}, {"logprob", -0.5}}});
  EXPECT_EQ(chat.chunk("a", lp, t)["logprobs"], lp);
  const Json loaded = gen.loaded(t);
  EXPECT_EQ(loaded["done_reason"], "load");
  EXPECT_EQ(loaded["response"], "");
}

TEST(Ollama, ModelDescriptions) {
  EXPECT_EQ(ollama::human_number(268098176), "268.10M");
  EXPECT_EQ(ollama::human_number(999890000), "999.89M");
  EXPECT_EQ(ollama::human_number(4300000000), "4.3B");
  EXPECT_EQ(ollama::human_number(12000000000), "12B");
  EXPECT_EQ(ollama::human_number(5000000), "5M");
  EXPECT_EQ(ollama::human_number(12345), "12K");
  EXPECT_EQ(ollama::human_number(999), "999");
  EXPECT_TRUE(ollama::names_model("tiny", "tiny"));
  EXPECT_TRUE(ollama::names_model("tiny:latest", "tiny"));
  EXPECT_FALSE(ollama::names_model("tiny:2b", "tiny"));
  EXPECT_TRUE(ollama::names_model("gemma3:1b", "gemma3:1b"));

  OllamaModelFacts f;
  f.id = "tiny";
  f.dims = kGemma3_270M;
  f.parameters = 268098176;
  f.weight_bytes = 300000000;
  f.quantization = "Q8_0";
  f.context = 256;
  f.loaded_at = 1700000000;
  f.vocab = 262144;
  const Json tags = ollama_tags(f);
  ASSERT_EQ(tags["models"].size(), 1u);
  EXPECT_EQ(tags["models"][0]["name"], "tiny:latest");
  EXPECT_EQ(tags["models"][0]["modified_at"], "2023-11-14T22:13:20.000000000Z");
  EXPECT_EQ(tags["models"][0]["details"],
            Json::parse(R"({"parent_model":"","format":"gguf","family":"gemma3","families":["gemma3"],
                            "parameter_size":"268.10M","quantization_level":"Q8_0"})"));
  EXPECT_EQ(ollama_ps(f)["models"][0]["context_length"], 256);

  const Json show = ollama_show(f, R"({"model":"tiny:latest","verbose":false})");
  EXPECT_EQ(show["details"], tags["models"][0]["details"]);
  EXPECT_EQ(show["model_info"]["gemma3.block_count"], kGemma3_270M.layers);
  EXPECT_EQ(show["model_info"]["general.parameter_count"], 268098176);
  EXPECT_EQ(show["parameters"], "num_ctx                        256\nrepeat_last_n                  64\n"
                                "temperature                    0.8\ntop_k                          40\n"
                                "top_p                          0.9");
  EXPECT_NE(show["modelfile"].get<std::string>().find("PARAMETER num_ctx 256\n"), std::string::npos);
  EXPECT_NE(show["modelfile"].get<std::string>().find("FROM tiny:latest\n"), std::string::npos);
  EXPECT_EQ(ollama_show(f, R"({"name":"tiny"})")["details"]["family"], "gemma3") << "Ollama's older field";
  const auto show_refusal = [&](const std::string& body) {
    try {
      ollama_show(f, body);
    } catch (const ApiError& e) {
      return e;
    }
    ADD_FAILURE() << "accepted: " << body;
    return ApiError{};
  };
  EXPECT_EQ(show_refusal(R"({"model":"llama3"})").status, 404);
  EXPECT_EQ(show_refusal(R"({"model":"llama3"})").message, "model 'llama3' not found");
  EXPECT_EQ(show_refusal(R"({})").message, "model is required");
  EXPECT_EQ(show_refusal(R"({"model":"tiny","verbose":"yes"})").status, 400);
  EXPECT_EQ(show_refusal(R"({"model":"tiny","extra":1})").status, 400);

  EXPECT_EQ(ollama_version()["version"], UNICORN_PROJECT_VERSION) << "CMakeLists.txt's project() version";
}

// An image part: its data: URL's bytes go to the message's images, and the
// content holds Gemma 3's marker where the template writes the image, text
// parts trimmed as the template trims them.
TEST(Request, ImagePartsCarryTheirBytesInOrder) {
  const auto r = parse_completion_request(
      R"({"messages":[{"role":"user","content":[{"type":"text","text":" What differs? "},
           {"type":"image_url","image_url":{"url":"data:image/png;base64,aGk=","detail":"high"}},
           {"type":"image_url","image_url":"data:image/jpeg;base64,AAEC/w"},{"type":"text","text":"x"}]}]})",
      Kind::Chat);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].content, "What differs?<start_of_image><start_of_image>x");
  ASSERT_EQ(r.messages[0].images.size(), 2u);
  EXPECT_EQ(r.messages[0].images[0], "hi");
  EXPECT_EQ(r.messages[0].images[1], std::string("\x00\x01\x02\xff", 4));
}

TEST(Request, ImageUrlsMustBeInline) {
  try {
    (void)parse_completion_request(
        R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]})",
        Kind::Chat);
    FAIL() << "an https image URL was taken";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_NE(e.message.find("fetches nothing"), std::string::npos) << e.message;
  }
}

TEST(DataUrl, Base64DecodesExactlyAndRefusesMalformedText) {
  EXPECT_EQ(decode_base64(""), "");
  EXPECT_EQ(decode_base64("Zg=="), "f");
  EXPECT_EQ(decode_base64("Zm8="), "fo");
  EXPECT_EQ(decode_base64("Zm9v"), "foo");
  EXPECT_EQ(decode_base64("Zm9vYg"), "foob");  // unpadded, as some clients send
  EXPECT_THROW(decode_base64("Zm9vY"), Error);   // 5 characters: no encoding has that length
  EXPECT_THROW(decode_base64("Zm9v\nYmFy"), Error);
  EXPECT_THROW(decode_base64("Zg=a"), Error);
  EXPECT_THROW(decode_base64("Zm9vYg="), Error);  // padded to a length that is not a multiple of 4
  EXPECT_EQ(data_url_bytes("data:image/png;base64,Zm9v"), "foo");
  EXPECT_THROW(data_url_bytes("data:image/png,Zm9v"), Error);
  EXPECT_THROW(data_url_bytes("ftp://x"), Error);
}

// Ollama's images: base64 files, each before the text as the template writes
// an image; /api/generate's go to its one user turn.
TEST(Ollama, ImagesCarryTheirBytesBeforeTheText) {
  const auto c = parse_ollama_request(
      R"({"model":"m","messages":[{"role":"user","content":"Which?","images":["aGk=","AAEC/w=="]}]})", Route::Chat, 256);
  ASSERT_EQ(c.completion.messages.size(), 1u);
  EXPECT_EQ(c.completion.messages[0].content, "<start_of_image><start_of_image>Which?");
  ASSERT_EQ(c.completion.messages[0].images.size(), 2u);
  EXPECT_EQ(c.completion.messages[0].images[0], "hi");
  const auto g = parse_ollama_request(R"({"model":"m","prompt":"What?","images":["aGk="]})", Route::Generate, 256);
  ASSERT_EQ(g.completion.messages.size(), 1u);
  EXPECT_EQ(g.completion.messages[0].content, "<start_of_image>What?");
  EXPECT_EQ(g.completion.messages[0].images, std::vector<std::string>{"hi"});
}
