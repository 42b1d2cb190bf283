// The HTTP front end of every server binary: unicorn::server::serve() on
// Boost.Beast (include/unicorn/server/http.hpp). unicorn_add_server compiles
// this once per build, with program.cpp, and links both into each server,
// whose own translation unit holds only its deployment (main.cpp).
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
