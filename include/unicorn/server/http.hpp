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
#pragma once

// The engine (Vulkan-Hpp) before Asio: Asio's serial ports pull in
// <termios.h>, whose baud-rate macros (B0, ...) break Vulkan-Hpp's templates.
#include "unicorn/image/decode.hpp"
#include "unicorn/server/api.hpp"
#include "unicorn/server/metrics.hpp"
#include "unicorn/server/ollama_api.hpp"
#include "unicorn/server/scheduler.hpp"
#include "unicorn/server/serve.hpp"
#include "unicorn/text/chat_template.hpp"

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

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace detail_http {

inline std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

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
      std::fprintf(stderr, "server: %s ready on http://%s:%u (%u slots of %u tokens; decode steps %s)\n",
                   opt_.model_id.c_str(), opt_.host.c_str(), port_, slots, context_,
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
  using Stream = beast::tcp_stream;
  using Request = http::request<http::string_body>;
  using Headers = HttpHeaders;
  struct Reply {
    http::status status;
    std::string body;
    std::string content_type = "application/json";
    Headers headers;
    std::vector<std::pair<std::string, std::string>> named_headers;  // fields Beast has no enum for
  };

  Headers cors_headers(const Request& req) const { return server::cors_headers(opt_.cors_origins, req); }
  Reply preflight(const Request& req, const std::string& allowed) const {
    return {http::status::no_content, "", "text/plain", preflight_headers(opt_.cors_origins, req, allowed)};
  }

  static Reply json_reply(int status, const Json& j) {
    return {http::status(status), detail_http::dump(j) + "\n"};
  }
  static Reply with_headers(Reply r, const Headers& more) {
    r.headers.insert(r.headers.end(), more.begin(), more.end());
    return r;
  }
  // Which API a request speaks: its errors take that API's shape.
  enum class Dialect { OpenAI, Ollama };
  static Reply error_reply(const ApiError& e, Dialect dialect = Dialect::OpenAI) {
    Reply r = json_reply(e.status, dialect == Dialect::Ollama ? ollama::error_body(e) : e.body());
    if (e.status == 503) r.headers.push_back({http::field::retry_after, "1"});
    return r;
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
    co_await send(stream, reply, false);
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
        co_await send(stream, *read_error(http::error::bad_transfer_encoding), false);
        break;
      }
      if (!ec && expects_continue(parser)) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        co_await net::async_write(stream, net::buffer(kContinue.data(), kContinue.size()),
                                  net::redirect_error(net::use_awaitable, ec));
      }
      if (!ec) co_await http::async_read(stream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
      if (ec) {
        if (auto reply = read_error(ec)) co_await send(stream, *reply, false);
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

  net::awaitable<void> send(Stream& stream, const Reply& r, bool keep_alive, unsigned version = 11) {
    http::response<http::string_body> res{r.status, version};
    res.set(http::field::server, "unicorn");
    res.set(http::field::content_type, r.content_type);
    for (const auto& [f, v] : r.headers) res.set(f, v);
    for (const auto& [name, v] : r.named_headers) res.set(name, v);
    res.keep_alive(keep_alive);
    res.body() = r.body;
    res.prepare_payload();
    boost::system::error_code ec;
    stream.expires_after(std::chrono::seconds(30));
    co_await http::async_write(stream, res, net::redirect_error(net::use_awaitable, ec));
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
      co_await send(stream, *r.reply, keep_alive, req.version());
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
      r.job = make_job(*r.request);
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
      r.job = make_job(o.completion);
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

  Reply tokenize(const std::string& body) const {
    return json_reply(200, tokenize_response(model_->tokenizer, body));
  }
  Reply detokenize(const std::string& body) const {
    return json_reply(200, detokenize_response(model_->tokenizer, body));
  }

  // --- completions ---

  // The job for a checked request: its prompt's tokens (which must fit the
  // context), its sampling and its limits.
  std::shared_ptr<Job> make_job(const CompletionRequest& r) {
    if (!r.model.empty() && r.model != opt_.model_id)
      throw ApiError{404, "The model '" + r.model + "' does not exist; this server serves '" + opt_.model_id + "'",
                     "invalid_request_error", "model", "model_not_found"};
    const auto& tok = model_->tokenizer;
    auto job = std::make_shared<Job>();
    if (r.kind == CompletionRequest::Kind::Chat) {
      std::vector<std::shared_ptr<const std::string>> files;
      for (const auto& m : r.messages)
        for (const std::string& f : m.images) files.push_back(std::make_shared<const std::string>(f));
      if (!files.empty() && !model_->images)
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
        const uint32_t rows = model_->engine.config().vision.tokens_per_image;
        const text::ImagePrompt laid = text::encode_image_prompt(tok, text::render_chat(r.messages, true), files.size(),
                                                                 rows, tok.find_token("<start_of_image>"));
        job->prompt = laid.ids;
        for (size_t i = 0; i < files.size(); ++i) job->images.push_back({laid.image_start[i], files[i]});
      }
    } else if (r.prompt_text) {
      job->prompt = tok.encode(*r.prompt_text, /*add_bos=*/true);
    } else {
      const uint32_t vocab = model_->engine.config().model.vocab;
      for (size_t i = 0; i < r.prompt_ids.size(); ++i)
        if (uint32_t(r.prompt_ids[i]) >= vocab)
          throw bad_request("prompt[" + std::to_string(i) + "] = " + std::to_string(r.prompt_ids[i]) +
                                " is not a token id (the vocabulary has " + std::to_string(vocab) + ")",
                            "prompt", "invalid_value");
      job->prompt = r.prompt_ids;
    }
    if (job->prompt.size() >= context_)
      throw bad_request("This model's maximum context length is " + std::to_string(context_) +
                            " tokens. However, your " + (r.kind == CompletionRequest::Kind::Chat ? "messages" : "prompt") +
                            " resulted in " + std::to_string(job->prompt.size()) + " tokens.",
                        r.kind == CompletionRequest::Kind::Chat ? "messages" : "prompt", "context_length_exceeded");
    job->sampling = r.sampling;
    for (const auto& [id, _] : r.sampling.logit_bias)
      if (uint32_t(id) >= model_->engine.config().model.vocab)
        throw bad_request("'logit_bias' names token " + std::to_string(id) + "; the vocabulary has " +
                              std::to_string(model_->engine.config().model.vocab) + " tokens",
                          "logit_bias." + std::to_string(id), "invalid_value");
    if (!r.seeded) job->sampling.seed = uint32_t(rng_());
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
  static std::shared_ptr<Job> later_choice(const std::shared_ptr<Job>& first, uint32_t i) {
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

  // Wakes a session's coroutine from the scheduler's thread: the job's notify
  // posts to the I/O thread a handler that raises `signalled` and cancels the
  // timer the session may be waiting on. A signal that came while the session
  // was busy (writing a chunk) is kept, so wait() returns at once and no
  // output is left unread. It lives as long as the completion's coroutine;
  // handlers that outlive it hold it weakly and do nothing once it is gone.
  struct Waker {
    explicit Waker(net::any_io_executor ex) : timer(ex) {}
    net::steady_timer timer;
    bool signalled = false;  // the I/O thread's
    bool answering = false;  // the answer is being written: no probe may go between its bytes
    void signal() {
      signalled = true;
      timer.cancel();
    }
  };
  // Watches a running completion's socket, so that a client that goes away
  // frees its slot. A reset is a client gone. An end of stream is ambiguous:
  // a client that closed the connection sends the same FIN as one that only
  // shut its sending side and still reads (nc -N, some proxies). A streamed
  // answer lets a failed write tell them apart; for an unstreamed HTTP/1.1 one
  // the watch sends the interim "100 Continue" (which every HTTP/1.1 client
  // reads past), and a closed socket answers it with the reset that ends the
  // job. An HTTP/1.0 client gets its answer either way. `jobs`: the
  // request's choices, all cancelled together.
  using Jobs = std::vector<std::shared_ptr<Job>>;
  void watch_client(tcp::socket& socket, Jobs jobs, const std::shared_ptr<Waker>& waker,
                    bool can_probe, tcp::socket::wait_type what) {
    socket.async_wait(what, [this, &socket, jobs = std::move(jobs), weak = std::weak_ptr<Waker>(waker), can_probe,
                             what](const boost::system::error_code& ec) {
      const auto w = weak.lock();  // gone: the completion (and maybe the socket) has ended
      if (!w || ec == net::error::operation_aborted) return;
      char byte;
      boost::system::error_code peek_ec;
      const size_t n = socket.receive(net::buffer(&byte, 1), tcp::socket::message_peek, peek_ec);
      if (peek_ec == net::error::would_block) return watch_client(socket, jobs, w, can_probe, what);  // spurious
      const bool end_of_stream = peek_ec == net::error::eof;  // Asio's word for a receive of 0 bytes
      // A reset that came after the end of stream: a receive reports the end
      // first, the socket's pending error says it.
      int pending = 0;
      socklen_t size = sizeof pending;
      ::getsockopt(socket.native_handle(), SOL_SOCKET, SO_ERROR, &pending, &size);
      if (ec || pending || (peek_ec && !end_of_stream)) {  // reset: the client is gone
        cancel_all(jobs);
        return w->signal();
      }
      if ((n > 0 && !end_of_stream) || what == tcp::socket::wait_error) return;  // a pipelined request waits its turn
      if (!can_probe || w->answering) return;
      static constexpr std::string_view kProbe = "HTTP/1.1 100 Continue\r\n\r\n";
      boost::system::error_code send_ec;
      socket.send(net::buffer(kProbe.data(), kProbe.size()), 0, send_ec);
      if (send_ec) {
        cancel_all(jobs);
        return w->signal();
      }
      watch_client(socket, jobs, w, false, tcp::socket::wait_error);  // for the reset a closed socket sends back
    });
  }

  net::awaitable<void> wait(Waker& w) {
    if (!w.signalled) {
      w.timer.expires_at(net::steady_timer::time_point::max());
      boost::system::error_code ec;
      co_await w.timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
    w.signalled = false;
  }

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
      co_await send(stream, reply, keep_alive, req.version());
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

  // A request's choices end together: the first error ends the others (their
  // slots are freed at the scheduler's next step).
  static void cancel_all(std::span<const std::shared_ptr<Job>> jobs) {
    for (const auto& job : jobs) job->cancelled = true;
  }
  // The usage of a request's choices: the prompt once, every choice's tokens.
  static Usage total_usage(std::span<const Job::Progress> ends) {
    Usage u = ends[0].usage;
    for (size_t i = 1; i < ends.size(); ++i) u.completion_tokens += ends[i].usage.completion_tokens;
    return u;
  }

  // The JSON of an answer (choice i) that ended well: its whole text, its end,
  // the log-probabilities of its tokens.
  using WholeAnswer = std::function<Json(uint32_t i, const std::string& text, const Job::Progress& end,
                                         std::span<const TokenLogprobEntry> logprobs)>;

  // An unstreamed answer: once every choice has ended, `answer`'s JSON (the
  // choices after the first added to the first's, the usage summed) or the
  // first error. `echo`: what each choice's text starts with.
  net::awaitable<int> whole_completion(Stream& stream, Request& req, std::span<const std::shared_ptr<Job>> jobs,
                                       Waker& waker, Dialect dialect, const WholeAnswer& answer, bool keep_alive,
                                       const Headers& cors, const std::string& echo) {
    const size_t n = jobs.size();
    std::vector<std::string> text(n, echo);
    std::vector<std::vector<TokenLogprobEntry>> logprobs(n);
    std::vector<Job::Progress> ends(n);
    std::vector<bool> ended(n, false);
    while (true) {
      for (size_t i = 0; i < n; ++i) {
        if (ended[i]) continue;
        Job::Progress p = jobs[i]->take();
        text[i] += p.text;
        logprobs[i].insert(logprobs[i].end(), p.logprobs.begin(), p.logprobs.end());
        if (!p.ended) continue;
        if (p.error && p.error->status == 499) co_return 0;  // the client is gone
        ended[i] = true;
        if (p.error) {
          cancel_all(jobs);
          waker.answering = true;
          const Reply r = with_headers(error_reply(*p.error, dialect), cors);
          co_await send(stream, r, false, req.version());
          co_return int(r.status);
        }
        ends[i] = std::move(p);
      }
      if (std::ranges::all_of(ended, [](bool e) { return e; })) break;
      co_await wait(waker);
    }
    waker.answering = true;
    Json body = answer(0, text[0], ends[0], logprobs[0]);
    for (uint32_t i = 1; i < n; ++i) {
      Json choice = answer(i, text[i], ends[i], logprobs[i])["choices"][0];
      choice["index"] = i;
      body["choices"].push_back(std::move(choice));
    }
    if (n > 1) body["usage"] = total_usage(ends).json();
    const Reply r = with_headers(json_reply(200, body), cors);
    co_await send(stream, r, keep_alive, req.version());
    co_return int(r.status);
  }

  // What a streamed answer's events are: OpenAI's server-sent events, or
  // Ollama's JSON lines. `i`: the choice an event is of.
  struct StreamShape {
    Dialect dialect;
    std::string_view content_type;
    std::function<std::string(const Json&)> frame;  // one event's bytes
    // The event for new text (`first`: the choice's first); it takes the
    // log-probabilities of the tokens chosen since the last.
    std::function<Json(uint32_t i, const std::string& text, bool first, std::vector<TokenLogprobEntry>& logprobs)> piece;
    bool first_piece_always;  // a first piece goes out even when the answer has no text
    // The events that end a choice that ended well (the log-probabilities left).
    std::function<std::vector<Json>(uint32_t i, const Job::Progress& end, std::vector<TokenLogprobEntry>& logprobs)> finish;
    // The events after every choice has ended (the usage of them all).
    std::function<std::vector<Json>(const Usage& usage)> summary;
    std::string_view trailer;  // after the last event
    // A reply that may call functions (tools.hpp) is held back while it may be
    // a call (from its first byte, '{' or '[', under "auto"; all of it
    // otherwise); at its end `calls` gives the events of the calls it makes
    // (its finish included), or none if it is text after all (which then goes
    // out as text, and `finish` ends it).
    ToolUse tools = {};
    std::function<std::vector<Json>(uint32_t i, const std::string& held, const Job::Progress& end, bool first,
                                    std::vector<TokenLogprobEntry>& logprobs)> calls = {};
  };

  // What a co_await writes is a named object throughout: built by GCC 12, a
  // temporary in a co_await's operand (a conditional's Json) was destroyed
  // twice, a SIGSEGV when a second Ctrl-C cut a stream.
  static inline const std::string kNoEcho;

  // A streamed answer: events per piece of text of each choice as it comes,
  // each choice's finishing events, then the summary and the trailer. An
  // error before the first event is an ordinary error response; after it, an
  // error event ends the stream (and the other choices). A reply held back
  // as a possible call (StreamShape::tools) ends with the calls' events.
  net::awaitable<int> stream_completion(Stream& stream, Request& req, std::span<const std::shared_ptr<Job>> jobs,
                                        Waker& waker, const StreamShape& shape, const Headers& cors,
                                        const std::string& echo) {
    struct Choice {
      bool first = true, holding = false, ended = false;
      std::string echo, held;
      std::vector<TokenLogprobEntry> logprobs;  // of tokens whose text has not gone out yet
      Job::Progress end;
    };
    std::vector<Choice> choices(jobs.size());
    for (Choice& c : choices) c.echo = echo, c.holding = shape.tools.active();
    bool started = false;
    boost::system::error_code ec;
    const auto write = [&](std::string_view data) -> net::awaitable<bool> {
      if (data.empty()) co_return true;  // an empty chunk would end the body
      co_await net::async_write(stream, http::make_chunk(net::buffer(data.data(), data.size())),
                                net::redirect_error(net::use_awaitable, ec));
      co_return !ec;
    };
    const auto event = [&](const Json& j) -> net::awaitable<bool> {
      const std::string data = shape.frame(j);
      co_return co_await write(data);
    };
    const auto events = [&](const std::vector<Json>& js) -> net::awaitable<bool> {
      for (const Json& j : js)
        if (!co_await event(j)) co_return false;
      co_return true;
    };
    const auto finish = [&]() -> net::awaitable<int> {
      if (!co_await write(shape.trailer)) co_return 0;
      co_await net::async_write(stream, http::make_chunk_last(), net::redirect_error(net::use_awaitable, ec));
      co_return ec ? 0 : 200;
    };
    while (true) {
      for (uint32_t i = 0; i < jobs.size(); ++i) {
        Choice& c = choices[i];
        if (c.ended) continue;
        Job::Progress p = jobs[i]->take();
        c.logprobs.insert(c.logprobs.end(), p.logprobs.begin(), p.logprobs.end());
        if (p.ended && p.error && p.error->status == 499) co_return 0;
        if (!c.echo.empty() && !(p.ended && p.error)) p.text = std::exchange(c.echo, {}) + p.text;
        if (c.holding) {
          c.held += std::exchange(p.text, {});
          if (shape.tools.choice == ToolUse::Choice::Auto && !c.held.empty() && c.held[0] != '{' && c.held[0] != '[')
            c.holding = false, p.text = std::exchange(c.held, {});  // free text: it streams
        }
        std::vector<Json> call_events;  // the held reply's, if it called functions
        if (p.ended && !p.error && !c.held.empty()) {
          call_events = shape.calls(i, c.held, p, c.first, c.logprobs);
          if (call_events.empty()) p.text = std::exchange(c.held, {});  // text after all
        }
        if (p.ended && p.error) cancel_all(jobs);
        if (!started && p.ended && p.error) {
          const Reply reply = with_headers(error_reply(*p.error, shape.dialect), cors);
          co_await send(stream, reply, false, req.version());
          co_return int(p.error->status);
        }
        if (!started && (p.ended || !p.text.empty())) {
          http::response<http::empty_body> res{http::status::ok, req.version()};
          res.set(http::field::server, "unicorn");
          res.set(http::field::content_type, std::string(shape.content_type));
          res.set(http::field::cache_control, "no-cache");
          for (const auto& [f, v] : cors) res.set(f, v);
          res.keep_alive(false);  // the stream ends with the connection's close
          res.chunked(true);
          http::response_serializer<http::empty_body> sr{res};
          co_await http::async_write_header(stream, sr, net::redirect_error(net::use_awaitable, ec));
          if (ec) break;
          started = true;
        }
        if (!call_events.empty()) {
          if (!co_await events(call_events)) break;
          c.ended = true, c.end = std::move(p);
          continue;
        }
        if (!p.text.empty() || (shape.first_piece_always && c.first && p.ended && !p.error)) {
          const Json piece = shape.piece(i, p.text, c.first, c.logprobs);
          if (!co_await event(piece)) break;
          c.first = false;
        }
        if (!p.ended) continue;
        if (p.error) {
          const Json error = shape.dialect == Dialect::Ollama ? ollama::error_body(*p.error) : p.error->body();
          if (!co_await event(error)) break;
          co_return co_await finish();
        }
        const std::vector<Json> last = shape.finish(i, p, c.logprobs);
        if (!co_await events(last)) break;
        c.ended = true, c.end = std::move(p);
      }
      if (ec) break;
      if (std::ranges::all_of(choices, [](const Choice& c) { return c.ended; })) {
        std::vector<Job::Progress> ends;
        for (Choice& c : choices) ends.push_back(std::move(c.end));
        const std::vector<Json> summary = shape.summary(total_usage(ends));
        if (!co_await events(summary)) break;
        co_return co_await finish();
      }
      co_await wait(waker);
    }
    cancel_all(jobs);  // a write failed: the client is gone
    co_return 0;
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
