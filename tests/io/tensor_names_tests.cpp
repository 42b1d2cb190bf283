// Tensor names: llama.cpp's gemma3 GGUF names <-> Hugging Face names, in
// every HF layout, plus the vision tensors this engine skips.
#include "unicorn/io/tensor_names.hpp"

#include "io_test_util.hpp"

namespace unicorn::io {
namespace {

using test::expect_error;

struct LayerName {
  const char* gguf;
  const char* hf;
};

// Written out independently of the header's table.
constexpr LayerName kLayer[] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"post_attention_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
    {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
};

struct Layout {
  HfLayout layout;
  std::string prefix;
  std::string lm_head;
};
const Layout kLayouts[] = {
    {HfLayout::CausalLM, "model.", "lm_head.weight"},
    {HfLayout::MultimodalLegacy, "language_model.model.", "language_model.lm_head.weight"},
    {HfLayout::Multimodal, "model.language_model.", "lm_head.weight"},
};

TEST(TensorNames, EveryLayerTensorBothWaysInEveryLayout) {
  for (const auto& l : kLayouts) {
    for (int layer : {0, 7, 61}) {
      for (const auto& n : kLayer) {
        const std::string gguf = "blk." + std::to_string(layer) + "." + n.gguf;
        const std::string hf = l.prefix + "layers." + std::to_string(layer) + "." + n.hf;
        EXPECT_EQ(hf_to_gguf_name(hf), gguf) << hf;
        EXPECT_EQ(classify_hf_tensor(hf), HfTensorKind::Text) << hf;
        EXPECT_EQ(gguf_to_hf_name(gguf, l.layout), hf) << gguf;
      }
    }
  }
}

TEST(TensorNames, ModelLevelTensors) {
  for (const auto& l : kLayouts) {
    EXPECT_EQ(hf_to_gguf_name(l.prefix + "embed_tokens.weight"), "token_embd.weight");
    EXPECT_EQ(hf_to_gguf_name(l.prefix + "norm.weight"), "output_norm.weight");
    EXPECT_EQ(hf_to_gguf_name(l.lm_head), "output.weight");
    EXPECT_EQ(gguf_to_hf_name("token_embd.weight", l.layout), l.prefix + "embed_tokens.weight");
    EXPECT_EQ(gguf_to_hf_name("output_norm.weight", l.layout), l.prefix + "norm.weight");
    EXPECT_EQ(gguf_to_hf_name("output.weight", l.layout), l.lm_head);
  }
  EXPECT_EQ(gguf_to_hf_name("blk.3.attn_q.weight"), "model.layers.3.self_attn.q_proj.weight");
}

TEST(TensorNames, VisionTensorsAreSkipped) {
  for (const char* name : {
           "vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight",
           "vision_tower.vision_model.embeddings.patch_embedding.weight",
           "multi_modal_projector.mm_input_projection_weight",
           "multi_modal_projector.mm_soft_emb_norm.weight",
           "model.vision_tower.vision_model.post_layernorm.bias",
           "model.multi_modal_projector.mm_input_projection_weight",
       }) {
    EXPECT_EQ(classify_hf_tensor(name), HfTensorKind::Vision) << name;
    EXPECT_EQ(hf_to_gguf_name(name), std::nullopt) << name;
  }
}

TEST(TensorNames, UnknownNamesAreErrors) {
  for (const char* name : {
           "model.layers.0.mlp.fc1.weight",          // not a Gemma 3 tensor
           "model.layers.0.self_attn.q_proj.bias",   // Gemma 3 has no biases
           "model.layers.01.mlp.up_proj.weight",     // non-canonical index
           "model.layers.-1.mlp.up_proj.weight",
           "model.layers.100000.mlp.up_proj.weight", // beyond any model
           "model.layers..mlp.up_proj.weight",
           "model.layers.0",
           "model.language_model.norm",
           "transformer.h.0.attn.c_attn.weight",     // GPT-2
           "layers.0.mlp.up_proj.weight",            // missing prefix
           "",
       }) {
    EXPECT_EQ(classify_hf_tensor(name), HfTensorKind::Unknown) << name;
    expect_error([&] { hf_to_gguf_name(name); }, "unknown tensor '" + std::string(name) + "'");
  }
  for (const char* name : {"blk.x.attn_q.weight", "blk.0.attn_qkv.weight", "blk.0.", "blk.",
                           "token_embd", "output.bias", "blk.007.attn_q.weight", "v.blk.0.attn_q.weight"})
    expect_error([&] { gguf_to_hf_name(name); }, "unknown tensor '" + std::string(name) + "'");
}

TEST(TensorNames, Conventions) {
  EXPECT_TRUE(gguf_norm_stores_one_plus_w("blk.0.attn_norm.weight"));
  EXPECT_TRUE(gguf_norm_stores_one_plus_w("blk.0.attn_q_norm.weight"));
  EXPECT_TRUE(gguf_norm_stores_one_plus_w("blk.0.post_ffw_norm.weight"));
  EXPECT_TRUE(gguf_norm_stores_one_plus_w("output_norm.weight"));
  EXPECT_FALSE(gguf_norm_stores_one_plus_w("blk.0.attn_q.weight"));
  EXPECT_FALSE(gguf_norm_stores_one_plus_w("token_embd.weight"));
  const std::vector<uint64_t> hf_shape = {6912, 1152};  // [out, in]
  EXPECT_EQ(gguf_dims_from_hf_shape(hf_shape), (std::vector<uint64_t>{1152, 6912}));
  EXPECT_EQ(gguf_dims_from_hf_shape(std::vector<uint64_t>{}), std::vector<uint64_t>{});
}

}  // namespace
}  // namespace unicorn::io
