// unicorn/server/cors.hpp — CORS: which answers a web page of another origin
// may read (ServerOptions::cors_origins), and the grant of a preflight
// (OPTIONS). Headers only; the HTTP front end (http.hpp) adds them to its
// answers. Include it after the engine's headers (see http.hpp on <termios.h>).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <boost/beast/http.hpp>

namespace unicorn::server {

using HttpHeaders = std::vector<std::pair<boost::beast::http::field, std::string>>;

// The headers that let a page of the request's Origin read the answer, when
// that origin is allowed ("*": any); none otherwise, and none for a request
// without Origin (not a browser's cross-origin call).
template <class Request>
HttpHeaders cors_headers(const std::vector<std::string>& allowed_origins, const Request& req) {
  namespace http = boost::beast::http;
  const std::string origin(req[http::field::origin]);
  if (origin.empty()) return {};
  for (const std::string& allowed : allowed_origins) {
    if (allowed == "*") return {{http::field::access_control_allow_origin, "*"}};
    if (allowed == origin) return {{http::field::access_control_allow_origin, origin}, {http::field::vary, "Origin"}};
  }
  return {};
}

// A preflight's answer headers: what the route allows (`allowed`: its
// methods), and for an allowed origin the grant (those methods, the headers
// it asked for, for 10 minutes).
template <class Request>
HttpHeaders preflight_headers(const std::vector<std::string>& allowed_origins, const Request& req,
                              const std::string& allowed) {
  namespace http = boost::beast::http;
  HttpHeaders out{{http::field::allow, allowed}};
  HttpHeaders cors = cors_headers(allowed_origins, req);
  if (cors.empty()) return out;
  cors.push_back({http::field::access_control_allow_methods, allowed});
  const std::string asked(req[http::field::access_control_request_headers]);
  cors.push_back({http::field::access_control_allow_headers, asked.empty() ? std::string("authorization, content-type") : asked});
  cors.push_back({http::field::access_control_max_age, "600"});
  out.insert(out.end(), cors.begin(), cors.end());
  return out;
}

}  // namespace unicorn::server
