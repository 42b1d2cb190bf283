// tests/vision/tiny_vision_server.hpp — the deployment of unicorn-tiny-vision-server
// (server_vision.test.cjs): the tiny text model in F32, as fixtures/tiny's
// Hugging Face directory holds it, with the tiny image encoder beside it;
// 4 slots of 256 tokens, 32-token prefill passes (an image is 16 rows).
#pragma once

#include "unicorn/config/deployment.hpp"

namespace unicorn::test {

struct TinyVisionServer {
  static constexpr DeploymentConfig kConfig =
      make_deployment(kGemma3Tiny, schemes::all(Format::F32, Format::F32), 256, 32)
          .with_streams(4)
          .with_vision(kGemma3SiglipTiny);
};

}  // namespace unicorn::test
