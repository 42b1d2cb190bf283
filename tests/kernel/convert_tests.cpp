// convert.comp: safetensors' F32, F16 and BF16 and GGUF's blocks quantized on
// the device into every weight format, bit for bit ggml's quantizers
// (tools/ggml_quantize.hpp).
#include "kernel_harness.hpp"

namespace unicorn {
namespace {

struct ConvertCase {
  Format target;
  detail::SourceType source;
  float add;
  uint32_t first;  // destination offset, in elements (or blocks)
  std::string name() const {
    static const char* kSrc[] = {"F32", "F16", "BF16", "ggml blocks"};
    std::ostringstream s;
    s << variant("convert", target) << " from " << kSrc[uint32_t(source)]
      << " ADD=" << add << " first=" << first;
    return s.str();
  }
};

class Convert : public ::testing::TestWithParam<ConvertCase> {};

// Source values: random, plus (for the block formats) one block whose Q8_0
// quants land exactly on .5 ties (d = 1: x = j - 15.5, max 127) and one block
// of zeros (d = 0, the `id = 0` path; all ones with ADD = 1).
std::vector<float> convert_source_values(size_t n) {
  auto x = random_floats(n, -2.f, 2.f);
  if (n >= 96) {
    for (int j = 0; j < 32; ++j) x[32 + j] = j == 31 ? 127.f : float(j) - 15.5f;
    for (int j = 0; j < 32; ++j) x[64 + j] = 0.f;
  }
  return x;
}

TEST_P(Convert, MatchesGgmlQuantizerBitForBit) {
  const ConvertCase& c = GetParam();
  const uint32_t block = format_info(c.target).block_elems;
  const uint32_t count = block == 1 ? 1001 : 37;  // elements, or blocks
  const size_t elems = size_t(count) * block;

  // Source bytes as safetensors holds them (or, for ggml blocks, as a GGUF file
  // does), and the target's bytes as ggml's quantizer makes them.
  auto values = convert_source_values(elems);
  std::vector<std::byte> src, want;
  if (c.source == detail::SourceType::GgmlBlocks) {
    tools::quantize(c.target, values, src);
    want = src;
  } else {
    const auto src_format = c.source == detail::SourceType::F32   ? Format::F32
                            : c.source == detail::SourceType::F16 ? Format::F16
                                                                  : Format::BF16;
    tools::quantize(src_format, values, src);
    const auto back = reference::dequantize(src_format, src, elems);
    std::vector<float> decoded(elems);  // [elems] what the source bytes hold, + add
    for (size_t i = 0; i < elems; ++i) decoded[i] = back[i] + c.add;  // float add, as the shader
    tools::quantize(c.target, decoded, want);
  }

  // The destination part: `first` units, the range, one spare unit that must
  // stay poison; read back in ggml's layout to compare.
  const uint64_t unit = format_info(c.target).block_bytes;
  const uint32_t part_units = c.first + count + 1;
  HostBuffer s((src.size() + 3) / 4 * 4), d(part_units * unit);
  s.fill<std::byte>(src);
  const uint32_t gs = groups(count, 64);
  const uint32_t gx = std::min<uint32_t>(gs, 65535), gy = groups(gs, gx);
  run(variant("convert", c.target), kernels::kConvertBindings,
      kernels::Convert{uint32_t(c.source), c.add}, {&s, &d}, {count, c.first, part_units},
      {gx, gy, 1});

  const auto got = reference::from_device_layout(c.target, d.bytes());
  for (uint64_t i = 0; i < c.first * unit; ++i)
    ASSERT_EQ(uint8_t(got[i]), 0xff) << c.name() << ": wrote byte " << i << " before `first`";
  for (uint64_t i = (c.first + count) * unit; i < got.size(); ++i)
    ASSERT_EQ(uint8_t(got[i]), 0xff) << c.name() << ": wrote byte " << i << " past the range";
  size_t differ = 0;
  std::ostringstream first_diffs;
  for (size_t i = 0; i < want.size(); ++i)
    if (got[c.first * unit + i] != want[i]) {
      if (differ < 8)
        first_diffs << " byte " << i << " (block " << i / unit << "): got 0x" << std::hex
                    << int(got[c.first * unit + i]) << " want 0x" << int(want[i]) << std::dec
                    << ";";
      ++differ;
    }
  EXPECT_EQ(differ, 0u) << c.name() << ": " << differ << " of " << want.size()
                        << " bytes differ from tools::quantize:" << first_diffs.str();
}

std::vector<ConvertCase> convert_cases() {
  std::vector<ConvertCase> v;
  for (Format f : kAllFormats)
    for (auto s : {detail::SourceType::F32, detail::SourceType::F16, detail::SourceType::BF16})
      if (!is_block_quantized(f) || quantized_on_device(f))  // the others come only from GGUF blocks (the loader refuses floats)
      for (float add : {0.f, 1.f})
        for (uint32_t first : {0u, 5u}) v.push_back({f, s, add, first});
  // GGUF blocks moving into the planar device layout.
  for (Format f : kBlockFormats)
    for (uint32_t first : {0u, 5u}) v.push_back({f, detail::SourceType::GgmlBlocks, 0.f, first});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Kernel, Convert, ::testing::ValuesIn(convert_cases()),
                         [](const auto& info) { return test_name(info.param.name()); });

}  // namespace
}  // namespace unicorn
