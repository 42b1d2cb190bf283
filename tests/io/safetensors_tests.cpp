// Safetensors: single files, sharded checkpoints with an index, and the ways
// a file or an index can be wrong.
#include "unicorn/io/safetensors.hpp"

#include "io_test_util.hpp"

namespace unicorn::io {
namespace {

using nlohmann::json;
using test::expect_error;
using test::TempDir;

struct Spec {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  size_t bytes;
};

// A safetensors file with the given tensors laid out in order; data byte i of
// the data section is (i * 3) & 0xff. `edit` may alter the header before writing.
std::vector<std::byte> make_file(const std::vector<Spec>& specs,
                                 const std::function<void(json&)>& edit = {}) {
  json header = json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const auto& s : specs) {
    header[s.name] = {{"dtype", s.dtype}, {"shape", s.shape}, {"data_offsets", {offset, offset + s.bytes}}};
    offset += s.bytes;
  }
  if (edit) edit(header);
  std::string text = header.dump();
  while (text.size() % 8) text += ' ';  // the format pads the header with spaces
  std::vector<std::byte> out(8);
  const uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);
  for (char c : text) out.push_back(std::byte(c));
  for (uint64_t i = 0; i < offset; ++i) out.push_back(std::byte(static_cast<uint8_t>(i * 3)));
  return out;
}

const std::vector<Spec> kSpecs = {
    {"model.embed_tokens.weight", "BF16", {4, 3}, 24},
    {"model.norm.weight", "F32", {3}, 12},
    {"a.scalar", "F16", {}, 2},
};

TEST(Safetensors, SingleFile) {
  TempDir dir;
  test::write_file(dir / "m.safetensors", make_file(kSpecs));
  for (const auto& path : {dir / "m.safetensors"}) {
    const SafetensorsModel m = SafetensorsModel::open(path);
    ASSERT_EQ(m.tensors().size(), 3u);
    // In data order, not name order.
    EXPECT_EQ(m.tensors()[0].name, "model.embed_tokens.weight");
    EXPECT_EQ(m.tensors()[1].name, "model.norm.weight");
    EXPECT_EQ(m.tensors()[2].name, "a.scalar");
    const SafeTensor* norm = m.find("model.norm.weight");
    ASSERT_NE(norm, nullptr);
    EXPECT_EQ(norm->dtype, "F32");
    EXPECT_EQ(norm->shape, (std::vector<uint64_t>{3}));
    EXPECT_EQ(norm->file, path.string());
    ASSERT_EQ(norm->data.size(), 12u);
    EXPECT_EQ(norm->data[0], std::byte{24 * 3});  // data byte 24
    EXPECT_EQ(m.find("a.scalar")->shape, std::vector<uint64_t>{});
    EXPECT_EQ(m.find("missing"), nullptr);
  }
}

TEST(Safetensors, DirectoryWithModelSafetensors) {
  TempDir dir;
  test::write_file(dir / "model.safetensors", make_file(kSpecs));
  const SafetensorsModel m = SafetensorsModel::open(dir.path());
  EXPECT_EQ(m.tensors().size(), 3u);
  EXPECT_EQ(m.find("model.embed_tokens.weight")->shape, (std::vector<uint64_t>{4, 3}));
}

void write_sharded(const TempDir& dir, const json& weight_map) {
  test::write_file(dir / "model-00001-of-00002.safetensors",
                   make_file({{"model.embed_tokens.weight", "BF16", {4, 3}, 24}}));
  test::write_file(dir / "model-00002-of-00002.safetensors",
                   make_file({{"model.norm.weight", "F32", {3}, 12}, {"lm_head.weight", "BF16", {2, 2}, 8}}));
  test::write_file(dir / "model.safetensors.index.json",
                   json{{"metadata", {{"total_size", 44}}}, {"weight_map", weight_map}}.dump());
}

const json kWeightMap = {{"model.embed_tokens.weight", "model-00001-of-00002.safetensors"},
                         {"model.norm.weight", "model-00002-of-00002.safetensors"},
                         {"lm_head.weight", "model-00002-of-00002.safetensors"}};

TEST(Safetensors, ShardedWithIndex) {
  TempDir dir;
  write_sharded(dir, kWeightMap);
  // The directory, and the index path itself, open the same model.
  for (const auto& path : {dir.path(), dir / "model.safetensors.index.json"}) {
    const SafetensorsModel m = SafetensorsModel::open(path);
    ASSERT_EQ(m.tensors().size(), 3u);
    EXPECT_EQ(m.tensors()[0].name, "model.embed_tokens.weight");
    EXPECT_EQ(m.find("model.norm.weight")->file, (dir / "model-00002-of-00002.safetensors").string());
    EXPECT_EQ(m.find("model.embed_tokens.weight")->file, (dir / "model-00001-of-00002.safetensors").string());
    EXPECT_EQ(m.find("lm_head.weight")->data.size(), 8u);
  }
}

TEST(Safetensors, IndexErrors) {
  {
    TempDir dir;
    json wm = kWeightMap;
    wm["model.layers.0.mlp.up_proj.weight"] = "model-00003-of-00003.safetensors";
    write_sharded(dir, wm);
    expect_error([&] { SafetensorsModel::open(dir.path()); },
                 "model.safetensors.index.json: shard 'model-00003-of-00003.safetensors' "
                 "(holding tensor 'model.layers.0.mlp.up_proj.weight') does not exist");
  }
  {
    TempDir dir;
    json wm = kWeightMap;
    wm["model.norm.weight"] = "model-00001-of-00002.safetensors";
    write_sharded(dir, wm);
    expect_error([&] { SafetensorsModel::open(dir.path()); },
                 "weight_map puts tensor 'model.norm.weight' in shard 'model-00001-of-00002.safetensors' "
                 "but that shard does not hold it");
  }
  {
    TempDir dir;
    write_sharded(dir, {{"x", "../etc/passwd"}});
    expect_error([&] { SafetensorsModel::open(dir.path()); }, "shard name '../etc/passwd' for tensor 'x' is not a plain file name");
  }
  {
    TempDir dir;
    write_sharded(dir, json::object());
    expect_error([&] { SafetensorsModel::open(dir.path()); }, "weight_map is empty");
  }
  {
    TempDir dir;
    write_sharded(dir, kWeightMap);
    test::write_file(dir / "model.safetensors.index.json", "{\"weight_map\": [1]}");
    expect_error([&] { SafetensorsModel::open(dir.path()); }, "'weight_map' missing or not an object");
    test::write_file(dir / "model.safetensors.index.json", "{\"weight_map\": {\"a\": 3}}");
    expect_error([&] { SafetensorsModel::open(dir.path()); }, "weight_map entry for 'a' is not a string");
    test::write_file(dir / "model.safetensors.index.json", "{\"weight_map\": ");
    expect_error([&] { SafetensorsModel::open(dir.path()); }, "model.safetensors.index.json: not valid JSON");
  }
  {
    // The same tensor in two shards.
    TempDir dir;
    test::write_file(dir / "a.safetensors", make_file({{"t", "F32", {1}, 4}}));
    test::write_file(dir / "b.safetensors", make_file({{"t", "F32", {1}, 4}}));
    test::write_file(dir / "model.safetensors.index.json",
                     json{{"weight_map", {{"t", "a.safetensors"}, {"u", "b.safetensors"}}}}.dump());
    expect_error([&] { SafetensorsModel::open(dir.path()); }, "b.safetensors: tensor 't' also appears in");
  }
  {
    TempDir dir;
    expect_error([&] { SafetensorsModel::open(dir.path()); },
                 "no model.safetensors or model.safetensors.index.json in this directory");
    expect_error([&] { SafetensorsModel::open(dir / "x.safetensors"); }, "x.safetensors: no such file");
  }
}

void parse_bytes(const std::vector<std::byte>& b) {
  std::vector<SafeTensor> out;
  detail::parse_safetensors(b, "f.safetensors", out);
}

TEST(Safetensors, TruncationAtEveryByteIsAnError) {
  const auto full = make_file(kSpecs);
  EXPECT_NO_THROW(parse_bytes(full));
  uint64_t header_len = 0;
  std::memcpy(&header_len, full.data(), 8);
  for (size_t cut = 0; cut < full.size(); ++cut) {
    const std::vector<std::byte> part(full.begin(), full.begin() + static_cast<ptrdiff_t>(cut));
    const std::string m = expect_error([&] { parse_bytes(part); }, "f.safetensors: truncated");
    if (cut >= 8 + header_len) {
      EXPECT_NE(m.find("tensor"), std::string::npos) << m;
    }
  }
  TempDir dir;
  test::write_file(dir / "cut.safetensors", std::span(full).first(full.size() - 1));
  expect_error([&] { SafetensorsModel::open(dir / "cut.safetensors"); },
               "cut.safetensors: truncated: tensor 'a.scalar' data ends at byte " +
                   std::to_string(full.size()) + " but the file has " + std::to_string(full.size() - 1) + " bytes");
}

TEST(Safetensors, BadHeaders) {
  const auto with = [](const std::function<void(json&)>& edit) { return make_file(kSpecs, edit); };
  // Header length.
  std::vector<std::byte> huge(16);
  const uint64_t n = uint64_t{1} << 40;
  std::memcpy(huge.data(), &n, 8);
  expect_error([&] { parse_bytes(huge); }, "header length 1099511627776 is not sane");
  // JSON.
  auto bad = make_file(kSpecs);
  bad[8] = std::byte{'['};
  expect_error([&] { parse_bytes(bad); }, "f.safetensors: header is not valid JSON");
  auto array_header = test::to_bytes(std::string("\x02\0\0\0\0\0\0\0[]", 10));
  expect_error([&] { parse_bytes(array_header); }, "header is not a JSON object");
  // Entries.
  expect_error([&] { parse_bytes(with([](json& h) { h["model.norm.weight"]["data_offsets"] = {12, 24000}; })); },
               "tensor 'model.norm.weight': data_offsets [12, 24000] hold 23988 bytes but F32 of 3 elements needs 12");
  expect_error([&] { parse_bytes(with([](json& h) {
                 h["model.norm.weight"]["shape"] = {3000};
                 h["model.norm.weight"]["data_offsets"] = {24, 24 + 12000};
               })); },
               "truncated: tensor 'model.norm.weight' data ends at byte");
  expect_error([&] { parse_bytes(with([](json& h) { h["model.norm.weight"]["data_offsets"] = {36, 24}; })); },
               "run backwards");
  expect_error([&] { parse_bytes(with([](json& h) { h["model.norm.weight"]["data_offsets"] = {-1, 11}; })); },
               "'data_offsets' must be two non-negative integers");
  expect_error([&] { parse_bytes(with([](json& h) { h["model.norm.weight"]["data_offsets"] = {0}; })); },
               "'data_offsets' must be two non-negative integers");
  expect_error([&] { parse_bytes(with([](json& h) { h["model.norm.weight"]["dtype"] = "Q4"; })); },
               "tensor 'model.norm.weight': unknown dtype 'Q4'");
  expect_error([&] { parse_bytes(with([](json& h) { h["model.norm.weight"].erase("dtype"); })); },
               "'dtype' missing or not a string");
  expect_error([&] { parse_bytes(with([](json& h) { h["model.norm.weight"]["shape"] = {-3}; })); },
               "shape entries must be non-negative integers");
  expect_error([&] { parse_bytes(with([](json& h) { h["model.norm.weight"]["shape"] = "3"; })); },
               "'shape' missing or not an array");
  expect_error([&] { parse_bytes(with([](json& h) { h["model.norm.weight"]["shape"] = {uint64_t{1} << 40, uint64_t{1} << 40}; })); },
               "element count overflows");
  expect_error([&] { parse_bytes(with([](json& h) { h["model.norm.weight"]["shape"] = {uint64_t{1} << 62}; })); },
               "byte size overflows");
  expect_error([&] { parse_bytes(with([](json& h) { h["x"] = 5; })); }, "tensor 'x': entry is not a JSON object");
  expect_error([&] { parse_bytes(with([](json& h) {
                 h["model.norm.weight"]["data_offsets"] = {20, 32};  // overlaps the BF16 tensor [0, 24)
               })); },
               "overlap in the data section");
  // Empty tensors overlap nothing.
  EXPECT_NO_THROW(parse_bytes(with([](json& h) {
    h["e"] = {{"dtype", "F32"}, {"shape", {0, 4}}, {"data_offsets", {4, 4}}};
  })));
}

}  // namespace
}  // namespace unicorn::io
