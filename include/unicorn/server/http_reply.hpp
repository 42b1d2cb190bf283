// unicorn/server/http_reply.hpp — an HTTP reply as the server writes it:
// a status, a JSON body (or the chat page's HTML), headers, an error in the
// shape of the API the request spoke (OpenAI's error object, Ollama's
// {"error": ...}), and send_reply, which writes one whole over a connection.
#pragma once

// Vulkan-Hpp before Asio, whoever includes this first: Asio's serial ports
// pull in <termios.h>, whose baud-rate macros (B0, ...) break Vulkan-Hpp's
// templates when it comes after.
#include "unicorn/gpu/vulkan.hpp"

#include "unicorn/server/api.hpp"
#include "unicorn/server/ollama_api.hpp"

#include <chrono>
#include <string>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "unicorn/server/cors.hpp"

namespace unicorn::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using HttpStream = beast::tcp_stream;
using HttpRequest = http::request<http::string_body>;

namespace detail_http {
inline std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }
}  // namespace detail_http

struct HttpReply {
  http::status status;
  std::string body;
  std::string content_type = "application/json";
  HttpHeaders headers;
  std::vector<std::pair<std::string, std::string>> named_headers;  // fields Beast has no enum for
};

inline HttpReply json_reply(int status, const Json& j) {
  return {http::status(status), detail_http::dump(j) + "\n"};
}
inline HttpReply with_headers(HttpReply r, const HttpHeaders& more) {
  r.headers.insert(r.headers.end(), more.begin(), more.end());
  return r;
}
// Which API a request speaks: its errors take that API's shape.
enum class Dialect { OpenAI, Ollama };
inline HttpReply error_reply(const ApiError& e, Dialect dialect = Dialect::OpenAI) {
  HttpReply r = json_reply(e.status, dialect == Dialect::Ollama ? ollama::error_body(e) : e.body());
  if (e.status == 503) r.headers.push_back({http::field::retry_after, "1"});
  return r;
}

inline net::awaitable<void> send_reply(HttpStream& stream, const HttpReply& r, bool keep_alive, unsigned version = 11) {
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

}  // namespace unicorn::server
