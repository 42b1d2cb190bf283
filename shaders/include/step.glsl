// step.glsl — the per-step values the host writes before each submission.
// Command buffers are recorded once; what changes from step to step (the token
// ids of this chunk, their positions and streams, its length, which rows need
// logits) is read from here. Mirrors unicorn::detail::StepHeader and StepRow in
// engine/step.hpp.
//
// A prefill chunk is one or several streams' runs of tokens at consecutive
// positions (segments, each starting at a multiple of the chunk's attention
// tile in tokens: a tile never holds two streams); a batched decode step is
// one token of each of several streams, each at its own position and writing
// its own stream's KV cache. Both read a row's position and stream from
// step_rows, never a chunk's start + t.
// An image's soft tokens (unicorn::PromptImage) are rows with no token id
// (0xffffffff: embed.comp leaves their x, which the host wrote) that also see
// the positions after their own up to the image's last (sees_ahead): prefill's
// attention is bidirectional inside an image. Within a stream's segment a
// row's last visible position, pos + sees_ahead, never decreases from row to
// row (an image's rows all end at its last; the rows after it at their own),
// so a tile of rows sees from its first row's window to its last row's end.
struct StepRow {
  uint token;         // token id
  uint pos;           // its position in its stream
  uint stream;        // whose KV cache it reads and writes
  uint logit_source;  // in rows i < logit_count: the token row whose logits logit row i holds
  uint sees_ahead;    // positions after pos it also attends to: 0 but in an image (prefill only)
};
layout(binding = STEP_BINDING) readonly buffer StepBuf {
  uint n_tokens;     // token rows in this step
  uint logit_count;  // rows of logits wanted (step_rows[i].logit_source says whose)
  StepRow step_rows[];  // n_tokens of them
};

// Kernels that run both on token rows and on logit rows pick by ROW_SET.
uint active_rows(uint row_set) { return row_set == 0 ? n_tokens : logit_count; }
