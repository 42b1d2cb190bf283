// Every SPIR-V module's specialization constants (count, types, names) and
// binding count against the kernels:: struct and k*Bindings the engine passes.
#include "kernel_harness.hpp"
#include "unicorn/vision/kernels.hpp"

#include <boost/hana/accessors.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/members.hpp>
#include <boost/hana/size.hpp>
#include <optional>

namespace unicorn {
namespace {

// What the engine knows of a module: its constants struct's fields (is each a
// float? its name) and its binding count, from the module name's kernel prefix.
struct ModuleContract {
  std::vector<bool> float_fields;
  uint32_t bindings;
  std::vector<std::string> field_names;
};

template <class Spec>
ModuleContract contract(uint32_t bindings) {
  ModuleContract m{{}, bindings, {}};
  boost::hana::for_each(boost::hana::members(Spec{}), [&](const auto& v) {
    m.float_fields.push_back(std::is_same_v<std::decay_t<decltype(v)>, float>);
  });
  boost::hana::for_each(boost::hana::accessors<Spec>(), [&](auto pair) {
    m.field_names.emplace_back(boost::hana::to<char const*>(boost::hana::first(pair)));
  });
  static_assert(decltype(boost::hana::size(boost::hana::members(Spec{})))::value > 0);
  return m;
}

std::optional<ModuleContract> contract_of(std::string_view module) {
  namespace k = kernels;
  const std::pair<std::string_view, ModuleContract> table[] = {
      {"embed_", contract<k::Embed>(k::kEmbedBindings)},
      {"matvec_", contract<k::MatVec>(k::kMatVecBindings)},
      {"matmul_coop_splitk_", contract<k::LinearCoopSplitK>(k::kLinearSplitKBindings)},
      {"matmul_coop_", contract<k::LinearCoop>(k::kLinearBindings)},
      {"matmul_", contract<k::Linear>(k::kLinearBindings)},
      {"convert_", contract<k::Convert>(k::kConvertBindings)},
      {"attn_prep_", contract<k::AttnPrep>(k::kAttnPrepBindings)},
      {"attention_tiled_", contract<k::AttentionTiled>(k::kAttentionTiledBindings)},
      {"attention_coop_", contract<k::AttentionCoop>(k::kAttentionCoopBindings)},
      {"attention_", contract<k::Attention>(k::kAttentionBindings)},
      {"rmsnorm", contract<k::RmsNorm>(k::kRmsNormBindings)},
      {"geglu", contract<k::Geglu>(k::kGegluBindings)},
      {"logits_max", contract<k::LogitsMax>(k::kLogitsMaxBindings)},
      {"sample", contract<k::Sample>(k::kSampleBindings)},
      {"logprobs", contract<k::Logprobs>(k::kLogprobsBindings)},
      {"bandwidth", ModuleContract{{}, 2}},
      {"check_finite", contract<k::CheckFinite>(k::kCheckFiniteBindings)},
      {"vision_patches", contract<k::VisionPatches>(k::kVisionPatchesBindings)},
      {"vision_layernorm", contract<k::VisionLayerNorm>(k::kVisionLayerNormBindings)},
      {"vision_attention", contract<k::VisionAttention>(k::kVisionAttentionBindings)},
      {"vision_attention_coop", contract<k::VisionAttentionCoop>(k::kVisionAttentionCoopBindings)},
      {"vision_attention_coop_nv", contract<k::VisionAttentionCoop>(k::kVisionAttentionCoopBindings)},
      {"vision_gelu", contract<k::VisionGelu>(k::kVisionGeluBindings)},
      {"vision_pool", contract<k::VisionPool>(k::kVisionPoolBindings)},
  };
  for (const auto& [prefix, c] : table)
    if (prefix.back() == '_' ? module.starts_with(prefix) : module == prefix) return c;
  return std::nullopt;
}

// The module's spec constants (id -> is float, and its GLSL name where the
// module keeps names) and highest binding + 1, read from the SPIR-V:
// OpDecorate SpecId / Binding, OpSpecConstant*, OpType* and OpName.
struct ModuleFacts {
  std::map<uint32_t, bool> spec_ids;  // SpecId -> float?
  std::map<uint32_t, std::string> spec_names;  // SpecId -> name
  uint32_t bindings = 0;
};

ModuleFacts parse_spirv(std::span<const uint32_t> w) {
  constexpr uint32_t kOpName = 5, kOpTypeInt = 21, kOpTypeFloat = 22, kOpSpecConstantTrue = 48,
                     kOpSpecConstantFalse = 49, kOpSpecConstant = 50, kOpDecorate = 71,
                     kDecorationSpecId = 1, kDecorationBinding = 33;
  std::map<uint32_t, uint32_t> spec_id_of;  // result id -> SpecId
  std::map<uint32_t, uint32_t> type_of;     // spec constant id -> type id
  std::map<uint32_t, bool> float_type;      // type id -> float?
  std::map<uint32_t, std::string> name_of;  // result id -> OpName
  ModuleFacts f;
  for (size_t i = 5; i < w.size();) {
    const uint32_t op = w[i] & 0xffff, count = w[i] >> 16;
    if (count == 0 || i + count > w.size()) throw Error("SPIR-V: malformed instruction");
    if (op == kOpName && count > 2) {  // a nul-terminated string in the words after the target
      const char* text = reinterpret_cast<const char*>(&w[i + 2]);
      name_of[w[i + 1]] = std::string(text, strnlen(text, 4 * (count - 2)));
    }
    if (op == kOpDecorate && w[i + 2] == kDecorationSpecId) spec_id_of[w[i + 1]] = w[i + 3];
    if (op == kOpDecorate && w[i + 2] == kDecorationBinding)
      f.bindings = std::max(f.bindings, w[i + 3] + 1);
    if (op == kOpTypeInt) float_type[w[i + 1]] = false;
    if (op == kOpTypeFloat) float_type[w[i + 1]] = true;
    if (op == kOpSpecConstant || op == kOpSpecConstantTrue || op == kOpSpecConstantFalse)
      type_of[w[i + 2]] = w[i + 1];
    i += count;
  }
  for (const auto& [id, spec_id] : spec_id_of) {
    f.spec_ids[spec_id] = float_type[type_of[id]];
    if (name_of.count(id)) f.spec_names[spec_id] = name_of[id];
  }
  return f;
}

TEST(Spirv, SpecConstantsMatchTheKernelStructs) {
  ASSERT_GT(std::size(spirv::kModuleNames), 0u);
  for (size_t i = 0; i < std::size(spirv::kModuleNames); ++i) {
    const struct {
      std::string_view name;
      std::span<const uint32_t> words;
    } m{spirv::kModuleNames[i], spirv::kModuleWords[i]};
    SCOPED_TRACE(std::string(m.name));
    const auto c = contract_of(m.name);
    ASSERT_TRUE(c) << "module " << m.name
                   << " has no kernels:: struct mapped in spirv_contract_tests.cpp (contract_of)";
    ASSERT_GE(m.words.size(), 5u);
    ASSERT_EQ(m.words[0], 0x07230203u) << m.name << ": not SPIR-V";
    const ModuleFacts f = parse_spirv(m.words);
    uint32_t expect = 0;
    for (const auto& [id, is_float] : f.spec_ids) {
      EXPECT_EQ(id, expect) << m.name << ": constant_id " << id << " leaves a gap (expected "
                            << expect << ")";
      expect = id + 1;
    }
    ASSERT_EQ(f.spec_ids.size(), c->float_fields.size())
        << m.name << " declares " << f.spec_ids.size()
        << " specialization constants but its kernels:: struct has " << c->float_fields.size()
        << " fields";
    for (const auto& [id, is_float] : f.spec_ids)
      if (id < c->float_fields.size())
        EXPECT_EQ(is_float, c->float_fields[id])
            << m.name << ": constant_id " << id << " is " << (is_float ? "float" : "an integer")
            << " in the shader, the other in the struct";
    // The same names on both sides: the GLSL constant is the field in capitals.
    for (const auto& [id, name] : f.spec_names)
      if (id < c->field_names.size()) {
        std::string field = c->field_names[id];
        for (char& ch : field) ch = char(std::toupper(static_cast<unsigned char>(ch)));
        EXPECT_EQ(name, field) << m.name << ": constant_id " << id << " is " << name << " in the shader but "
                               << c->field_names[id] << " in its kernels:: struct";
      }
    // The float variants of matmul_coop_splitk never fuse a pair, so they
    // leave its binding 4, their last, unused (a pipeline layout may hold more
    // bindings than a module uses); matvec's leave it as a gap below binding
    // 5, the counters.
    std::string_view name = m.name;
    if (name.ends_with("_nv")) name.remove_suffix(3);  // the NV form of a cooperative-matrix module
    const bool float_variant = name.ends_with("_f32") || name.ends_with("_f16") || name.ends_with("_bf16");
    const bool float_pair = name.starts_with("matmul_coop_splitk_") && float_variant;
    EXPECT_EQ(f.bindings, c->bindings - (float_pair ? 1 : 0))
        << m.name << ": binding count differs from kernels::k*Bindings";
  }
}

// The engine's typed handles (engine/kernels.hpp, vision/kernels.hpp) give each
// module the constants struct and binding count its contract above names.
template <class Spec>
void expect_handle_meets_contract(const kernels::Shader<Spec>& handle) {
  const std::string_view name = spirv::name(handle.module);
  SCOPED_TRACE(std::string(name));
  const auto want = contract_of(name);
  ASSERT_TRUE(want);
  const ModuleContract have = contract<Spec>(handle.bindings);
  EXPECT_EQ(have.field_names, want->field_names) << name << ": its handle's Spec is another kernel's";
  EXPECT_EQ(have.bindings, want->bindings) << name;
}

TEST(Spirv, TypedHandlesMeetTheirModulesContracts) {
  namespace k = kernels;
  for (const FormatInfo& info : kFormats) {  // every weight format
    const Format f = info.format;
    expect_handle_meets_contract(k::embed(f));
    expect_handle_meets_contract(k::convert(f));
    expect_handle_meets_contract(k::matvec(f));
    expect_handle_meets_contract(k::matmul(f));
    expect_handle_meets_contract(k::matmul_coop(f));
    expect_handle_meets_contract(k::matmul_coop_splitk(f));
    if (is_block_quantized(f))
      expect_handle_meets_contract(k::matvec_dot(f));
    else  // integer dot products take blocks
      EXPECT_THROW(k::matvec_dot(f), Error);
  }
  for (Format kv : {Format::F16, Format::F32}) {
    expect_handle_meets_contract(k::attn_prep(kv));
    expect_handle_meets_contract(k::attention(kv));
    expect_handle_meets_contract(k::attention_tiled(kv));
    expect_handle_meets_contract(k::attention_coop(kv));
  }
  expect_handle_meets_contract(k::kRmsNorm);
  expect_handle_meets_contract(k::kGeglu);
  expect_handle_meets_contract(k::kLogitsMax);
  expect_handle_meets_contract(k::kSample);
  expect_handle_meets_contract(k::kLogprobs);
  expect_handle_meets_contract(k::kCheckFinite);
  expect_handle_meets_contract(k::kVisionPatches);
  expect_handle_meets_contract(k::kVisionLayerNorm);
  expect_handle_meets_contract(k::kVisionAttention);
  expect_handle_meets_contract(k::kVisionAttentionCoop);
  expect_handle_meets_contract(k::kVisionGelu);
  expect_handle_meets_contract(k::kVisionPool);
}

}  // namespace
}  // namespace unicorn
