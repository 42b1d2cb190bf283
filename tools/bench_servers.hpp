// tools/bench_servers.hpp — the deployments of the benchmark servers
// (tools/CMakeLists.txt, UNICORN_BUILD_BENCH_SERVERS): the shapes of
// unicorn-bench's --batch engines (every matrix Q4_0, 2048 tokens, 512-token
// prefill chunks, 32 streams), served, so unicorn-serve-bench's aggregate at
// 32 clients compares with unicorn-bench --batch 32 on the same file.
#pragma once

#include "unicorn/config/deployment.hpp"

namespace unicorn::bench {

struct Gemma3_4B_Q4_0_Slots32 {
  static constexpr DeploymentConfig kConfig = make_deployment(kGemma3_4B, schemes::kQ4_0, 2048, 512).with_streams(32);
};
struct Gemma3_27B_Q4_0_Slots32 {
  static constexpr DeploymentConfig kConfig = make_deployment(kGemma3_27B, schemes::kQ4_0, 2048, 512).with_streams(32);
};

}  // namespace unicorn::bench
