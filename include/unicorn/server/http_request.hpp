// unicorn/server/http_request.hpp — how the server reads a request off a
// connection: Boost.Beast's parser with the server's limits, and the checks
// made once the header is in. Apart from http.hpp (sockets, coroutines, the
// scheduler), so that the fuzz target feeds this the bytes a client could send.
// Include it after the engine's headers (see http.hpp on <termios.h>).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <boost/beast/http.hpp>

namespace unicorn::server {

namespace beast_http = boost::beast::http;
using RequestParser = beast_http::request_parser<beast_http::string_body>;

// Headers past this are a 431 (what a client needs is far less).
inline constexpr size_t kMaxHeaderBytes = 32 * 1024;

inline void limit_request(RequestParser& parser, size_t max_body_bytes) {
  parser.body_limit(max_body_bytes);
  parser.header_limit(kMaxHeaderBytes);
}

// RFC 9112 6.1: a Transfer-Encoding that is not chunked leaves the body's
// length unknowable; the server answers 400 and closes.
inline bool body_length_unknowable(const RequestParser& parser) {
  return !parser.chunked() && parser.get().count(beast_http::field::transfer_encoding);
}

// curl sends `Expect: 100-continue` before a body over 1 KiB and waits for the answer.
inline bool expects_continue(const RequestParser& parser) {
  return parser.get()[beast_http::field::expect] == "100-continue";
}

// The path of a request target, without its query string.
inline std::string request_path(boost::beast::string_view target) {
  const std::string_view t(target.data(), target.size());
  return std::string(t.substr(0, t.find('?')));
}

}  // namespace unicorn::server
