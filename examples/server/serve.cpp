// The HTTP front end of every server binary: unicorn::server::serve() on
// Boost.Beast (include/unicorn/server/http.hpp). unicorn_add_server compiles
// this once per build and links it into each server, whose own translation
// unit holds only its engine (examples/server/main.cpp).
#include "unicorn/server/http.hpp"

int unicorn::server::serve(const ServerOptions& options, const std::function<Model()>& load) {
  try {
    Server server(options);
    return server.run(load);
  } catch (const std::exception& e) {  // cannot listen
    std::fprintf(stderr, "server: %s\n", e.what());
    return 1;
  }
}
