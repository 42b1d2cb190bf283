// unicorn-serve-bench — drives an OpenAI-compatible server with N concurrent
// streaming clients on loopback and reports aggregate generation tokens/s,
// time-to-first-token and inter-token latency (p50, p99), for each N asked.
// Each client sends `--requests` completions one after another: a prompt of
// `--prompt` random token ids, `--tokens` generated tokens (ignore_eos, so
// every request generates exactly that many, as llama-batched-bench's do).
//
//   unicorn-serve-bench --port 8080 --clients 1,8,32,64 --prompt 128 --tokens 128 [--json FILE]
//   unicorn-serve-bench --port 8080 --chat-cache 2000   # a second chat turn's TTFT with and without the cache
//
// Aggregate tokens/s counts generated tokens over the wall time from the first
// request sent to the last token received, the prefills included, as a user
// of the server sees it. The client is C++ on Asio (one thread), so it is not
// what limits the figures.
// The prompts are drawn from a seed (--seed; by default a random one, printed):
// two runs that drew the same prompts against one server would find them in
// its slots' prompt cache, and prefill less. Each row counts the prompt tokens
// the server took from its cache (usage.prompt_tokens_details.cached_tokens).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "unicorn/io/file_output.hpp"
#include "program_exit.hpp"

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

namespace {

struct Options {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::vector<uint32_t> clients{1, 8, 32, 64};
  uint32_t prompt = 128, tokens = 128, requests = 2, vocab = 262144;
  uint32_t chat_cache = 0;  // > 0: the prompt-cache test with a system prompt of about this many tokens
  std::optional<uint32_t> seed;  // of the random prompts; none: a random one
  std::string json_out;
};

// One streamed request's timeline.
struct Timeline {
  Clock::time_point sent, first;
  std::vector<double> gaps;  // seconds between consecutive chunks with text
  uint32_t tokens = 0;       // completion_tokens from the usage chunk
  uint32_t cached = 0;
  bool ok = false;
  std::string error;
};

// POSTs `body` with stream: true and reads the SSE chunks as they arrive.
net::awaitable<Timeline> stream_request(const Options& opt, const std::string& route, const Json& body) {
  Timeline t;
  beast::tcp_stream stream(co_await net::this_coro::executor);
  boost::system::error_code ec;
  co_await stream.async_connect(tcp::endpoint(net::ip::make_address(opt.host), opt.port),
                                net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    t.error = "connect: " + ec.message();
    co_return t;
  }
  http::request<http::string_body> req{http::verb::post, route, 11};
  req.set(http::field::host, opt.host);
  req.set(http::field::content_type, "application/json");
  req.body() = body.dump();
  req.prepare_payload();
  t.sent = Clock::now();
  co_await http::async_write(stream, req, net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    t.error = "write: " + ec.message();
    co_return t;
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64u << 20);
  std::string events;  // SSE text not yet split into events
  Clock::time_point last;
  bool any = false;
  // Called as each chunk's bytes arrive (Beast keeps a reference: a named callback).
  auto on_chunk = [&](uint64_t, beast::string_view data, boost::system::error_code&) -> size_t {
    const auto now = Clock::now();
    events.append(data.data(), data.size());
    for (size_t cut; (cut = events.find("\n\n")) != std::string::npos; events.erase(0, cut + 2)) {
      const std::string event = events.substr(0, cut);
      if (!event.starts_with("data: ") || event == "data: [DONE]") continue;
      const Json j = Json::parse(event.substr(6), nullptr, false);
      if (j.is_discarded()) continue;
      if (j.contains("error")) t.error = j["error"].value("message", "error event");
      if (j.contains("usage") && j["usage"].is_object()) {
        t.tokens = j["usage"].value("completion_tokens", 0u);
        t.cached = j["usage"]["prompt_tokens_details"].value("cached_tokens", 0u);
      }
      if (!j.contains("choices") || j["choices"].empty()) continue;
      const Json& c = j["choices"][0];
      const std::string text = c.contains("delta") ? c["delta"].value("content", "") : c.value("text", "");
      if (text.empty()) continue;
      if (!any) t.first = now, any = true;
      else t.gaps.push_back(std::chrono::duration<double>(now - last).count());
      last = now;
    }
    return data.size();
  };
  parser.on_chunk_body(on_chunk);
  co_await http::async_read(stream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
  if (ec && ec != http::error::end_of_stream) t.error = "read: " + ec.message();
  else if (parser.get().result() != http::status::ok)
    t.error = "HTTP " + std::to_string(parser.get().result_int()) + ": " + parser.get().body();
  t.ok = t.error.empty() && any;
  if (!any && t.error.empty()) t.error = "no text came back";
  co_return t;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5))];
}

// N clients, each sending opt.requests completions in turn.
Json run_clients(const Options& opt, uint32_t n, std::mt19937& rng) {
  net::io_context ioc;
  std::vector<Timeline> all;
  std::vector<std::vector<Json>> bodies(n);
  const int32_t margin = int32_t(std::min(1000u, opt.vocab / 8));  // clear of the special tokens at both ends
  std::uniform_int_distribution<int32_t> token(margin, int32_t(opt.vocab) - margin);
  for (auto& list : bodies)
    for (uint32_t r = 0; r < opt.requests; ++r) {
      std::vector<int32_t> ids{2};  // <bos>
      while (ids.size() < opt.prompt) ids.push_back(token(rng));
      list.push_back({{"prompt", ids}, {"max_tokens", opt.tokens}, {"temperature", 0}, {"ignore_eos", true},
                      {"stream", true}, {"stream_options", {{"include_usage", true}}}});
    }
  const auto start = Clock::now();
  for (uint32_t c = 0; c < n; ++c)
    net::co_spawn(ioc, [&, c]() -> net::awaitable<void> {
      for (const Json& body : bodies[c]) all.push_back(co_await stream_request(opt, "/v1/completions", body));
    }, net::detached);
  ioc.run();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> ttft, itl;
  uint64_t tokens = 0, cached = 0, failed = 0;
  std::string first_error;
  for (const Timeline& t : all) {
    if (!t.ok) {
      ++failed;
      if (first_error.empty()) first_error = t.error;
      continue;
    }
    ttft.push_back(std::chrono::duration<double>(t.first - t.sent).count());
    itl.insert(itl.end(), t.gaps.begin(), t.gaps.end());
    tokens += t.tokens;
    cached += t.cached;
  }
  Json row = {{"clients", n},
              {"requests", all.size()},
              {"failed", failed},
              {"generated_tokens", tokens},
              {"cached_prompt_tokens", cached},
              {"seconds", wall},
              {"tokens_per_second", double(tokens) / wall},
              {"ttft_p50_ms", 1e3 * percentile(ttft, 0.5)},
              {"ttft_p99_ms", 1e3 * percentile(ttft, 0.99)},
              {"itl_p50_ms", 1e3 * percentile(itl, 0.5)},
              {"itl_p99_ms", 1e3 * percentile(itl, 0.99)}};
  if (!first_error.empty()) row["first_error"] = first_error;
  return row;
}

// A second chat turn: the first turn carries a long system prompt; the second
// repeats the conversation plus a new question, once with the prompt cache
// (the slot's KV is reused) and once with cache_prompt false.
Json run_chat_cache(const Options& opt) {
  std::string system;
  static const char* words[] = {"harbour", "tide", "lantern", "storm", "compass", "anchor", "gull", "rope"};
  for (uint32_t i = 0; system.size() < opt.chat_cache * 6; ++i) system += std::string(words[i % 8]) + " ";
  Json messages = Json::array({{{"role", "system"}, {"content", system}},
                               {{"role", "user"}, {"content", "Describe the harbour."}}});
  const auto once = [&](const Json& body) {
    net::io_context ioc;
    Timeline t;
    net::co_spawn(ioc, [&]() -> net::awaitable<void> { t = co_await stream_request(opt, "/v1/chat/completions", body); },
                  net::detached);
    ioc.run();
    return t;
  };
  Json out = Json::object();
  const Json first = {{"messages", messages}, {"max_tokens", 32}, {"temperature", 0}, {"ignore_eos", true},
                      {"stream", true}, {"stream_options", {{"include_usage", true}}}};
  const Timeline t1 = once(first);
  out["first_turn_ttft_ms"] = 1e3 * std::chrono::duration<double>(t1.first - t1.sent).count();
  // The answer as the client saw it is not kept here; any assistant text
  // extends the conversation the same way for both runs.
  messages.push_back({{"role", "assistant"}, {"content", "The harbour is calm."}});
  messages.push_back({{"role", "user"}, {"content", "And at night?"}});
  for (bool cache : {true, false}) {
    Json body = first;
    body["messages"] = messages;
    body["cache_prompt"] = cache;
    once(first);  // the slot holds the first turn again
    const Timeline t = once(body);
    const std::string key = cache ? "with_cache" : "without_cache";
    out[key] = {{"ttft_ms", 1e3 * std::chrono::duration<double>(t.first - t.sent).count()},
                {"cached_tokens", t.cached},
                {"ok", t.ok},
                {"error", t.error}};
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"unicorn-serve-bench: concurrent streaming clients against an OpenAI-compatible server"};
  Options opt;
  app.add_option("--host", opt.host)->capture_default_str();
  app.add_option("--port", opt.port)->capture_default_str();
  app.add_option("--clients", opt.clients, "client counts to run, in turn")->delimiter(',')->capture_default_str();
  app.add_option("--prompt", opt.prompt, "prompt tokens per request")->capture_default_str();
  app.add_option("--tokens", opt.tokens, "generated tokens per request")->capture_default_str();
  app.add_option("--requests", opt.requests, "requests per client, one after another")->capture_default_str();
  app.add_option("--vocab", opt.vocab, "vocabulary size the random prompt ids are drawn from")->capture_default_str();
  app.add_option("--chat-cache", opt.chat_cache, "run the second-chat-turn test with a system prompt of ~N tokens");
  app.add_option("--seed", opt.seed, "seed of the random prompts (default: a random one, printed)");
  app.add_option("--json", opt.json_out, "also write the results as JSON to this file");
  if (const auto status = unicorn::tools::parse(app, argc, argv, "unicorn-serve-bench")) return *status;

  try {
    Json results = Json::object();
    const uint32_t seed = opt.seed ? *opt.seed : std::random_device{}();
    std::mt19937 rng(seed);
    if (opt.chat_cache) {
      results["chat_cache"] = run_chat_cache(opt);
      std::printf("%s\n", results["chat_cache"].dump(2).c_str());
    } else {
      std::printf("prompts of seed %u\n", seed);
      std::printf("%8s %9s %12s %10s %10s %10s %10s %8s\n", "clients", "requests", "tokens/s", "TTFT p50", "TTFT p99",
                  "ITL p50", "ITL p99", "cached");
      results["seed"] = seed;
      results["runs"] = Json::array();
      for (uint32_t n : opt.clients) {
        const Json row = run_clients(opt, n, rng);
        results["runs"].push_back(row);
        std::printf("%8u %9u %12.1f %8.1fms %8.1fms %8.2fms %8.2fms %8llu%s\n", n, row["requests"].get<uint32_t>(),
                    row["tokens_per_second"].get<double>(), row["ttft_p50_ms"].get<double>(),
                    row["ttft_p99_ms"].get<double>(), row["itl_p50_ms"].get<double>(), row["itl_p99_ms"].get<double>(),
                    static_cast<unsigned long long>(row["cached_prompt_tokens"].get<uint64_t>()),
                    row["failed"].get<uint64_t>() ? (" FAILED " + row["first_error"].get<std::string>()).c_str() : "");
        std::fflush(stdout);
      }
    }
    if (!opt.json_out.empty()) unicorn::io::write_file(opt.json_out, results.dump(2) + '\n');
    for (const auto& row : results.value("runs", Json::array()))
      if (row["failed"].get<uint64_t>()) return 1;
    unicorn::io::check_stdout();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unicorn-serve-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
