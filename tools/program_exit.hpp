// How every program of the project ends: what it printed is on standard output
// or the exit status says it is not (1, with the reason; --help included), and
// SIGINT/SIGTERM remove its temporary files before the signal ends it.
//
//   int main(int argc, char** argv) {
//     CLI::App app{...};
//     if (const auto status = unicorn::tools::parse(app, argc, argv, "unicorn-convert")) return *status;
//     unicorn::tools::remove_temporaries_on_signals("unicorn-convert");
//     ... print with io::write_stdout ...
//     return unicorn::tools::finish_stdout("unicorn-convert");
//   }
#pragma once

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>

#include "unicorn/io/file_output.hpp"

namespace unicorn::tools {

// 0 when everything printed through std::cout and stdio reached standard
// output (or its reader went away, `| head`); else 1, with the reason on
// standard error.
inline int finish_stdout(const char* program) {
  try {
    io::check_stdout();
    return 0;
  } catch (const io::StdoutClosed&) {
    return 0;
  } catch (const io::OutputError& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
}

// `text` on standard output, then finish_stdout's status: the reason of a
// failed write is the write's own (--layout, --engines, --help: short texts
// printed whole, where a stream would only remember that it failed).
inline int print_and_finish(const char* program, std::string_view text) {
  try {
    io::write_stdout(text);
  } catch (const io::StdoutClosed&) {
    return 0;
  } catch (const io::OutputError& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
  return finish_stdout(program);
}

// CLI11's answer to a ParseError: --help and --version printed through
// print_and_finish (0, or 1 when standard output cannot take them); errors on
// standard error with CLI11's exit status.
inline int exit_for(const CLI::App& app, const CLI::ParseError& e, const char* program) {
  std::ostringstream out;
  const int status = app.exit(e, out, std::cerr);
  return status == 0 ? print_and_finish(program, out.str()) : status;
}

// Parses the command line, as CLI11_PARSE does: nullopt to go on, else the
// exit status (exit_for's).
inline std::optional<int> parse(CLI::App& app, int argc, char** argv, const char* program) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    return exit_for(app, e, program);
  }
}

// The signal handler and the name it prints.
namespace signal_exit {
inline const char* g_signalled_program = "";

// Async-signal-safe: unlink(2), write(2), signal and raise only.
extern "C" inline void remove_temporaries_and_stop(int sig) {
  io::remove_open_temporaries();
  const char* what = sig == SIGINT ? ": interrupted (SIGINT)" : ": terminated (SIGTERM)";
  const char* tail = "; its unfinished output files were removed\n";
  for (const char* s : {g_signalled_program, what, tail}) (void)!::write(STDERR_FILENO, s, std::strlen(s));
  std::signal(sig, SIG_DFL);
  std::raise(sig);  // the exit status a shell reports for the signal (128 + N)
}
}  // namespace signal_exit

// From now on SIGINT and SIGTERM remove the temporaries of the files being
// written (io::AtomicFile), say so in one line, and end the process by the
// signal: what stood at each target stays as it was.
inline void remove_temporaries_on_signals(const char* program) {
  signal_exit::g_signalled_program = program;
  struct sigaction sa {};
  sa.sa_handler = signal_exit::remove_temporaries_and_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace unicorn::tools
