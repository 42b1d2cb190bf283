// tests/cli/cli_util.hpp — what the cli tests share: running a binary as a
// person would (its exit code, what it printed), the binaries' and files'
// paths from the environment ctest sets, temporary files, sparse GGUF files
// of any official size, and EXPECT_CONTAINS.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "temp_dir.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/io/gguf_writer.hpp"
#include "unicorn/model/from_gguf.hpp"
#include <boost/hana/accessors.hpp>
#include <boost/hana/for_each.hpp>

namespace fs = std::filesystem;

namespace cli_test {

inline std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

struct Result {
  int code;
  std::string out;  // stdout and stderr together
};

// Runs a shell command line, redirections included; returns its exit code
// and what it wrote to the pipe.
inline Result shell(const std::string& cmd) {
  Result r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A command's exit code and output, stdout and stderr together.
inline Result run(const std::string& cmd) { return shell(cmd + " 2>&1"); }

inline std::string stdout_of(const std::string& cmd) { return shell(cmd + " 2>/dev/null").out; }

inline const std::string& gen() {
  static const std::string g = env("UNICORN_GENERATE");
  return g;
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE((text).find(part), std::string::npos) << "expected \"" << (part) << "\" in:\n" << (text)

inline std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline fs::path tmp() {
  static const unicorn::test::TempDir dir("unicorn-cli");
  return dir.path();
}

// A GGUF file of a model's exact hyperparameters and tensor types and shapes
// (every weight in the format `scheme` gives it, as llama.cpp names them),
// whose tensor data is a hole: a sparse file of the real size that costs no
// disk. Enough to pick an engine and print its layout, which read only the
// header; an official size's file is gigabytes of zeros otherwise.
// `retype` gives some tensors another type than the scheme's.
inline void write_sparse_gguf(const fs::path& path, const unicorn::ModelDims& m, const unicorn::Scheme& scheme,
                              const std::vector<std::pair<std::string, unicorn::Format>>& retype = {}) {
  namespace io = unicorn::io;
  std::string header;
  io::detail::GgufSink sink(header);
  std::vector<std::pair<std::string, io::GgufValue>> kvs{{"general.architecture", io::GgufValue(std::string("gemma3"))}};
  boost::hana::for_each(boost::hana::accessors<unicorn::ModelDims>(), [&](auto pair) {
    const unicorn::Hparam* h = unicorn::find_hparam(boost::hana::to<char const*>(boost::hana::first(pair)));
    if (!h || h->gguf.empty()) return;
    const auto v = boost::hana::second(pair)(m);
    if constexpr (std::is_floating_point_v<decltype(v)>) kvs.emplace_back(std::string(h->gguf), io::GgufValue(float(v)));
    else if constexpr (std::is_unsigned_v<decltype(v)>) kvs.emplace_back(std::string(h->gguf), io::GgufValue(uint32_t(v)));
  });
  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    unicorn::Format format;
  };
  std::vector<Tensor> tensors;
  const unicorn::DeploymentConfig c = unicorn::make_deployment(m, scheme);
  unicorn::detail::for_each_tensor(c, [&](const unicorn::detail::TensorShape& t, int layer, unicorn::Arena arena) {
    if (arena != unicorn::Arena::Weights || t.role == unicorn::Role::LmHead) return;
    unicorn::TensorSlot slot{};
    slot.role = t.role;
    slot.layer = layer;
    tensors.push_back({slot.gguf_name(), t.rows == 1 ? std::vector<uint64_t>{t.cols} : std::vector<uint64_t>{t.cols, t.rows},
                       t.format});
    for (const auto& [name, format] : retype)
      if (name == tensors.back().name) tensors.back().format = format;
  });
  sink.put<uint32_t>(0x46554747);  // "GGUF"
  sink.put<uint32_t>(3);
  sink.put<uint64_t>(tensors.size());
  sink.put<uint64_t>(kvs.size());
  for (const auto& [key, value] : kvs) {
    sink.put_string(key);
    sink.put_value(value);
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors) {
    sink.put_string(t.name);
    sink.put<uint32_t>(uint32_t(t.dims.size()));
    for (uint64_t d : t.dims) sink.put<uint64_t>(d);
    sink.put<uint32_t>(uint32_t(t.format));
    sink.put<uint64_t>(offset);
    offset = io::detail::align_up(offset + *io::detail::tensor_bytes(unicorn::format_info(t.format), t.dims), 32);
  }
  header.resize(io::detail::align_up(header.size(), 32), '\0');
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(header.data(), std::streamsize(header.size()));
  }
  fs::resize_file(path, header.size() + offset);
}

}  // namespace cli_test
