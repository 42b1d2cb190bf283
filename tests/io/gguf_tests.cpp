// GGUF reader and writer: round trips, the exact byte layout llama.cpp expects,
// and hostile input (truncation at every header byte, bad magic/version, absurd
// counts) that must end in unicorn::Error, never a crash.
#include "unicorn/io/gguf.hpp"
#include "unicorn/io/gguf_writer.hpp"

#include <cmath>
#include <numeric>

#include "io_test_util.hpp"

namespace unicorn::io {
namespace {

using test::expect_error;
using test::TempDir;

std::vector<std::byte> pattern_bytes(size_t n, uint8_t seed) {
  std::vector<std::byte> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = std::byte(static_cast<uint8_t>(seed + i * 7));
  return b;
}

// Hand-built GGUF bytes, independent of GgufWriter, for layouts the writer
// refuses to produce.
class Bytes {
 public:
  template <class T>
  Bytes& put(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    b_.insert(b_.end(), p, p + sizeof(T));
    return *this;
  }
  Bytes& str(std::string_view s) {
    put<uint64_t>(s.size());
    for (char c : s) b_.push_back(std::byte(c));
    return *this;
  }
  Bytes& header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) {
    return put<uint32_t>(0x46554747).put<uint32_t>(version).put<uint64_t>(tensors).put<uint64_t>(kvs);
  }
  Bytes& pad_to(size_t align) {
    while (b_.size() % align) b_.push_back(std::byte{0});
    return *this;
  }
  Bytes& zeros(size_t n) {
    b_.resize(b_.size() + n);
    return *this;
  }
  const std::vector<std::byte>& bytes() const { return b_; }

 private:
  std::vector<std::byte> b_;
};

GgufFile parse(const std::vector<std::byte>& b) { return GgufFile::parse(b, "m.gguf"); }

// ---------------------------------------------------------------- round trips

TEST(Gguf, RoundTripsEveryValueType) {
  TempDir dir;
  GgufWriter w;
  const std::vector<std::pair<std::string, GgufValue>> values = {
      {"u8", uint8_t{200}},
      {"i8", int8_t{-100}},
      {"u16", uint16_t{60000}},
      {"i16", int16_t{-30000}},
      {"u32", uint32_t{4000000000u}},
      {"i32", int32_t{-2000000000}},
      {"f32", 1.5f},
      {"bool_t", true},
      {"bool_f", false},
      {"str", "gemma3"},
      {"empty_str", ""},
      {"u64", uint64_t{1} << 60},
      {"i64", int64_t{-(int64_t{1} << 60)}},
      {"f64", 2.25},
      {"a_u8", std::vector<uint8_t>{1, 2, 255}},
      {"a_i8", std::vector<int8_t>{-1, 2}},
      {"a_u16", std::vector<uint16_t>{65535}},
      {"a_i16", std::vector<int16_t>{-5, 5}},
      {"a_u32", std::vector<uint32_t>{7, 8, 9}},
      {"a_i32", std::vector<int32_t>{-3, 0, 3}},
      {"a_f32", std::vector<float>{0.5f, -1.0f}},
      {"a_bool", std::vector<bool>{true, false, true}},
      {"a_str", std::vector<std::string>{"<pad>", "", "▁the"}},
      {"a_u64", std::vector<uint64_t>{uint64_t{1} << 63}},
      {"a_i64", std::vector<int64_t>{-7}},
      {"a_f64", std::vector<double>{1e300}},
      {"a_empty", std::vector<float>{}},
      {"a_nested", std::vector<GgufArray>{GgufArray{std::vector<int32_t>{1, 2}},
                                          GgufArray{std::vector<std::string>{"x", "y"}},
                                          GgufArray{std::vector<GgufArray>{}}}},
  };
  for (const auto& [k, v] : values) w.set(k, v);
  w.set("u8", uint8_t{201});  // replacing keeps the first position
  w.write(dir / "v.gguf");

  const GgufFile g = GgufFile::open(dir / "v.gguf");
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.alignment(), 32u);
  ASSERT_EQ(g.metadata().size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const auto& [k, v] = values[i];
    EXPECT_EQ(g.metadata()[i].key, k);
    const GgufValue* read = g.find(k);
    ASSERT_NE(read, nullptr) << k;
    EXPECT_EQ(read->type(), v.type()) << k;
    if (k == "u8")
      EXPECT_EQ(*read->get_if<uint8_t>(), 201);
    else
      EXPECT_TRUE(*read == v) << k << " (" << v.type_description() << ")";
  }
  EXPECT_EQ(g.find("a_nested")->type_description(), "array of array");
  EXPECT_EQ(g.find("missing"), nullptr);
  EXPECT_TRUE(g.tensors().empty());
}

TEST(Gguf, TypedAccessors) {
  GgufWriter w;
  w.set("u8", uint8_t{7});
  w.set("i32", int32_t{12});
  w.set("neg", int32_t{-1});
  w.set("big", uint64_t{1} << 40);
  w.set("f64", 0.25);
  w.set("name", "x");
  w.set("flag", true);
  w.set("tokens", std::vector<std::string>{"a", "b"});
  w.set("scores", std::vector<float>{1, 2});
  w.set("scores64", std::vector<double>{3});
  w.set("types", std::vector<uint8_t>{1, 6});
  w.set("wide", std::vector<uint32_t>{1, 3000000000u});
  TempDir dir;
  w.write(dir / "a.gguf");
  const GgufFile g = GgufFile::open(dir / "a.gguf");

  EXPECT_EQ(g.get_u32("u8"), 7u);
  EXPECT_EQ(g.get_u32("i32"), 12u);
  EXPECT_EQ(g.get_u64("big"), uint64_t{1} << 40);
  EXPECT_FLOAT_EQ(g.get_f32("f64"), 0.25f);
  EXPECT_FLOAT_EQ(g.get_f32("i32"), 12.0f);
  EXPECT_EQ(g.get_string("name"), "x");
  EXPECT_TRUE(g.get_bool("flag"));
  EXPECT_EQ(g.get_string_array("tokens"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(g.get_f32_array("scores"), (std::vector<float>{1, 2}));
  EXPECT_EQ(g.get_f32_array("scores64"), (std::vector<float>{3}));
  EXPECT_EQ(g.get_i32_array("types"), (std::vector<int32_t>{1, 6}));
  EXPECT_EQ(g.try_u32("absent"), std::nullopt);
  EXPECT_EQ(g.try_string("absent"), std::nullopt);
  EXPECT_EQ(g.try_u32("u8"), 7u);

  expect_error([&] { g.get_u32("absent"); }, "a.gguf: metadata key 'absent' is missing");
  expect_error([&] { g.get_u32("neg"); }, "'neg' = -1 is not an unsigned integer");
  expect_error([&] { g.get_u32("big"); }, "'big' = 1099511627776 is not an unsigned integer that fits in 32 bits");
  expect_error([&] { g.get_u32("name"); }, "'name' has type string, expected an unsigned integer");
  expect_error([&] { g.try_u32("name"); }, "has type string");
  expect_error([&] { g.get_string("u8"); }, "'u8' has type uint8, expected string");
  expect_error([&] { g.get_f32("tokens"); }, "'tokens' has type array of string, expected a number");
  expect_error([&] { g.get_string_array("scores"); }, "has type array of float32, expected array of string");
  expect_error([&] { g.get_i32_array("wide"); }, "'wide' element 1 = 3000000000 does not fit in int32");
  expect_error([&] { g.get_i32_array("scores"); }, "expected array of int32");
  expect_error([&] { g.get_bool("u8"); }, "expected bool");
}

TEST(Gguf, RoundTripsTensorsOfEveryFormat) {
  struct Case {
    std::string name;
    uint32_t type;
    std::vector<uint64_t> dims;
    size_t bytes;
  };
  const std::vector<Case> cases = {
      {"f32", 0, {4, 3}, 4 * 3 * 4},
      {"f16", 1, {8}, 16},
      {"bf16", 30, {2, 2, 2}, 16},
      {"q8_0", 8, {64, 2}, 2 * 2 * 34},
      {"q4_0", 2, {32, 3, 1, 2}, 6 * 18},
      {"q4_k", 12, {512, 3}, 6 * 144},
      {"q6_k", 14, {256}, 210},
      {"scalar", 0, {}, 4},
      {"empty", 0, {0, 5}, 0},
  };
  std::vector<std::vector<std::byte>> data;
  for (size_t i = 0; i < cases.size(); ++i) data.push_back(pattern_bytes(cases[i].bytes, uint8_t(i)));
  const auto iq2xs = pattern_bytes(74, 99);  // one IQ2_XS superblock

  GgufWriter w;
  w.set("general.architecture", "gemma3");
  for (size_t i = 0; i < cases.size(); ++i)
    w.add_tensor(cases[i].name, cases[i].type, cases[i].dims, data[i]);
  w.add_tensor("iq2_xs", 17, {256}, iq2xs);  // a type this engine cannot run
  TempDir dir;
  w.write(dir / "t.gguf");

  GgufFile moved = GgufFile::open(dir / "t.gguf");
  const GgufFile g = std::move(moved);  // spans into the mapping survive a move
  ASSERT_EQ(g.tensors().size(), cases.size() + 1);
  EXPECT_EQ(g.data_offset() % 32, 0u);
  for (size_t i = 0; i < cases.size(); ++i) {
    const GgufTensor* t = g.find_tensor(cases[i].name);
    ASSERT_NE(t, nullptr) << cases[i].name;
    EXPECT_EQ(&g.tensors()[i], t);
    EXPECT_TRUE(t->known_type);
    EXPECT_EQ(t->ggml_type, cases[i].type);
    EXPECT_EQ(t->dims, cases[i].dims);
    EXPECT_EQ(t->bytes, cases[i].bytes);
    EXPECT_EQ(t->offset % 32, 0u);
    EXPECT_GE(t->offset, g.data_offset());
    ASSERT_EQ(t->data.size(), cases[i].bytes);
    if (!t->data.empty()) {
      EXPECT_EQ(t->data.data(), g.bytes().data() + t->offset);
    }
    EXPECT_TRUE(std::equal(t->data.begin(), t->data.end(), data[i].begin())) << cases[i].name;
  }
  EXPECT_EQ(g.find_tensor("f32")->n_elements, 12u);
  EXPECT_EQ(g.find_tensor("empty")->n_elements, 0u);

  const GgufTensor* k = g.find_tensor("iq2_xs");
  ASSERT_NE(k, nullptr);
  EXPECT_FALSE(k->known_type);
  EXPECT_EQ(k->ggml_type, 17u);
  EXPECT_EQ(ggml_type_name(k->ggml_type), "IQ2_XS");
  EXPECT_EQ(k->bytes, 0u);
  EXPECT_TRUE(k->data.empty());
  EXPECT_EQ(k->dims, (std::vector<uint64_t>{256}));
  EXPECT_EQ(g.find_tensor("nope"), nullptr);
}

TEST(Gguf, HonoursCustomAlignment) {
  const auto a = pattern_bytes(4, 1), b = pattern_bytes(8, 2);
  GgufWriter w;
  w.set("general.alignment", uint32_t{64});
  w.add_tensor("a", 0, {1}, a);
  w.add_tensor("b", 0, {2}, b);
  TempDir dir;
  w.write(dir / "a.gguf");
  const GgufFile g = GgufFile::open(dir / "a.gguf");
  EXPECT_EQ(g.alignment(), 64u);
  EXPECT_EQ(g.data_offset() % 64, 0u);
  EXPECT_EQ(g.find_tensor("b")->offset - g.find_tensor("a")->offset, 64u);
  EXPECT_TRUE(std::equal(b.begin(), b.end(), g.find_tensor("b")->data.begin()));
}

// The exact bytes llama.cpp's gguf reader expects for a small file.
TEST(Gguf, WriterProducesTheGgufV3Layout) {
  const auto d = pattern_bytes(8, 5);
  GgufWriter w;
  w.set("general.architecture", "gemma3");
  w.set("gemma3.block_count", uint32_t{26});
  w.add_tensor("token_embd.weight", 1, {2, 2}, d);
  TempDir dir;
  w.write(dir / "x.gguf");

  Bytes e;
  e.header(1, 2)
      .str("general.architecture").put<uint32_t>(8).str("gemma3")
      .str("gemma3.block_count").put<uint32_t>(4).put<uint32_t>(26)
      .str("token_embd.weight").put<uint32_t>(2).put<uint64_t>(2).put<uint64_t>(2)
      .put<uint32_t>(1).put<uint64_t>(0)
      .pad_to(32);
  std::vector<std::byte> expected = e.bytes();
  expected.insert(expected.end(), d.begin(), d.end());
  expected.resize(expected.size() + 24);  // the last tensor is padded too
  EXPECT_EQ(test::read_file(dir / "x.gguf"), expected);
  // The temporary file it went through was renamed: x.gguf is all there is.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()), 1);
}

TEST(Gguf, WriterRejectsBadInput) {
  const auto d = pattern_bytes(18, 0);
  GgufWriter w;
  expect_error([&] { w.add_tensor("q", 2, {32, 2}, d); }, "tensor 'q' has 18 bytes of data, its Q4_0 dims need 36");
  expect_error([&] { w.add_tensor("q", 2, {16}, d); }, "dims[0] = 16 is not a multiple of the Q4_0 block size");
  expect_error([&] { w.add_tensor(std::string(64, 'n'), 0, {1}, d); }, "longer than 63 bytes");
  expect_error([&] { w.add_tensor("q", 0, {1, 1, 1, 1, 1}, d); }, "more than 4 dimensions");
  w.add_tensor("q", 2, {32}, d);
  expect_error([&] { w.add_tensor("q", 2, {32}, d); }, "duplicate tensor 'q'");

  TempDir dir;
  expect_error([&] { w.write(dir / "no_such_dir" / "m.gguf"); }, "m.gguf: cannot create");
  w.set("general.alignment", uint32_t{48});
  expect_error([&] { w.write(dir / "m.gguf"); }, "general.alignment must be a uint32 power of two");
}

// ---------------------------------------------------------------- hostile input

// A file with metadata, a string array and two tensors: the truncation subject.
std::vector<std::byte> sample_file(const TempDir& dir, std::vector<std::byte>& d0,
                                   std::vector<std::byte>& d1) {
  d0 = pattern_bytes(64 * 34 / 32, 1);  // Q8_0 [64]
  d1 = pattern_bytes(40, 2);            // F32 [10]
  GgufWriter w;
  w.set("general.architecture", "gemma3");
  w.set("tokenizer.ggml.tokens", std::vector<std::string>{"<pad>", "<eos>", "<bos>"});
  w.set("tokenizer.ggml.scores", std::vector<float>{0, 0, 0});
  w.set("gemma3.rope.freq_base", 1e6f);
  w.set("nested", std::vector<GgufArray>{GgufArray{std::vector<uint16_t>{1}}});
  w.add_tensor("blk.0.attn_q.weight", 8, {64}, d0);
  w.add_tensor("output_norm.weight", 0, {10}, d1);
  w.write(dir / "s.gguf");
  return test::read_file(dir / "s.gguf");
}

TEST(Gguf, TruncationAtEveryHeaderByteIsAnError) {
  TempDir dir;
  std::vector<std::byte> d0, d1;
  const auto full = sample_file(dir, d0, d1);
  const GgufFile whole = parse(full);
  const uint64_t data_start = whole.data_offset();
  for (size_t cut = 0; cut < data_start; ++cut) {
    // An exact-size heap copy, so a sanitizer sees any read past the end.
    const std::vector<std::byte> part(full.begin(), full.begin() + static_cast<ptrdiff_t>(cut));
    try {
      parse(part);
      ADD_FAILURE() << "cut at " << cut << " parsed";
    } catch (const Error& e) {
      const std::string_view m = e.what();
      EXPECT_TRUE(m.starts_with("m.gguf: ")) << m;
      const bool expected = m.find("truncated") != m.npos || m.find("not a GGUF file") != m.npos ||
                            m.find("impossible") != m.npos || m.find("cannot fit") != m.npos;
      EXPECT_TRUE(expected) << "cut " << cut << ": " << m;
      if (cut >= 24 && cut < data_start - 32) {  // inside the key/value and tensor infos
        EXPECT_TRUE(m.find("truncated header") != m.npos || m.find("cannot fit") != m.npos ||
                    m.find("impossible") != m.npos) << m;
      }
    }
  }
}

TEST(Gguf, TruncationInTheDataNamesTheTensor) {
  TempDir dir;
  std::vector<std::byte> d0, d1;
  const auto full = sample_file(dir, d0, d1);
  const GgufFile whole = parse(full);
  const GgufTensor& t0 = whole.tensors()[0];
  const GgufTensor& t1 = whole.tensors()[1];
  for (uint64_t cut : {t0.offset, t0.offset + 1, t0.offset + t0.bytes - 1}) {
    const std::vector<std::byte> part(full.begin(), full.begin() + static_cast<ptrdiff_t>(cut));
    expect_error([&] { parse(part); },
                 "m.gguf: truncated: tensor 'blk.0.attn_q.weight' data ends at byte " +
                     std::to_string(t0.offset + t0.bytes) + " but the file has " +
                     std::to_string(cut) + " bytes");
  }
  for (uint64_t cut : {t1.offset, t1.offset + t1.bytes - 1}) {
    const std::vector<std::byte> part(full.begin(), full.begin() + static_cast<ptrdiff_t>(cut));
    expect_error([&] { parse(part); }, "truncated: tensor 'output_norm.weight'");
  }
  // The trailing padding after the last tensor is not needed.
  const std::vector<std::byte> unpadded(full.begin(), full.begin() + static_cast<ptrdiff_t>(t1.offset + t1.bytes));
  EXPECT_NO_THROW(parse(unpadded));

  // And through the file system, the message names the file.
  test::write_file(dir / "cut.gguf", std::span(full).first(static_cast<size_t>(t1.offset + 3)));
  expect_error([&] { GgufFile::open(dir / "cut.gguf"); }, "cut.gguf: truncated: tensor 'output_norm.weight'");
}

TEST(Gguf, WrongMagic) {
  expect_error([] { parse(test::to_bytes("GGML\3\0\0\0")); }, "m.gguf: not a GGUF file (magic 0x4c4d4747");
  expect_error([] { parse(test::to_bytes("{\"a\": 1}")); }, "not a GGUF file (magic");
  expect_error([] { parse(test::to_bytes("GG")); }, "not a GGUF file (2 bytes");
  TempDir dir;
  test::write_file(dir / "empty.gguf", "");
  expect_error([&] { GgufFile::open(dir / "empty.gguf"); }, "empty.gguf: not a GGUF file (0 bytes");
  expect_error([&] { GgufFile::open(dir / "missing.gguf"); }, "missing.gguf: no such file");
}

TEST(Gguf, UnsupportedVersions) {
  expect_error([] { parse(Bytes().header(0, 0, 1).bytes()); }, "unsupported GGUF version 1");
  expect_error([] { parse(Bytes().header(0, 0, 4).bytes()); }, "unsupported GGUF version 4");
  expect_error([] { parse(Bytes().header(0, 0, 0x03000000).bytes()); }, "big-endian GGUF files are not supported");
  EXPECT_EQ(parse(Bytes().header(0, 0, 2).bytes()).version(), 2u);
}

TEST(Gguf, AbsurdCountsAndSizes) {
  expect_error([] { parse(Bytes().header(uint64_t{1} << 63, 0).bytes()); },
               "tensor count 9223372036854775808 is impossible in a file of 24 bytes");
  expect_error([] { parse(Bytes().header(0, ~uint64_t{0}).zeros(100).bytes()); }, "metadata count");
  // A key whose length runs past the end.
  expect_error([] { parse(Bytes().header(0, 1).put<uint64_t>(~uint64_t{0}).zeros(16).bytes()); },
               "truncated header: metadata key #0");
  // A string value of 2^62 bytes.
  expect_error([] { parse(Bytes().header(0, 1).str("k").put<uint32_t>(8).put<uint64_t>(uint64_t{1} << 62).bytes()); },
               "truncated header: metadata value 'k'");
  // Arrays claiming more elements than bytes remain.
  expect_error([] { parse(Bytes().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(~uint64_t{0} / 2).zeros(64).bytes()); },
               "metadata value 'k': array of 9223372036854775807 string elements cannot fit");
  expect_error([] { parse(Bytes().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(0).put<uint64_t>(1000).zeros(999).bytes()); },
               "cannot fit");
  // Unknown value and element types.
  expect_error([] { parse(Bytes().header(0, 1).str("k").put<uint32_t>(13).zeros(8).bytes()); },
               "unknown GGUF value type 13 in metadata value 'k'");
  expect_error([] { parse(Bytes().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(77).put<uint64_t>(0).bytes()); },
               "unknown GGUF value type 77");
  // Arrays nested past the depth limit.
  Bytes deep;
  deep.header(0, 1).str("k").put<uint32_t>(9);
  for (int i = 0; i < 20; ++i) deep.put<uint32_t>(9).put<uint64_t>(1).put<uint32_t>(9);
  deep.zeros(64);
  expect_error([&] { parse(deep.bytes()); }, "arrays nested deeper than 8");
  // Duplicate keys.
  expect_error([] { parse(Bytes().header(0, 2).str("k").put<uint32_t>(0).put<uint8_t>(1).str("k").put<uint32_t>(0).put<uint8_t>(1).bytes()); },
               "duplicate metadata key 'k'");
}

// Tensor infos: one tensor "t" with the given dims/type/offset and enough data.
std::vector<std::byte> one_tensor(std::vector<uint64_t> dims, uint32_t type, uint64_t offset,
                                  size_t data_bytes = 64, uint32_t n_dims_override = 0) {
  Bytes b;
  b.header(1, 0).str("t").put<uint32_t>(n_dims_override ? n_dims_override : uint32_t(dims.size()));
  for (uint64_t d : dims) b.put<uint64_t>(d);
  b.put<uint32_t>(type).put<uint64_t>(offset).pad_to(32).zeros(data_bytes);
  return b.bytes();
}

TEST(Gguf, BadTensorInfos) {
  EXPECT_EQ(parse(one_tensor({16}, 0, 0)).tensors()[0].bytes, 64u);
  expect_error([] { parse(one_tensor({1, 1, 1, 1, 1}, 0, 0)); }, "tensor 't' has 5 dimensions (at most 4)");
  expect_error([] { parse(one_tensor({}, 0, 0, 64, 1000000)); }, "tensor 't' has 1000000 dimensions");
  expect_error([] { parse(one_tensor({33, 2}, 2, 0)); },
               "tensor 't' has dims[0] = 33, not a multiple of the Q4_0 block size 32");
  expect_error([] { parse(one_tensor({uint64_t{1} << 32, uint64_t{1} << 32}, 0, 0)); }, "element count overflows");
  expect_error([] { parse(one_tensor({~uint64_t{0}}, 0, 0)); }, "element count overflows");
  expect_error([] { parse(one_tensor({uint64_t{1} << 62}, 0, 0)); }, "byte size overflows");
  expect_error([] { parse(one_tensor({16}, 0, 16)); }, "tensor 't' data offset 16 is not a multiple of the alignment 32");
  expect_error([] { parse(one_tensor({16}, 0, ~uint64_t{0} - 31)); }, "tensor 't' data offset");
  expect_error([] { parse(one_tensor({16}, 0, 32)); }, "truncated: tensor 't' data ends at byte");
  expect_error([] { parse(one_tensor({1024}, 0, 0)); }, "truncated: tensor 't'");
  expect_error([] { parse(one_tensor({16}, 0, 96)); }, "tensor 't' data offset 96 points past the end of the file");
  // Unknown types are listed even when their offset points nowhere.
  const GgufFile g = parse(one_tensor({256}, 17, uint64_t{1} << 40));
  EXPECT_FALSE(g.tensors()[0].known_type);
  EXPECT_EQ(ggml_type_name(17), "IQ2_XS");
  EXPECT_EQ(ggml_type_name(10), "Q2_K");
  EXPECT_EQ(ggml_type_name(1000), "unknown");
  expect_error([] { parse(one_tensor({256}, 1000, 0)); }, "tensor 't' has unknown ggml type 1000");
  expect_error([] { parse(one_tensor({256}, 4, 0)); }, "tensor 't' has unknown ggml type 4");  // retired from ggml

  // Two tensors whose data share bytes: the second starts inside the first.
  Bytes overlap;
  overlap.header(2, 0);
  overlap.str("a").put<uint32_t>(1).put<uint64_t>(16).put<uint32_t>(0).put<uint64_t>(0);
  overlap.str("b").put<uint32_t>(1).put<uint64_t>(8).put<uint32_t>(0).put<uint64_t>(32);
  overlap.pad_to(32).zeros(96);
  expect_error([&] { parse(overlap.bytes()); }, "tensors 'a' and 'b' overlap: 'a' holds bytes");

  Bytes dup;
  dup.header(2, 0);
  for (int i = 0; i < 2; ++i) dup.str("t").put<uint32_t>(1).put<uint64_t>(8).put<uint32_t>(0).put<uint64_t>(0);
  dup.pad_to(32).zeros(32);
  expect_error([&] { parse(dup.bytes()); }, "duplicate tensor name 't'");
}

TEST(Gguf, BadAlignment) {
  expect_error([] { parse(Bytes().header(0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(48).bytes()); },
               "general.alignment = 48 is not a power of two");
  expect_error([] { parse(Bytes().header(0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(0).bytes()); },
               "general.alignment = 0 is not a power of two");
  expect_error([] { parse(Bytes().header(0, 1).str("general.alignment").put<uint32_t>(8).str("32").bytes()); },
               "'general.alignment' has type string");
  EXPECT_EQ(parse(Bytes().header(0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(16).bytes()).alignment(), 16u);
}

// Every byte flipped in the header of a valid file: parse or unicorn::Error, nothing else.
TEST(Gguf, ByteFlipsNeverCrash) {
  TempDir dir;
  std::vector<std::byte> d0, d1;
  auto bytes = sample_file(dir, d0, d1);
  const size_t header = static_cast<size_t>(parse(bytes).data_offset());
  size_t errors = 0;
  for (size_t i = 0; i < header; ++i) {
    for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      auto copy = bytes;
      copy[i] ^= std::byte{flip};
      try {
        const GgufFile g = parse(copy);
        for (const auto& t : g.tensors()) EXPECT_LE(t.offset + t.bytes, copy.size());
      } catch (const Error&) {
        ++errors;
      }
    }
  }
  EXPECT_GT(errors, 0u);
}

}  // namespace
}  // namespace unicorn::io
