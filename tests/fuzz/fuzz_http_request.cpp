// Fuzz target: the HTTP request reader (server/http_request.hpp: Boost.Beast's
// parser with the server's limits and header checks), fed the input as a
// connection would, in pieces of a size the input's first byte picks. A
// request is read whole or refused with an error code (the server's 400, 413,
// 431); a body read whole stays within the limit and goes where the server
// sends it (server/api.hpp), which answers or refuses it with an ApiError.
// Boost's assertions stay on (this is not an NDEBUG build), through a handler
// that lets one known-wrong assertion of Debian 12's Boost 1.74 pass: Beast's
// chunked parser asserts n >= 5 when the final chunk "0\r\n" arrives byte by
// byte, where 4 bytes are valid and the code after it handles them
// (boostorg/beast#2861, fixed upstream in 2024). The fuzzer found it; inputs:
// corpus/http_request/regression-final-chunk-byte-by-byte. Release builds
// (NDEBUG) compile no assertion, so the server is not affected.
#define BOOST_ENABLE_ASSERT_HANDLER

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>

#include "fuzz.hpp"
#include "unicorn/server/api.hpp"
#include "unicorn/server/http_request.hpp"

namespace boost {
void assertion_failed(char const* expr, char const* function, char const* file, long line) {
  if (std::string_view(expr) == "n >= 5" && std::string_view(file).ends_with("http/impl/basic_parser.ipp")) return;
  std::fprintf(stderr, "Boost assertion failed: %s in %s (%s:%ld)\n", expr, function, file, line);
  std::abort();
}
void assertion_failed_msg(char const* expr, char const* msg, char const* function, char const* file, long line) {
  std::fprintf(stderr, "Boost assertion failed: %s (%s) in %s (%s:%ld)\n", expr, msg, function, file, line);
  std::abort();
}
}  // namespace boost

namespace {

constexpr size_t kBodyLimit = 2048;  // small, so that inputs reach the limit

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace unicorn::server;
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 64;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  RequestParser parser;
  limit_request(parser, kBodyLimit);
  parser.eager(true);
  std::string pending;
  boost::beast::error_code ec;
  bool header_checked = false;
  while (!parser.is_done()) {
    const size_t take = std::min(piece, rest.size());
    pending.append(rest.substr(0, take));
    rest.remove_prefix(take);
    // Beast's read never hands the parser an empty buffer (it reads more first):
    // with nothing left to give, the client has stopped sending.
    if (pending.empty()) {
      if (parser.got_some()) parser.put_eof(ec);
      else ec = beast_http::error::end_of_stream;
      break;
    }
    const size_t used = parser.put(boost::asio::buffer(pending), ec);
    pending.erase(0, used);
    if (ec == beast_http::error::need_more) {
      ec = {};
      if (take == 0) {  // the client stopped sending: what Beast's read does at end of stream
        if (parser.got_some()) parser.put_eof(ec);
        else ec = beast_http::error::end_of_stream;
        break;
      }
      continue;
    }
    if (ec) break;
    if (parser.is_header_done() && !header_checked) {
      header_checked = true;
      if (body_length_unknowable(parser)) return 0;  // the server answers 400 and closes
      (void)expects_continue(parser);
    }
    if (used == 0 && take == 0) break;
  }
  if (ec || !parser.is_done()) return 0;
  const auto& req = parser.get();
  FUZZ_CHECK(req.body().size() <= kBodyLimit, "a body past the limit was read");
  const std::string path = request_path(req.target());
  FUZZ_CHECK(path.find('?') == std::string::npos, "the path keeps its query");
  const bool chat = path == "/v1/chat/completions" || path == "/chat/completions";
  if (chat || path == "/v1/completions" || path == "/completions") {
    try {
      (void)parse_completion_request(req.body(), chat ? CompletionRequest::Kind::Chat : CompletionRequest::Kind::Text);
    } catch (const ApiError& e) {
      FUZZ_CHECK(e.status == 400, "a malformed body is not a 400");
    }
  }
  return 0;
}
