// unicorn/server/http.hpp — the HTTP front end: Boost.Beast over Asio C++20
// coroutines, one I/O thread for every connection, the scheduler's thread for
// the GPU. serve() listens first (GET /health answers 503 while the model
// loads), then runs the scheduler until SIGINT/SIGTERM.
//
// Routes, as the OpenAI API and llama-server define them:
//   POST /v1/chat/completions, /v1/completions   (stream or not; SSE chunks)
//   GET  /v1/models, /v1/models/{id}
//   GET  /health, /metrics                        (no API key needed)
//   GET  /, /index.html                           the chat page (chat_page.hpp; no API key
//                                                  needed, its API calls need one; --no-webui: 404)
//   POST /tokenize, /detokenize
// and, as Ollama defines them (ollama_api.hpp):
//   POST /api/chat, /api/generate                 (streamed as NDJSON unless "stream": false)
//   POST /api/show; GET /api/tags, /api/ps, /api/version
//   OPTIONS on any of them: a CORS preflight (ServerOptions::cors_origins)
// Every error is an OpenAI error object (Ollama's {"error": "..."} on /api/*)
// with a 4xx (the client's fault) or 5xx (ours) status. A client that goes
// away, mid-stream or while waiting, frees its slot at the scheduler's next
// step: each completion watches its socket.
// Here: listening, connections, routing, authorization and shutdown. A
// completion's jobs come from job_for_request.hpp, its answer is written by
// answers.hpp, and every reply goes out through http_reply.hpp.
#pragma once

// The engine (Vulkan-Hpp) before Asio: Asio's serial ports pull in
// <termios.h>, whose baud-rate macros (B0, ...) break Vulkan-Hpp's templates.
#include "unicorn/server/answers.hpp"
#include "unicorn/server/http_reply.hpp"
#include "unicorn/server/job_for_request.hpp"
#include "unicorn/server/metrics.hpp"
#include "unicorn/server/ollama_api.hpp"
#include "unicorn/server/scheduler.hpp"
#include "unicorn/server/serve.hpp"

#include <atomic>
#include <cctype>
#include <chrono>
#include <csignal>
#include <sys/socket.h>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "unicorn/server/chat_page.hpp"
#include "unicorn/server/cors.hpp"
#include "unicorn/server/http_request.hpp"

namespace unicorn::server {

namespace detail_http {

inline std::string random_hex(std::mt19937_64& rng, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < digits; ++i) s += kHex[rng() % 16];
  return s;
}

// The credentials of an "Authorization: Bearer <token>" header, or nothing:
// the scheme is case-insensitive and followed by one or more spaces (RFC 9110 11.4).
inline std::optional<std::string_view> bearer_token(std::string_view auth) {
  constexpr std::string_view kScheme = "bearer";
  if (auth.size() <= kScheme.size() || auth[kScheme.size()] != ' ') return std::nullopt;
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(auth[i])) != kScheme[i]) return std::nullopt;
  const size_t token = auth.find_first_not_of(' ', kScheme.size());
  if (token == std::string_view::npos) return std::nullopt;
  return auth.substr(token);
}

// Equal strings in time that does not depend on where they differ.
inline bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= uint8_t(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0;
}

}  // namespace detail_http

// The server: its state, shared by the I/O thread's sessions and the
// scheduler's thread.
class Server {
 public:
  explicit Server(ServerOptions opt) : opt_(std::move(opt)), acceptor_(ioc_), signals_(ioc_, SIGINT, SIGTERM) {
    boost::system::error_code ec;
    tcp::resolver resolver(ioc_);
    const auto found = resolver.resolve(opt_.host, std::to_string(opt_.port), tcp::resolver::passive, ec);
    if (ec || found.empty())
      throw Error("server: cannot resolve host '" + opt_.host + "': " + (ec ? ec.message() : "no address"));
    const tcp::endpoint at = found.begin()->endpoint();
    acceptor_.open(at.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(at, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) throw Error("server: cannot listen on " + opt_.host + ":" + std::to_string(opt_.port) + ": " + ec.message());
    port_ = acceptor_.local_endpoint().port();
  }

  uint16_t port() const { return port_; }
  Metrics& metrics() { return metrics_; }

  // Serves until SIGINT/SIGTERM (or a failed engine): listens now, calls
  // `load` (requests meanwhile get 503), then runs the scheduler on this
  // thread. Returns the process's exit status: 0 after a clean shutdown, 1
  // when loading or the engine failed.
  int run(const std::function<Model()>& load) {
    std::fprintf(stderr, "server: listening on http://%s:%u\n", opt_.host.c_str(), port_);
    net::co_spawn(ioc_, accept_loop(), net::detached);
    watch_signals();
    std::thread io([&] { ioc_.run(); });
    int status = 0;
    try {
      const Model model = load();
      model_.emplace(model);
      context_ = opt_.context ? opt_.context : model.engine.context_size();  // the KV cache's positions
      model.engine.set_context_limit(context_);
      facts_.emplace(model_facts(model));
      const uint32_t slots = opt_.slots ? opt_.slots : model.engine.streams();
      scheduler_.emplace(model.engine, model.tokenizer,
                         SchedulerOptions{slots, opt_.queue_limit, opt_.batch_invariance, opt_.prefill_overlap}, metrics_);
      if (model.images) scheduler_->set_image_encoder(model.images);
      if (model.draft) scheduler_->set_draft(model.draft);
      metrics_.ready(true);
      ready_ = true;
      std::fprintf(stderr, "server: %s ready on http://%s:%u (%u slot%s of %u tokens; decode steps %s)\n",
                   opt_.model_id.c_str(), opt_.host.c_str(), port_, slots, slots == 1 ? "" : "s", context_,
                   !model.engine.batch_passes_differ() ? "run the same kernels at any batch size"
                   : opt_.batch_invariance == BatchInvariance::Always ? "batch invariant"
                   : opt_.batch_invariance == BatchInvariance::Off    ? "by size: not batch invariant"
                                                                      : "batch invariant where a request is seeded or greedy");
      if (!stopping_) scheduler_->run();
      if (scheduler_->failed()) {
        std::fprintf(stderr, "server: the engine failed (%s): the requests in flight ended with a 500; exiting "
                             "for a supervisor to restart the server\n", scheduler_->failure().c_str());
        status = 1;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "server: %s\n", e.what());
      status = 1;
    }
    net::post(ioc_, [this] { begin_shutdown(true); });
    // Sessions finish writing what the scheduler ended (a few ms), and
    // connections already accepted get their request answered (503) or are
    // closed once idle for kShutdownDrain; then the I/O thread stops.
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while ((in_flight_ > 0 || connections_ > 0) && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ioc_.stop();
    io.join();
    return status;
  }

 private:
  using Stream = HttpStream;
  using Request = HttpRequest;
  using Headers = HttpHeaders;
  using Reply = HttpReply;
  Headers cors_headers(const Request& req) const { return server::cors_headers(opt_.cors_origins, req); }
  Reply preflight(const Request& req, const std::string& allowed) const {
    return {http::status::no_content, "", "text/plain", preflight_headers(opt_.cors_origins, req, allowed)};
  }

  // --- connections ---

  net::awaitable<void> accept_loop() {
    while (acceptor_.is_open()) {
      boost::system::error_code ec;
      tcp::socket socket = co_await acceptor_.async_accept(net::redirect_error(net::use_awaitable, ec));
      if (ec) {
        if (!acceptor_.is_open()) break;
        continue;  // a connection that failed before we saw it (or out of descriptors): keep serving
      }
      if (connections_ >= opt_.max_connections) {
        net::co_spawn(ioc_, refuse(std::move(socket)), net::detached);
        continue;
      }
      net::co_spawn(ioc_, session(std::move(socket)), net::detached);
    }
  }

  net::awaitable<void> refuse(tcp::socket socket) {
    Stream stream(std::move(socket));
    stream.expires_after(std::chrono::seconds(5));
    const Reply reply = error_reply({503, "too many open connections; retry later", "unavailable_error", "",
                                     "too_many_connections"});
    co_await send_reply(stream, reply, false);
  }

  net::awaitable<void> session(tcp::socket socket) {
    connections_++;
    try {
      co_await serve_connection(std::move(socket));
    } catch (const std::exception& e) {  // a bug of ours: close this connection, keep serving
      std::fprintf(stderr, "server: connection closed on an unexpected error: %s\n", e.what());
    }
    connections_--;
  }

  net::awaitable<void> serve_connection(tcp::socket socket) {
    Stream stream(std::move(socket));
    beast::flat_buffer buffer;
    bool keep_alive = true;
    while (keep_alive) {
      RequestParser parser;
      limit_request(parser, opt_.max_body_bytes);
      boost::system::error_code ec;
      // A stopping server still reads a request that is on its way, for a
      // 503 rather than a reset, but waits for one only kShutdownDrain.
      stream.expires_after(stopping_ ? kShutdownDrain : opt_.idle_timeout);
      idle_.insert(&stream);
      co_await http::async_read_header(stream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
      idle_.erase(&stream);
      if (!ec && body_length_unknowable(parser)) {
        co_await send_reply(stream, *read_error(http::error::bad_transfer_encoding), false);
        break;
      }
      if (!ec && expects_continue(parser)) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        co_await net::async_write(stream, net::buffer(kContinue.data(), kContinue.size()),
                                  net::redirect_error(net::use_awaitable, ec));
      }
      if (!ec) co_await http::async_read(stream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
      if (ec) {
        if (auto reply = read_error(ec)) co_await send_reply(stream, *reply, false);
        break;
      }
      Request req = parser.release();
      keep_alive = req.keep_alive() && !stopping_;
      const auto started = Clock::now();
      in_flight_++;
      const int status = co_await handle(stream, req, keep_alive);
      in_flight_--;
      if (opt_.log_requests)
        std::fprintf(stderr, "%s %s %d %.1f ms\n", std::string(req.method_string()).c_str(),
                     std::string(req.target()).c_str(), status,
                     std::chrono::duration<double, std::milli>(Clock::now() - started).count());
    }
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  // The answer to a request that could not be read: 413 past the body limit,
  // 431 past the header limit, 400 for anything else malformed; none when the
  // client closed or went quiet.
  std::optional<Reply> read_error(const boost::system::error_code& ec) {
    if (ec == http::error::end_of_stream || ec == net::error::eof || ec == beast::error::timeout ||
        ec == net::error::connection_reset || ec == net::error::operation_aborted || ec == net::error::broken_pipe)
      return std::nullopt;
    const auto record = [&](int status, ApiError e) {
      metrics_.request("malformed", status);
      return error_reply(e);
    };
    if (ec == http::error::body_limit)
      return record(413, {413, "the request body is over " + std::to_string(opt_.max_body_bytes) + " bytes", "invalid_request_error", "",
                          "body_too_large"});
    if (ec == http::error::header_limit)
      return record(431, {431, "the request's headers are over " + std::to_string(kMaxHeaderBytes / 1024) + " KiB",
                          "invalid_request_error", "", "headers_too_large"});
    return record(400, bad_request("malformed HTTP request: " + ec.message(), "", "malformed_request"));
  }

  // --- routing ---

  // Answers one request; returns its status (499: the client went away first).
  net::awaitable<int> handle(Stream& stream, Request& req, bool& keep_alive) {
    Routed r = route(req);
    const Headers cors = cors_headers(req);
    if (r.reply) {
      if (r.reply->status != http::status::no_content)  // a preflight has its own
        r.reply->headers.insert(r.reply->headers.end(), cors.begin(), cors.end());
      metrics_.request(r.endpoint, int(r.reply->status));
      co_await send_reply(stream, *r.reply, keep_alive, req.version());
      co_return int(r.reply->status);
    }
    std::vector<std::shared_ptr<Job>> jobs{r.job};
    for (uint32_t i = 1; i < r.request->n; ++i) jobs.push_back(later_choice(r.job, i));
    co_return co_await complete(stream, req, keep_alive, *r.request, std::move(jobs), r.endpoint, cors, r.ollama);
  }

  // Where a request goes: an answer made at once, or a completion to run.
  struct Routed {
    std::string endpoint;  // the metrics' name for the route
    std::optional<Reply> reply;
    std::optional<CompletionRequest> request;
    std::shared_ptr<Job> job;
    std::optional<OllamaHead> ollama;  // an Ollama request's: its answer takes Ollama's shapes
  };
  Routed route(const Request& req) {
    const std::string path = request_path(req.target());
    if (path.starts_with("/api/")) return route_ollama(req, path);
    const auto method = req.method();
    const auto answer = [](std::string endpoint, Reply r) { return Routed{std::move(endpoint), std::move(r), {}, {}}; };
    const auto wrong_method = [&](const std::string& allowed, std::string endpoint) {
      return answer(std::move(endpoint), wrong_method_reply(req, path, allowed, Dialect::OpenAI));
    };

    const bool chat = path == "/v1/chat/completions" || path == "/chat/completions";
    const bool text = path == "/v1/completions" || path == "/completions";
    const bool models_path = path == "/v1/models" || path.starts_with("/v1/models/");
    if (method == http::verb::options) {  // before the API key: a preflight carries none
      const bool get = path == "/health" || path == "/metrics" || models_path;
      if (!get && !chat && !text && path != "/tokenize" && path != "/detokenize")
        return answer("other", error_reply({404, "no route " + path, "not_found_error", "", "not_found"}));
      return answer("preflight", preflight(req, get ? "GET, OPTIONS" : "POST, OPTIONS"));
    }
    if (path == "/health") {
      if (method != http::verb::get) return wrong_method("GET", "health");
      return answer("health", ready_ ? json_reply(200, {{"status", "ok"}}) : loading());
    }
    if (path == "/metrics") {
      if (method != http::verb::get) return wrong_method("GET", "metrics");
      return answer("metrics", {http::status::ok, metrics_.text(), "text/plain; version=0.0.4; charset=utf-8"});
    }
    if ((path == "/" || path == "/index.html") && opt_.webui)
      return method != http::verb::get ? wrong_method("GET", "webui") : answer("webui", chat_page_reply());
    if (!chat && !text && !models_path && path != "/tokenize" && path != "/detokenize")
      return answer("other", error_reply({404, "no route " + path, "not_found_error", "", "not_found"}));
    const std::string endpoint = chat ? "chat_completions" : text ? "completions" : models_path ? "models"
                                                                                               : path.substr(1);
    if (!authorized(req)) return answer("auth", error_reply(unauthorized()));
    if (models_path) return method != http::verb::get ? wrong_method("GET", endpoint) : answer(endpoint, models(path));
    if (method != http::verb::post) return wrong_method("POST", endpoint);
    if (!ready_) return answer(endpoint, loading());
    if (path == "/tokenize") return answer(endpoint, guarded([&] { return tokenize(req.body()); }));
    if (path == "/detokenize") return answer(endpoint, guarded([&] { return detokenize(req.body()); }));
    Routed r{endpoint, {}, {}, {}};
    try {
      r.request = parse_completion_request(req.body(), chat ? CompletionRequest::Kind::Chat : CompletionRequest::Kind::Text);
      if (r.request->n > scheduler_->slots())
        throw bad_request("'n' = " + std::to_string(r.request->n) + ": this server answers at most " +
                              std::to_string(scheduler_->slots()) + " choices at once (its slots)", "n", "invalid_value");
      r.job = make_job(*r.request, served(), rng_);
    } catch (const ApiError& e) {
      r.reply = error_reply(e);
    } catch (const Error& e) {  // the tokenizer or the template refused the text
      r.reply = error_reply(bad_request(e.what()));
    }
    return r;
  }

  // Ollama's API (ollama_api.hpp): the same key, checks, scheduler and
  // metrics as the OpenAI routes, its own shapes. Not "/": Ollama answers
  // "Ollama is running" there, but this server's "/" is its own.
  Routed route_ollama(const Request& req, const std::string& path) {
    const auto answer = [](std::string endpoint, Reply r) { return Routed{std::move(endpoint), std::move(r), {}, {}}; };
    const bool get = path == "/api/tags" || path == "/api/ps" || path == "/api/version";
    const bool chat = path == "/api/chat", generate = path == "/api/generate";
    if (!get && !chat && !generate && path != "/api/show")
      return answer("other", error_reply({404, "no route " + path, "not_found_error", "", "not_found"}, Dialect::Ollama));
    const std::string allowed = get ? "GET" : "POST";
    if (req.method() == http::verb::options) return answer("preflight", preflight(req, allowed + ", OPTIONS"));
    if (!authorized(req)) return answer("auth", error_reply(unauthorized(), Dialect::Ollama));
    const std::string endpoint = "api_" + path.substr(5);  // api_chat, api_tags, ...
    if (req.method() != (get ? http::verb::get : http::verb::post))
      return answer(endpoint, wrong_method_reply(req, path, allowed, Dialect::Ollama));
    if (path == "/api/version") return answer(endpoint, json_reply(200, ollama_version()));
    if (!ready_) return answer(endpoint, error_reply(loading_error(), Dialect::Ollama));
    if (path == "/api/tags") return answer(endpoint, json_reply(200, ollama_tags(*facts_)));
    if (path == "/api/ps") return answer(endpoint, json_reply(200, ollama_ps(*facts_)));
    if (path == "/api/show")
      return answer(endpoint, guarded([&] { return json_reply(200, ollama_show(*facts_, req.body())); }, Dialect::Ollama));
    Routed r{endpoint, {}, {}, {}};
    try {
      OllamaRequest o = parse_ollama_request(req.body(), chat ? OllamaRequest::Route::Chat : OllamaRequest::Route::Generate,
                                             context_);
      if (!ollama::names_model(o.model, opt_.model_id)) throw ollama::model_not_found(o.model);
      const OllamaHead head{o.route, o.model};
      if (o.load_only) return answer(endpoint, json_reply(200, head.loaded()));
      r.job = make_job(o.completion, served(), rng_);
      if (o.num_ctx) {  // the prompt and the answer within num_ctx tokens, as Ollama's context would hold them
        const size_t prompt = r.job->prompt.size();
        if (prompt >= *o.num_ctx)
          throw bad_request("the prompt is " + std::to_string(prompt) + " tokens; options.num_ctx (" +
                                std::to_string(*o.num_ctx) + ") leaves no room for an answer",
                            "options.num_ctx", "context_length_exceeded");
        r.job->max_tokens = std::min<uint32_t>(r.job->max_tokens, *o.num_ctx - uint32_t(prompt));
      }
      r.request = std::move(o.completion);
      r.ollama = head;
    } catch (const ApiError& e) {
      r.job.reset();
      r.reply = error_reply(e, Dialect::Ollama);
    } catch (const Error& e) {  // the tokenizer or the template refused the text
      r.job.reset();
      r.reply = error_reply(bad_request(e.what()), Dialect::Ollama);
    }
    return r;
  }

  // The API key's check ("Authorization: Bearer <key>"), when the server has one.
  bool authorized(const Request& req) const {
    if (opt_.api_key.empty()) return true;
    const std::string auth(req[http::field::authorization]);
    const auto token = detail_http::bearer_token(auth);
    return token && detail_http::same_secret(*token, opt_.api_key);
  }
  static ApiError unauthorized() {
    return {401, "invalid API key: send 'Authorization: Bearer <key>'", "authentication_error", "", "invalid_api_key"};
  }
  static Reply wrong_method_reply(const Request& req, const std::string& path, const std::string& allowed,
                                  Dialect dialect) {
    Reply r = error_reply({405, std::string(req.method_string()) + " " + path + " is not allowed; use " + allowed,
                           "invalid_request_error", "", "method_not_allowed"}, dialect);
    r.headers.push_back({http::field::allow, allowed});
    return r;
  }

  template <class F>
  Reply guarded(F&& f, Dialect dialect = Dialect::OpenAI) {
    try {
      return f();
    } catch (const ApiError& e) {
      return error_reply(e, dialect);
    } catch (const Error& e) {
      return error_reply(bad_request(e.what()), dialect);
    }
  }

  static Reply chat_page_reply() {
    ChatPage page = chat_page();
    Reply r{http::status::ok, std::move(page.html), "text/html; charset=utf-8"};
    r.headers.push_back({http::field::cache_control, "no-store"});  // a fresh nonce each time
    r.named_headers = {{"Content-Security-Policy", std::move(page.csp)},
                       {"X-Content-Type-Options", "nosniff"},
                       {"Referrer-Policy", "no-referrer"}};
    return r;
  }

  static ApiError loading_error() { return {503, "the model is loading", "unavailable_error", "", "loading"}; }
  Reply loading() const { return error_reply(loading_error()); }

  Reply models(const std::string& path) const {
    const Json entry = {{"id", opt_.model_id},
                        {"object", "model"},
                        {"created", started_},
                        {"owned_by", "unicorn"}};
    if (path == "/v1/models") return json_reply(200, {{"object", "list"}, {"data", Json::array({entry})}});
    if (path.substr(std::string("/v1/models/").size()) == opt_.model_id) return json_reply(200, entry);
    return error_reply({404, "The model '" + path.substr(11) + "' does not exist", "invalid_request_error", "model",
                        "model_not_found"});
  }

  // What Ollama's /api/tags, /api/show and /api/ps say of the model.
  OllamaModelFacts model_facts(const Model& model) const {
    const DeploymentConfig& c = model.engine.config();
    OllamaModelFacts f;
    f.id = opt_.model_id;
    f.dims = c.model;
    for (const TensorSlot& t : model.engine.layout().tensors)
      if (t.arena == Arena::Weights && t.role != Role::LmHead)  // a separate LM head copies the tied embedding
        f.parameters += t.rows * t.cols;
    f.weight_bytes = model.engine.layout().weight_bytes();
    const std::string_view named = scheme_name(c.scheme);
    f.quantization = !named.empty() ? std::string(named) : std::string(format_name(c.scheme.ffn));
    f.context = context_;
    f.loaded_at = started_;
    f.bos = model.tokenizer.bos_id();
    f.eos = model.tokenizer.eos_id();
    f.end_of_turn = model.tokenizer.end_of_turn_id();
    f.vocab = c.model.vocab;
    f.vision = bool(model.images);
    return f;
  }

  // --- tokenizer endpoints (llama-server's; api.hpp) ---

  ServedModel served() const { return {opt_.model_id, *model_, context_}; }

  Reply tokenize(const std::string& body) const {
    return json_reply(200, tokenize_response(model_->tokenizer, body));
  }
  Reply detokenize(const std::string& body) const {
    return json_reply(200, detokenize_response(model_->tokenizer, body));
  }

  // --- completions ---

  // Runs a completion and answers it, streamed or whole, in OpenAI's shapes
  // or (`ollama`) Ollama's. `jobs`: one per choice (the API's n), the first
  // leading (Job::leader).
  net::awaitable<int> complete(Stream& stream, Request& req, bool& keep_alive, const CompletionRequest& r,
                               std::vector<std::shared_ptr<Job>> jobs, const std::string& endpoint,
                               const Headers& cors, const std::optional<OllamaHead>& ollama) {
    metrics_.answering(+1);
    const int status = co_await run_completion(stream, req, keep_alive, r, std::move(jobs), cors, ollama);
    metrics_.request(endpoint, status);
    metrics_.answering(-1);
    co_return status;
  }

  net::awaitable<int> run_completion(Stream& stream, Request& req, bool& keep_alive, const CompletionRequest& r,
                                     std::vector<std::shared_ptr<Job>> jobs, const Headers& cors,
                                     const std::optional<OllamaHead>& ollama) {
    const Dialect dialect = ollama ? Dialect::Ollama : Dialect::OpenAI;
    auto waker = std::make_shared<Waker>(co_await net::this_coro::executor);
    for (const auto& job : jobs)
      job->notify = [weak = std::weak_ptr<Waker>(waker), ex = waker->timer.get_executor()] {
        net::post(ex, [weak] {
          if (auto w = weak.lock()) w->signal();
        });
      };
    if (!scheduler_->submit(jobs)) {
      const ApiError refusal =
          scheduler_->stopping()
              ? ApiError{503, "the server is shutting down", "unavailable_error", "", "shutting_down"}
              : ApiError{503, "the server is busy: every slot is taken and the queue of " +
                                  std::to_string(opt_.queue_limit) + " is full; retry later",
                         "unavailable_error", "", "queue_full"};
      metrics_.rejected(refusal.code);
      const Reply reply = with_headers(error_reply(refusal, dialect), cors);
      co_await send_reply(stream, reply, keep_alive, req.version());
      co_return 503;
    }
    stream.expires_never();
    auto& socket = stream.socket();
    watch_client(socket, jobs, waker, /*can_probe=*/!r.stream && req.version() == 11, tcp::socket::wait_read);

    int status = 0;
    const Job& job = *jobs[0];
    if (ollama) {
      // Ollama's logprobs: the chat API's token entries, as a plain array.
      const auto logprobs = [&](std::span<const TokenLogprobEntry> entries) {
        return job.sampling.logprobs ? chat_logprobs(entries, model_->tokenizer)["content"] : Json(nullptr);
      };
      const auto stats = [&](const Job::Progress& end) {
        return ollama_stats(job.arrived, end.first_token, end.ended_at, end.usage);
      };
      if (r.stream) {
        const StreamShape ndjson{
            dialect, "application/x-ndjson", [](const Json& j) { return detail_http::dump(j) + "\n"; },
            [&](uint32_t, const std::string& text, bool, std::vector<TokenLogprobEntry>& entries) {
              return ollama->chunk(text, logprobs(std::exchange(entries, {})));
            },
            /*first_piece_always=*/false,
            [&](uint32_t, const Job::Progress& end, std::vector<TokenLogprobEntry>& entries) {
              return std::vector<Json>{ollama->final("", *end.finish, stats(end), logprobs(std::exchange(entries, {})))};
            },
            [](const Usage&) { return std::vector<Json>{}; }, ""};
        status = co_await stream_completion(stream, req, jobs, *waker, ndjson, cors, kNoEcho);
      } else {
        const WholeAnswer answer = [&](uint32_t, const std::string& text, const Job::Progress& end,
                                       std::span<const TokenLogprobEntry> entries) {
          return ollama->final(text, *end.finish, stats(end), logprobs(entries));
        };
        status = co_await whole_completion(stream, req, jobs, *waker, dialect, answer, keep_alive, cors, kNoEcho);
      }
    } else {
      const ResponseHead head{r.kind, std::string(r.kind == CompletionRequest::Kind::Chat ? "chatcmpl-" : "cmpl-") +
                                          detail_http::random_hex(rng_, 24),
                              std::chrono::duration_cast<std::chrono::seconds>(
                                  std::chrono::system_clock::now().time_since_epoch()).count(),
                              opt_.model_id, "unicorn-" + std::string(model_->engine.config().model.name)};
      // echo: the answer's text starts with the prompt, as the client gave it.
      const std::string echo = !r.echo ? std::string() : r.prompt_text ? *r.prompt_text
                                                                       : model_->tokenizer.decode(r.prompt_ids);
      // Per choice: bytes of text sent (the completions API's logprobs count them).
      std::vector<size_t> offsets(jobs.size(), 0);
      const auto lp = [&](uint32_t i, std::span<const TokenLogprobEntry> entries) {
        return logprobs_json(head, job, entries, offsets[i]);
      };
      if (r.stream) {
        const StreamShape sse{
            dialect, "text/event-stream", [](const Json& j) { return "data: " + detail_http::dump(j) + "\n\n"; },
            [&](uint32_t i, const std::string& text, bool first, std::vector<TokenLogprobEntry>& entries) {
              return head.chunk(text, std::nullopt, first, r.include_usage, lp(i, std::exchange(entries, {})), i);
            },
            /*first_piece_always=*/true,  // the role's delta
            [&](uint32_t i, const Job::Progress& end, std::vector<TokenLogprobEntry>& entries) {
              Json l = entries.empty() ? Json(nullptr) : lp(i, std::exchange(entries, {}));
              return std::vector<Json>{head.chunk("", end.finish, false, r.include_usage, std::move(l), i)};
            },
            [&](const Usage& usage) {
              return r.include_usage ? std::vector<Json>{head.usage_chunk(usage)} : std::vector<Json>{};
            },
            "data: [DONE]\n\n", r.tools,
            [&](uint32_t i, const std::string& held, const Job::Progress& end, bool first,
                std::vector<TokenLogprobEntry>& entries) {
              const auto calls = *end.finish == FinishReason::Stop ? read_calls(held, r.tools, rng_) : std::nullopt;
              if (!calls) return std::vector<Json>{};
              return std::vector<Json>{head.tool_calls_chunk(*calls, first, r.include_usage, lp(i, std::exchange(entries, {})), i),
                                       head.tool_calls_finish(r.include_usage, i)};
            }};
        status = co_await stream_completion(stream, req, jobs, *waker, sse, cors, echo);
      } else {
        const WholeAnswer answer = [&](uint32_t i, const std::string& text, const Job::Progress& end,
                                       std::span<const TokenLogprobEntry> entries) {
          const auto calls = *end.finish == FinishReason::Stop ? read_calls(text, r.tools, rng_) : std::nullopt;
          return head.response(text, *end.finish, end.usage, lp(i, entries), calls);
        };
        status = co_await whole_completion(stream, req, jobs, *waker, dialect, answer, keep_alive, cors, echo);
      }
    }
    boost::system::error_code ignored;
    socket.cancel(ignored);  // ends the watch
    if (std::ranges::any_of(jobs, [](const auto& j) { return bool(j->cancelled); })) keep_alive = false;
    if (!status) {  // the client went away: nginx's 499, "client closed request"
      metrics_.disconnect();
      status = 499;
    }
    co_return status;
  }

  // The logprobs object of a response or chunk (null when not asked):
  // `offset` is the completion's text before these tokens, in bytes.
  Json logprobs_json(const ResponseHead& head, const Job& job, std::span<const TokenLogprobEntry> entries,
                     size_t& offset) const {
    if (!job.sampling.logprobs) return nullptr;
    if (head.kind == CompletionRequest::Kind::Chat) return chat_logprobs(entries, model_->tokenizer);
    return completion_logprobs(entries, model_->tokenizer, offset);
  }

  // --- shutdown ---

  void watch_signals() {
    signals_.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec) return;
      const bool again = stopping_;
      std::fprintf(stderr, again ? "server: stopping now\n"
                                 : "server: stopping: no new requests; running ones finish (Ctrl-C again cancels them)\n");
      begin_shutdown(again);
      watch_signals();
    });
  }

  // On the I/O thread: close the listening socket and tell the scheduler;
  // after the grace period whatever still runs is cancelled. (ready_ says the
  // scheduler exists; run() checks stopping_ after setting it, so one of the
  // two threads always sees the other's flag.)
  void begin_shutdown(bool cancel_running) {
    if (!stopping_) {
      stopping_ = true;
      boost::system::error_code ignored;
      acceptor_.close(ignored);
      // Connections that were waiting for a request when the server began
      // to stop: one that has not sent it within kShutdownDrain is closed.
      drain_.expires_after(kShutdownDrain);
      drain_.async_wait([this](const boost::system::error_code& ec) {
        if (ec) return;
        boost::system::error_code ignored;
        for (Stream* s : idle_) s->socket().cancel(ignored);
      });
      grace_.expires_after(opt_.shutdown_grace);
      grace_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec && ready_) scheduler_->shutdown(true);
      });
    }
    if (ready_) scheduler_->shutdown(cancel_running);
  }

  ServerOptions opt_;
  net::io_context ioc_{1};
  tcp::acceptor acceptor_;
  net::signal_set signals_;
  net::steady_timer grace_{ioc_};
  net::steady_timer drain_{ioc_};
  static constexpr auto kShutdownDrain = std::chrono::milliseconds(250);
  uint16_t port_ = 0;
  Metrics metrics_;
  std::optional<Model> model_;               // set before ready_
  std::optional<Scheduler> scheduler_;       // set before ready_
  std::optional<OllamaModelFacts> facts_;    // set before ready_
  uint32_t context_ = 0;
  std::atomic<bool> ready_{false}, stopping_{false};
  std::atomic<uint32_t> in_flight_{0};  // requests being answered
  std::atomic<uint32_t> connections_{0};  // open, written by the I/O thread
  std::set<Stream*> idle_;                 // the I/O thread's: connections waiting for a request
  std::mt19937_64 rng_{std::random_device{}()};  // the I/O thread's: ids and unseeded requests' seeds
  int64_t started_ = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
};

}  // namespace unicorn::server
