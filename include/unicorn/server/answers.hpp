// unicorn/server/answers.hpp — a completion's answer on its connection: the
// session's coroutine waits for the scheduler's output (Waker), watches the
// socket so that a client that goes away frees its slot (watch_client), and
// writes the answer whole once every choice has ended (whole_completion) or
// as it comes (stream_completion: OpenAI's server-sent events or Ollama's
// JSON lines, StreamShape). server/http.hpp routes a request here.
#pragma once

#include <sys/socket.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "unicorn/server/http_reply.hpp"
#include "unicorn/server/job.hpp"
#include "unicorn/server/tools.hpp"

namespace unicorn::server {

// A request's choices end together: the first error ends the others (their
// slots are freed at the scheduler's next step).
inline void cancel_all(std::span<const std::shared_ptr<Job>> jobs) {
  for (const auto& job : jobs) job->cancelled = true;
}
// The usage of a request's choices: the prompt once, every choice's tokens.
inline Usage total_usage(std::span<const Job::Progress> ends) {
  Usage u = ends[0].usage;
  for (size_t i = 1; i < ends.size(); ++i) u.completion_tokens += ends[i].usage.completion_tokens;
  return u;
}

// Wakes a session's coroutine from the scheduler's thread: the job's notify
// posts to the I/O thread a handler that raises `signalled` and cancels the
// timer the session may be waiting on. A signal that came while the session
// was busy (writing a chunk) is kept, so wait_for_output() returns at once and no
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
inline void watch_client(tcp::socket& socket, Jobs jobs, const std::shared_ptr<Waker>& waker, bool can_probe,
                         tcp::socket::wait_type what) {
  socket.async_wait(what, [&socket, jobs = std::move(jobs), weak = std::weak_ptr<Waker>(waker), can_probe,
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

inline net::awaitable<void> wait_for_output(Waker& w) {
  if (!w.signalled) {
    w.timer.expires_at(net::steady_timer::time_point::max());
    boost::system::error_code ec;
    co_await w.timer.async_wait(net::redirect_error(net::use_awaitable, ec));
  }
  w.signalled = false;
}

// The JSON of an answer (choice i) that ended well: its whole text, its end,
// the log-probabilities of its tokens.
using WholeAnswer = std::function<Json(uint32_t i, const std::string& text, const Job::Progress& end,
                                       std::span<const TokenLogprobEntry> logprobs)>;

// An unstreamed answer: once every choice has ended, `answer`'s JSON (the
// choices after the first added to the first's, the usage summed) or the
// first error. `echo`: what each choice's text starts with.
inline net::awaitable<int> whole_completion(HttpStream& stream, HttpRequest& req,
                                            std::span<const std::shared_ptr<Job>> jobs, Waker& waker, Dialect dialect,
                                            const WholeAnswer& answer, bool keep_alive, const HttpHeaders& cors,
                                            const std::string& echo) {
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
        const HttpReply r = with_headers(error_reply(*p.error, dialect), cors);
        co_await send_reply(stream, r, false, req.version());
        co_return int(r.status);
      }
      ends[i] = std::move(p);
    }
    if (std::ranges::all_of(ended, [](bool e) { return e; })) break;
    co_await wait_for_output(waker);
  }
  waker.answering = true;
  Json body = answer(0, text[0], ends[0], logprobs[0]);
  for (uint32_t i = 1; i < n; ++i) {
    Json choice = answer(i, text[i], ends[i], logprobs[i])["choices"][0];
    choice["index"] = i;
    body["choices"].push_back(std::move(choice));
  }
  if (n > 1) body["usage"] = total_usage(ends).json();
  const HttpReply r = with_headers(json_reply(200, body), cors);
  co_await send_reply(stream, r, keep_alive, req.version());
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
inline const std::string kNoEcho;

// A streamed answer: events per piece of text of each choice as it comes,
// each choice's finishing events, then the summary and the trailer. An
// error before the first event is an ordinary error response; after it, an
// error event ends the stream (and the other choices). A reply held back
// as a possible call (StreamShape::tools) ends with the calls' events.
inline net::awaitable<int> stream_completion(HttpStream& stream, HttpRequest& req,
                                             std::span<const std::shared_ptr<Job>> jobs, Waker& waker,
                                             const StreamShape& shape, const HttpHeaders& cors,
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
        const HttpReply reply = with_headers(error_reply(*p.error, shape.dialect), cors);
        co_await send_reply(stream, reply, false, req.version());
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
    co_await wait_for_output(waker);
  }
  cancel_all(jobs);  // a write failed: the client is gone
  co_return 0;
}

}  // namespace unicorn::server
