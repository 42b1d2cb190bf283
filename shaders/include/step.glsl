// step.glsl — the per-step values the host writes before each submission.
// Command buffers are recorded once; what changes from step to step (the token
// ids of this chunk, its first position, its length, which rows need logits)
// is read from here. Mirrors unicorn::detail::StepHeader in engine/core.hpp.
layout(binding = STEP_BINDING) readonly buffer StepBuf {
  uint n_tokens;     // tokens in this chunk
  uint start_pos;    // position of the chunk's first token
  uint logit_begin;  // first token row of the chunk whose logits are wanted
  uint logit_count;  // how many rows, from logit_begin
  uint tokens[];     // token ids, n_tokens of them
};

// Kernels that run both on token rows and on logit rows pick by ROW_SET.
uint active_rows(uint row_set) { return row_set == 0 ? n_tokens : logit_count; }
