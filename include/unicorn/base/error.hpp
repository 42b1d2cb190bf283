// unicorn/base/error.hpp — the one exception type the engine throws.
//
// Every failure a user can cause (bad file, mismatched config, prompt too long,
// out-of-memory device, malformed request) surfaces as unicorn::Error with a
// one-line message that says what is wrong and, where it helps, what to do.
#pragma once

#include <stdexcept>
#include <string>

namespace unicorn {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace unicorn
