// step.glsl — the per-step values the host writes before each submission.
// Command buffers are recorded once; what changes from step to step (the token
// ids of this chunk, their positions and streams, its length, which rows need
// logits) is read from here. Mirrors unicorn::detail::StepHeader and StepRow in
// engine/core.hpp.
//
// A prefill chunk is one stream's tokens at consecutive positions; a batched
// decode step is one token of each of several streams, each at its own
// position and writing its own stream's KV cache. Both read a row's position
// and stream from step_rows, never start_pos + t.
struct StepRow {
  uint token;   // token id
  uint pos;     // its position in its stream
  uint stream;  // whose KV cache it reads and writes
};
layout(binding = STEP_BINDING) readonly buffer StepBuf {
  uint n_tokens;     // token rows in this step
  uint start_pos;    // position of the first row (a prefill chunk's first token)
  uint logit_begin;  // first token row whose logits are wanted
  uint logit_count;  // how many rows, from logit_begin
  StepRow step_rows[];  // n_tokens of them
};

// Kernels that run both on token rows and on logit rows pick by ROW_SET.
uint active_rows(uint row_set) { return row_set == 0 ? n_tokens : logit_count; }
