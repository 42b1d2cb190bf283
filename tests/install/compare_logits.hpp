// compare_logits.hpp — the install tests' logits check, shared by host_app's
// check_logits and host_project's host_check: compares two float32 LE logits
// files (one row of vocab values per position). Passes when
// max |got - ref| / max |ref| <= tolerance, the golden tests' measure; prints
// the error either way. No unicorn headers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

namespace install_test {

inline std::vector<float> read_floats(const char* path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) {
    std::fprintf(stderr, "check_logits: %s: cannot open\n", path);
    std::exit(2);
  }
  std::vector<float> v(size_t(f.tellg()) / 4);
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * 4));
  return v;
}

// `program GOT REF TOLERANCE`: 0 when GOT matches REF within TOLERANCE.
inline int check_logits_main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s GOT REF TOLERANCE\n", argv[0]);
    return 2;
  }
  const auto got = read_floats(argv[1]);
  const auto ref = read_floats(argv[2]);
  const double tolerance = std::atof(argv[3]);
  if (got.size() != ref.size() || ref.empty()) {
    std::fprintf(stderr, "check_logits: %s holds %zu floats, %s holds %zu\n", argv[1], got.size(),
                 argv[2], ref.size());
    return 1;
  }
  double diff = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff = std::max(diff, std::isfinite(got[i]) ? std::fabs(double(got[i]) - ref[i]) : INFINITY);
    scale = std::max(scale, std::fabs(double(ref[i])));
  }
  const double rel = diff / scale;
  std::printf("logits: %zu floats, max|diff| %.3e, logit scale %.3f: %.2e of the scale "
              "(tolerance %.0e)\n", ref.size(), diff, scale, rel, tolerance);
  return rel <= tolerance ? 0 : 1;
}

}  // namespace install_test
