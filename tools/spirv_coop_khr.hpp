// tools/spirv_coop_khr.hpp — rewrites SPV_NV_cooperative_matrix SPIR-V into
// SPV_KHR_cooperative_matrix SPIR-V.
//
// Why: Debian 12's glslang (12.0) compiles GL_NV_cooperative_matrix but not
// GL_KHR_cooperative_matrix, and RDNA3 / recent NVIDIA drivers expose the KHR
// extension. The two forms differ only in a few instructions, so the build
// compiles the NV form and this rewrite (run by tools/spirv_coop_khr.cpp in the
// shader build step, and by tests/kernel to check it) turns it into the KHR form:
//
//   OpCapability CooperativeMatrixNV (5357)   -> CooperativeMatrixKHR (6022)
//   OpExtension "SPV_NV_cooperative_matrix"   -> "SPV_KHR_cooperative_matrix"
//   OpTypeCooperativeMatrixNV (5358)  R Comp Scope Rows Cols
//                    -> OpTypeCooperativeMatrixKHR (4456) R Comp Scope Rows Cols Use
//   OpCooperativeMatrixLoadNV (5359)  T R Ptr Stride ColumnMajor(bool) [mem...]
//                    -> OpCooperativeMatrixLoadKHR (4457) T R Ptr Layout Stride [mem...]
//   OpCooperativeMatrixStoreNV (5360) Ptr Obj Stride ColumnMajor(bool) [mem...]
//                    -> OpCooperativeMatrixStoreKHR (4458) Ptr Obj Layout Stride [mem...]
//   OpCooperativeMatrixMulAddNV (5361) T R A B C -> OpCooperativeMatrixMulAddKHR (4459)
//   OpCooperativeMatrixLengthNV (5362) T R Type  -> OpCooperativeMatrixLengthKHR (4460)
// Layout and Use are ids of 32-bit integer constants (Layout: 0 RowMajor,
// 1 ColumnMajor; Use: 0 MatrixA, 1 MatrixB, 2 Accumulator), added before the
// first matrix type.
//
// An NV matrix type does not say its use; a KHR type must. The use of every
// value comes from the MulAdd operands it reaches (A, B, or C / result), through
// the instructions that carry a matrix unchanged (load/store of variables,
// access chains, copies, phis, selects, same-typed arithmetic). A type used in
// one role is rewritten in place; a type used in several roles is cloned per
// extra role (with the pointer and array types that wrap it), and the values of
// that role are retyped. A value that would need two roles is an error.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace unicorn::tools::spirv_coop {

// Opcodes and enumerants (SPIR-V registry: spirv.core.grammar.json).
enum : uint32_t {
  kOpExtension = 10, kOpTypeInt = 21, kOpTypeArray = 28, kOpTypeRuntimeArray = 29,
  kOpTypePointer = 32, kOpConstantTrue = 41, kOpConstantFalse = 42, kOpConstant = 43,
  kOpCapability = 17, kOpStore = 62, kOpLoad = 61,
  kOpTypeCooperativeMatrixNV = 5358, kOpCooperativeMatrixLoadNV = 5359,
  kOpCooperativeMatrixStoreNV = 5360, kOpCooperativeMatrixMulAddNV = 5361,
  kOpCooperativeMatrixLengthNV = 5362, kCapabilityCooperativeMatrixNV = 5357,
  kOpTypeCooperativeMatrixKHR = 4456, kOpCooperativeMatrixLoadKHR = 4457,
  kOpCooperativeMatrixStoreKHR = 4458, kOpCooperativeMatrixMulAddKHR = 4459,
  kOpCooperativeMatrixLengthKHR = 4460, kCapabilityCooperativeMatrixKHR = 6022,
};
enum Use : uint32_t { kUseA = 0, kUseB = 1, kUseAccumulator = 2 };
enum Layout : uint32_t { kRowMajor = 0, kColumnMajor = 1 };

// Instructions whose words are (opcode, result type, result, operands...) and
// that can produce a cooperative matrix (or a pointer/array of them).
inline bool has_type_and_result(uint32_t op) {
  switch (op) {
    case 1:    // OpUndef
    case 44:   // OpConstantComposite
    case 46:   // OpConstantNull
    case 51:   // OpSpecConstantComposite
    case 55:   // OpFunctionParameter
    case 57:   // OpFunctionCall
    case 59:   // OpVariable
    case 61:   // OpLoad
    case 65: case 66: case 67:  // OpAccessChain, OpInBoundsAccessChain, OpPtrAccessChain
    case 80: case 81: case 82: case 83:  // OpComposite{Construct,Extract,Insert}, OpCopyObject
    case 109: case 110: case 111: case 112: case 113: case 114: case 115:  // conversions
    case 126: case 127: case 128: case 129: case 130: case 131: case 132: case 133:
    case 134: case 135: case 136:  // negate, add, sub, mul, div
    case 143:  // OpMatrixTimesScalar
    case 169:  // OpSelect
    case 245:  // OpPhi
    case kOpCooperativeMatrixLoadNV:
    case kOpCooperativeMatrixMulAddNV:
      return true;
    default:
      return false;
  }
}

struct Instruction {
  uint32_t op() const { return words[0] & 0xffffu; }
  std::vector<uint32_t> words;
};

inline std::vector<Instruction> split(std::span<const uint32_t> module) {
  if (module.size() < 5 || module[0] != 0x07230203u)
    throw std::runtime_error("spirv_coop: not a SPIR-V module");
  std::vector<Instruction> out;
  for (size_t i = 5; i < module.size();) {
    const uint32_t count = module[i] >> 16;
    if (count == 0 || i + count > module.size())
      throw std::runtime_error("spirv_coop: malformed instruction at word " + std::to_string(i));
    out.push_back({{module.begin() + i, module.begin() + i + count}});
    i += count;
  }
  return out;
}

inline std::string literal_string(const Instruction& in, size_t first_word) {
  std::string s;
  for (size_t w = first_word; w < in.words.size(); ++w)
    for (int b = 0; b < 4; ++b) {
      const char c = char((in.words[w] >> (8 * b)) & 0xffu);
      if (c == 0) return s;
      s += c;
    }
  return s;
}

inline std::vector<uint32_t> string_words(std::string_view s) {
  std::vector<uint32_t> w((s.size() + 4) / 4, 0);  // always room for the terminating 0
  for (size_t i = 0; i < s.size(); ++i) w[i / 4] |= uint32_t(uint8_t(s[i])) << (8 * (i % 4));
  return w;
}

inline uint32_t header_word(uint32_t op, size_t count) { return uint32_t(count) << 16 | op; }

class Converter {
 public:
  explicit Converter(std::span<const uint32_t> module)
      : header_(module.begin(), module.begin() + std::min<size_t>(module.size(), 5)),
        code_(split(module)),
        bound_(header_[3]) {}

  std::vector<uint32_t> run() {
    index_types();
    if (nv_types_.empty()) return assemble();  // nothing to do
    find_roles();
    rewrite();
    return assemble();
  }

 private:
  // ----------------------------------------------------------------- analysis
  void index_types() {
    for (const auto& in : code_) {
      const auto& w = in.words;
      switch (in.op()) {
        case kOpTypeCooperativeMatrixNV: nv_types_.insert(w[1]); break;
        case kOpTypePointer: wrapped_[w[1]] = w[3]; break;
        case kOpTypeArray:
        case kOpTypeRuntimeArray: wrapped_[w[1]] = w[2]; break;
        case kOpConstantTrue: bool_value_[w[2]] = true; break;
        case kOpConstantFalse: bool_value_[w[2]] = false; break;
        default: break;
      }
      if (has_type_and_result(in.op())) type_of_[w[2]] = w[1];
    }
  }

  // The NV matrix type inside a (pointer to / array of)* matrix type, or 0.
  uint32_t matrix_in(uint32_t type) const {
    for (int depth = 0; depth < 16; ++depth) {
      if (nv_types_.count(type)) return type;
      const auto it = wrapped_.find(type);
      if (it == wrapped_.end()) return 0;
      type = it->second;
    }
    return 0;
  }
  uint32_t matrix_of_value(uint32_t id) const {
    const auto it = type_of_.find(id);
    return it == type_of_.end() ? 0 : matrix_in(it->second);
  }

  uint32_t find(uint32_t id) {
    auto it = parent_.find(id);
    if (it == parent_.end()) return parent_[id] = id;
    if (it->second == id) return id;
    return it->second = find(it->second);
  }
  void unite(uint32_t a, uint32_t b) { parent_[find(a)] = find(b); }

  void find_roles() {
    for (const auto& in : code_) {
      const auto& w = in.words;
      const uint32_t op = in.op();
      if (op == kOpStore) {
        if (matrix_of_value(w[2])) unite(w[1], w[2]);
        continue;
      }
      if (op == kOpCooperativeMatrixMulAddNV) {
        seeds_.push_back({w[3], kUseA});
        seeds_.push_back({w[4], kUseB});
        seeds_.push_back({w[5], kUseAccumulator});
        seeds_.push_back({w[2], kUseAccumulator});
        continue;
      }
      if (!has_type_and_result(op) || !matrix_in(w[1])) continue;
      const uint32_t result = w[2];
      find(result);
      switch (op) {
        case kOpLoad:
        case 65: case 66: case 67:  // access chains: same role as the base
        case 83:                    // OpCopyObject
          unite(result, w[3]);
          break;
        case 59:  // OpVariable: storage class, then an optional initializer
          if (w.size() > 4) unite(result, w[4]);
          break;
        case 81:  // OpCompositeExtract
          unite(result, w[3]);
          break;
        case 82:  // OpCompositeInsert
          unite(result, w[3]);
          unite(result, w[4]);
          break;
        case 169:  // OpSelect
          unite(result, w[4]);
          unite(result, w[5]);
          break;
        case 245:  // OpPhi: (value, block) pairs
          for (size_t i = 3; i + 1 < w.size(); i += 2) unite(result, w[i]);
          break;
        case 55:
        case 57:
          throw std::runtime_error(
              "spirv_coop: cooperative matrices passed through functions are not supported "
              "(inline them)");
        default:
          // Arithmetic keeps the role of same-typed operands; conversions
          // (different operand types) start a new value.
          for (size_t i = 3; i < w.size(); ++i)
            if (type_of_.count(w[i]) && type_of_[w[i]] == w[1]) unite(result, w[i]);
          break;
      }
    }
    for (const auto& [id, use] : seeds_) {
      auto [it, fresh] = class_use_.emplace(find(id), use);
      if (!fresh && it->second != use)
        throw std::runtime_error("spirv_coop: value %" + std::to_string(id) +
                                 " is used as two different cooperative-matrix operands");
    }
    // Uses each NV type serves; classes without a MulAdd take the type's first
    // use (Accumulator if none: a matrix that is only loaded and stored).
    for (const auto& [id, type] : type_of_) {
      const uint32_t m = matrix_in(type);
      if (!m) continue;
      const auto it = class_use_.find(find(id));
      if (it != class_use_.end()) uses_of_type_[m].insert(it->second);
    }
    for (uint32_t t : nv_types_)
      if (uses_of_type_[t].empty()) uses_of_type_[t].insert(kUseAccumulator);
  }

  uint32_t use_of_value(uint32_t id) {
    const auto it = class_use_.find(find(id));
    if (it != class_use_.end()) return it->second;
    return *uses_of_type_[matrix_of_value(id)].begin();
  }

  // ----------------------------------------------------------------- rewrite
  uint32_t fresh_id() { return bound_++; }

  // The id of `type` (a matrix type, or pointer/array wrapping one) for `use`:
  // the original id for the type's first use, a clone otherwise.
  uint32_t type_for_use(uint32_t type, uint32_t use) {
    const uint32_t m = matrix_in(type);
    if (!m || use == *uses_of_type_[m].begin()) return type;
    const auto key = std::make_pair(type, use);
    if (auto it = clones_.find(key); it != clones_.end()) return it->second;
    const uint32_t id = fresh_id();
    clones_[key] = id;
    if (type != m) type_for_use(wrapped_.at(type), use);  // the inner clone first
    return id;
  }

  void rewrite() {
    // Which types need clones: every (type, use) pair a value needs.
    for (const auto& [id, type] : type_of_)
      if (matrix_in(type)) type_for_use(type, use_of_value(id));

    uint32_t int_type = 0;
    std::map<uint32_t, uint32_t> int_const;  // value -> id, made before the first matrix type
    std::vector<Instruction> out;
    bool constants_made = false;
    for (auto in : code_) {
      auto& w = in.words;
      const uint32_t op = in.op();
      if (op == kOpCapability && w[1] == kCapabilityCooperativeMatrixNV) {
        w[1] = kCapabilityCooperativeMatrixKHR;
      } else if (op == kOpExtension && literal_string(in, 1) == "SPV_NV_cooperative_matrix") {
        w = {0};
        const auto s = string_words("SPV_KHR_cooperative_matrix");
        w.insert(w.end(), s.begin(), s.end());
        w[0] = header_word(kOpExtension, w.size());
      } else if (op == kOpTypeInt && w[2] == 32 && !int_type) {
        int_type = w[1];
      } else if (op == kOpTypeCooperativeMatrixNV) {
        if (!constants_made) {
          if (!int_type) throw std::runtime_error("spirv_coop: no 32-bit integer type");
          for (uint32_t v : {0u, 1u, 2u}) {
            int_const[v] = fresh_id();
            out.push_back({{header_word(kOpConstant, 4), int_type, int_const[v], v}});
          }
          constants_made = true;
        }
        const uint32_t id = w[1];
        const auto& uses = uses_of_type_[id];
        for (uint32_t use : uses) {
          const uint32_t target = use == *uses.begin() ? id : clones_.at({id, use});
          out.push_back({{header_word(kOpTypeCooperativeMatrixKHR, 7), target, w[2], w[3], w[4],
                          w[5], int_const.at(use)}});
        }
        continue;
      } else if ((op == kOpTypePointer || op == kOpTypeArray || op == kOpTypeRuntimeArray) &&
                 matrix_in(w[1])) {
        out.push_back(in);
        const uint32_t inner_at = op == kOpTypePointer ? 3 : 2;
        for (const auto& [key, clone] : clones_)
          if (key.first == w[1]) {
            Instruction c = in;
            c.words[1] = clone;
            c.words[inner_at] = type_for_use(w[inner_at], key.second);
            out.push_back(c);
          }
        continue;
      } else if (op == kOpCooperativeMatrixLoadNV || op == kOpCooperativeMatrixStoreNV) {
        const bool load = op == kOpCooperativeMatrixLoadNV;
        const size_t stride_at = load ? 4 : 3;  // NV: ..., Stride, ColumnMajor, [memory operands]
        const auto bv = bool_value_.find(w[stride_at + 1]);
        if (bv == bool_value_.end())
          throw std::runtime_error("spirv_coop: ColumnMajor of a cooperative matrix load/store "
                                   "is not a constant true/false");
        const uint32_t layout = int_const.at(bv->second ? kColumnMajor : kRowMajor);
        const uint32_t stride = w[stride_at];
        w[stride_at] = layout;  // KHR: ..., Layout, Stride, [memory operands]
        w[stride_at + 1] = stride;
        w[0] = header_word(load ? kOpCooperativeMatrixLoadKHR : kOpCooperativeMatrixStoreKHR,
                           w.size());
      } else if (op == kOpCooperativeMatrixMulAddNV) {
        w[0] = header_word(kOpCooperativeMatrixMulAddKHR, w.size());
      } else if (op == kOpCooperativeMatrixLengthNV) {
        if (uses_of_type_[w[3]].size() > 1)
          throw std::runtime_error("spirv_coop: length() of a matrix type used in several roles");
        w[0] = header_word(kOpCooperativeMatrixLengthKHR, w.size());
      }
      if (has_type_and_result(in.op()) || in.op() == kOpCooperativeMatrixLoadKHR ||
          in.op() == kOpCooperativeMatrixMulAddKHR)
        if (matrix_in(w[1])) w[1] = type_for_use(w[1], use_of_value(w[2]));
      out.push_back(std::move(in));
    }
    code_ = std::move(out);
  }

  std::vector<uint32_t> assemble() const {
    std::vector<uint32_t> words = header_;
    words[3] = bound_;
    for (const auto& in : code_) words.insert(words.end(), in.words.begin(), in.words.end());
    return words;
  }

  std::vector<uint32_t> header_;
  std::vector<Instruction> code_;
  uint32_t bound_;
  std::set<uint32_t> nv_types_;
  std::map<uint32_t, uint32_t> wrapped_;      // pointer/array type -> the type it wraps
  std::map<uint32_t, uint32_t> type_of_;      // value -> its type
  std::map<uint32_t, bool> bool_value_;       // OpConstantTrue/False
  std::map<uint32_t, uint32_t> parent_;       // union-find over values that share a role
  std::vector<std::pair<uint32_t, uint32_t>> seeds_;  // (value, use) from MulAdd operands
  std::map<uint32_t, uint32_t> class_use_;    // class root -> use
  std::map<uint32_t, std::set<uint32_t>> uses_of_type_;  // NV matrix type -> uses it serves
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> clones_;  // (type, use) -> clone id
};

// The KHR form of an NV-form module (unchanged if it has no cooperative matrices).
inline std::vector<uint32_t> nv_to_khr(std::span<const uint32_t> module) {
  return Converter(module).run();
}

}  // namespace unicorn::tools::spirv_coop
