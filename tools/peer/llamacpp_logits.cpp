// llamacpp_logits — the other side of the peer check (tools/peer/peer_logits.sh):
// every position's logits of the token sequence peer_logits.sh feeds (bos, then
// (37 i + 11) mod V), as llama.cpp computes them, through its public llama.h.
// Built by peer_logits.sh against a llama.cpp build outside the repository.
//   llamacpp_logits MODEL N OUT
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <vector>
#include "llama.h"
int main(int argc, char** argv) {
  if (argc != 4) { std::fprintf(stderr, "usage: %s MODEL N OUT\n", argv[0]); return 2; }
  const int n = std::atoi(argv[2]);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 512; cp.n_batch = 512; cp.n_ubatch = 512; cp.n_threads = 2; cp.n_threads_batch = 2;
  llama_context* ctx = llama_init_from_model(model, cp);
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int V = llama_vocab_n_tokens(vocab);
  llama_batch b = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; ++i) {
    b.token[i] = i == 0 ? 2 : (i * 37 + 11) % V;
    b.pos[i] = i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1;
  }
  b.n_tokens = n;
  if (llama_decode(ctx, b) != 0) return 1;
  // Written whole or not at all: a temporary file, every write and the close
  // checked, then renamed into place (a device or pipe is written in place).
  const std::string out = argv[3];
  struct stat st{};
  const bool in_place = stat(out.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  const std::string temp = in_place ? out : out + ".tmp";
  FILE* f = std::fopen(temp.c_str(), "wb");
  bool ok = f != nullptr;
  for (int i = 0; ok && i < n; ++i) ok = std::fwrite(llama_get_logits_ith(ctx, i), 4, V, f) == size_t(V);
  if (f && std::fclose(f) != 0) ok = false;
  if (!ok || (!in_place && std::rename(temp.c_str(), out.c_str()) != 0)) {
    std::perror(out.c_str());
    if (!in_place) std::remove(temp.c_str());
    return 1;
  }
  std::printf("%d positions x %d logits\n", n, V);
}
