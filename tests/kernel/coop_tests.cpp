// The build-time NV -> KHR cooperative-matrix rewrite (tools/spirv_coop_khr.hpp).
// SPIRV-Tools 2023.1 (Debian 12) does not know SPV_KHR_cooperative_matrix, so
// the build validates the NV form with spirv-val and these tests check the KHR
// form's structure: no NV instruction left, every matrix type names a use, the
// MulAdd operands have the uses A / B / accumulator, loads and stores name a
// layout constant, ids are defined once and below the bound. They need no
// device, so they run everywhere.
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <set>
#include <span>
#include <string>
#include <unicorn/spirv.hpp>
#include <vector>

#include "spirv_coop_khr.hpp"

namespace unicorn {
namespace {
#include "coop_conflict.h"
#include "coop_shared_type.h"

namespace sc = tools::spirv_coop;

struct Inst {
  uint32_t op;
  std::vector<uint32_t> w;  // operands (the words after the opcode word)
};

std::vector<Inst> instructions(std::span<const uint32_t> m) {
  std::vector<Inst> out;
  for (size_t i = 5; i < m.size();) {
    const uint32_t n = m[i] >> 16;
    if (n == 0 || i + n > m.size()) throw std::runtime_error("malformed SPIR-V");
    out.push_back({m[i] & 0xffffu, {m.begin() + i + 1, m.begin() + i + n}});
    i += n;
  }
  return out;
}

// Checks the KHR form; returns the uses of the matrix types (type id -> use).
::testing::AssertionResult khr_structure(std::span<const uint32_t> m,
                                         std::map<uint32_t, uint32_t>* uses_out = nullptr) {
  auto fail = [](const std::string& s) { return ::testing::AssertionFailure() << s; };
  if (m.size() < 5 || m[0] != 0x07230203u) return fail("not SPIR-V");
  const uint32_t bound = m[3];
  std::map<uint32_t, uint32_t> constant;        // OpConstant id -> value
  std::map<uint32_t, uint32_t> use_of_type;     // KHR matrix type -> use
  std::map<uint32_t, uint32_t> type_of;         // value -> type (the ops checked here)
  std::set<uint32_t> defined;
  bool cap = false, ext = false;
  for (const Inst& in : instructions(m)) {
    if (in.op >= 5358 && in.op <= 5362) return fail("NV instruction " + std::to_string(in.op) + " left");
    if (in.op == 17 && in.w[0] == sc::kCapabilityCooperativeMatrixNV) return fail("NV capability left");
    if (in.op == 17 && in.w[0] == sc::kCapabilityCooperativeMatrixKHR) cap = true;
    if (in.op == 10) {
      const std::string name(reinterpret_cast<const char*>(in.w.data()));
      if (name == "SPV_NV_cooperative_matrix") return fail("NV extension left");
      if (name == "SPV_KHR_cooperative_matrix") ext = true;
    }
    if (in.op == sc::kOpConstant) constant[in.w[1]] = in.w[2];
    if (in.op == sc::kOpTypeCooperativeMatrixKHR) {
      if (in.w.size() != 6) return fail("OpTypeCooperativeMatrixKHR without 6 operands");
      for (int i : {2, 3, 4, 5})  // Scope, Rows, Columns: constants (or spec constants); Use: constant
        if (in.w[i] >= bound) return fail("matrix type operand out of bounds");
      if (!constant.count(in.w[5]) || constant[in.w[5]] > 2) return fail("Use is not a constant 0..2");
      use_of_type[in.w[0]] = constant[in.w[5]];
    }
    if (in.op == sc::kOpCooperativeMatrixLoadKHR || in.op == sc::kOpCooperativeMatrixStoreKHR) {
      const uint32_t layout = in.w[in.op == sc::kOpCooperativeMatrixLoadKHR ? 3 : 2];
      if (!constant.count(layout) || constant[layout] > 1) return fail("Layout is not a constant 0/1");
    }
    if (in.op == sc::kOpCooperativeMatrixMulAddKHR) {
      for (uint32_t i : {2u, 3u, 4u})
        if (!type_of.count(in.w[i])) return fail("MulAdd operand of unknown type");
      const uint32_t want[] = {sc::kUseA, sc::kUseB, sc::kUseAccumulator};
      for (uint32_t i = 0; i < 3; ++i)
        if (use_of_type[type_of[in.w[2 + i]]] != want[i])
          return fail("MulAdd operand " + std::to_string(i) + " has use " +
                      std::to_string(use_of_type[type_of[in.w[2 + i]]]));
      if (use_of_type[in.w[0]] != sc::kUseAccumulator) return fail("MulAdd result is no accumulator");
    }
    if (sc::has_type_and_result(in.op) || in.op == sc::kOpCooperativeMatrixLoadKHR ||
        in.op == sc::kOpCooperativeMatrixMulAddKHR)
      type_of[in.w[1]] = in.w[0];
    // Result ids of the instructions this module uses: type declarations
    // (OpType* 19..39 and the KHR matrix), constants, and typed results.
    uint32_t result = 0;
    if ((in.op >= 19 && in.op < 39) || in.op == sc::kOpTypeCooperativeMatrixKHR)
      result = in.w[0];
    else if ((in.op >= 41 && in.op <= 52) || sc::has_type_and_result(in.op) ||
             in.op == sc::kOpCooperativeMatrixLoadKHR || in.op == sc::kOpCooperativeMatrixMulAddKHR)
      result = in.w[1];
    if (result) {
      if (result >= bound) return fail("id %" + std::to_string(result) + " is not below the bound");
      if (!defined.insert(result).second) return fail("id %" + std::to_string(result) + " defined twice");
    }
  }
  if (!cap || !ext) return fail("no CooperativeMatrixKHR capability or SPV_KHR_cooperative_matrix");
  if (use_of_type.empty()) return fail("no cooperative matrix type");
  if (uses_out) *uses_out = use_of_type;
  return ::testing::AssertionSuccess();
}


// The build step (unicorn-spirv-coop-khr) and the header agree on engine
// module `khr`, its output is well formed, and it has three matrix types, one
// use each, rewritten in place (no clones).
void expect_rewrite_of_nv_form(const std::string& khr) {
  const std::string nv = khr + "_nv";
  const auto nv_words = spirv::find(nv), khr_words = spirv::find(khr);
  ASSERT_FALSE(nv_words.empty()) << nv;
  ASSERT_FALSE(khr_words.empty()) << khr;
  const auto converted = sc::nv_to_khr(nv_words);
  EXPECT_TRUE(std::equal(converted.begin(), converted.end(), khr_words.begin(), khr_words.end()))
      << khr << " differs from the rewrite of " << nv;
  std::map<uint32_t, uint32_t> uses;
  EXPECT_TRUE(khr_structure(khr_words, &uses)) << khr;
  std::multiset<uint32_t> use_counts;
  for (const auto& [type, use] : uses) use_counts.insert(use);
  EXPECT_EQ(use_counts, (std::multiset<uint32_t>{0, 1, 2})) << khr;
}

// matmul_coop names its A, B and C shapes with their own spec constants.
TEST(CoopSpirv, EngineModulesAreTheRewriteOfTheirNvForm) {
  for (const FormatInfo& f : kFormats) {  // every weight format's module
    std::string name = "matmul_coop_";
    for (char c : f.name) name += char(std::tolower(static_cast<unsigned char>(c)));
    expect_rewrite_of_nv_form(name);
  }
}

// attention_coop, for both cache formats: its A matrices (the queries, then
// the probabilities), B matrices (the keys, then the values) and accumulators
// (scores, output, the row-index matrix) share the three types.
TEST(CoopSpirv, AttentionModulesAreTheRewriteOfTheirNvForm) {
  for (const char* kv : {"f16", "f32"}) expect_rewrite_of_nv_form(std::string("attention_coop_") + kv);
}

TEST(CoopSpirv, ModulesWithoutCooperativeMatricesAreUnchanged) {
  const auto words = spirv::find("matmul_f16");
  ASSERT_FALSE(words.empty());
  const auto out = sc::nv_to_khr(words);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), words.begin(), words.end()));
}

// One NV type (16 x 16 fp16) used as A and as B, B's values reaching MulAdd
// through variables, an array and a scalar product: two KHR types result.
TEST(CoopSpirv, OneNvTypeInTwoRolesIsSplit) {
  const auto out = sc::nv_to_khr(coop_shared_type_nv);
  std::map<uint32_t, uint32_t> uses;
  ASSERT_TRUE(khr_structure(out, &uses));
  std::multiset<uint32_t> use_counts;
  for (const auto& [type, use] : uses) use_counts.insert(use);
  EXPECT_EQ(use_counts, (std::multiset<uint32_t>{0, 1, 2}));
  EXPECT_GT(out[3], coop_shared_type_nv[3]) << "the bound must grow (new constants and types)";
  // The two fp16 types keep the NV type's shape and component type.
  std::vector<std::vector<uint32_t>> fp16_types;
  for (const Inst& in : instructions(out))
    if (in.op == sc::kOpTypeCooperativeMatrixKHR && uses[in.w[0]] != sc::kUseAccumulator)
      fp16_types.push_back({in.w[1], in.w[2], in.w[3], in.w[4]});
  ASSERT_EQ(fp16_types.size(), 2u);
  EXPECT_EQ(fp16_types[0], fp16_types[1]);
}

TEST(CoopSpirv, AValueInTwoRolesIsRefused) {
  try {
    sc::nv_to_khr(coop_conflict_nv);
    FAIL() << "a value used as both A and B must be refused";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("two different cooperative-matrix operands"), std::string::npos)
        << e.what();
  }
}

TEST(CoopSpirv, MalformedInputIsRefused) {
  const uint32_t not_spirv[] = {1, 2, 3, 4, 5, 6};
  EXPECT_THROW(sc::nv_to_khr(not_spirv), std::runtime_error);
  std::vector<uint32_t> truncated(coop_shared_type_nv, coop_shared_type_nv + 40);
  truncated.push_back(0x00ff0000u | 61);  // an instruction claiming 255 words
  EXPECT_THROW(sc::nv_to_khr(truncated), std::runtime_error);
}

}  // namespace
}  // namespace unicorn
