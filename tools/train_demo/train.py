#!/usr/bin/env python3
"""Trains the built-in demo model, or its draft: a small Gemma 3 on the corpus of make_corpus.py.

On any CUDA machine with torch, transformers and tokenizers (about 4 minutes on an H100):
    unicorn-convert --random gemma3-demo --hf-config dims.json
    python3 tools/train_demo/train.py --dims dims.json --corpus CORPUS_DIR --tokenizer tokenizer.json --out OUT
writes OUT/gemma3-demo/ (config.json, model.safetensors in fp32, tokenizer.json), which
unicorn-convert turns into the committed file:
    unicorn-convert --hf OUT/gemma3-demo --type F16 --embedding Q4_0 --out models/gemma3-demo.gguf
With --model draft it trains the demo's speculative-decoding draft (issue 55) the same way,
into OUT/gemma3-demo-draft/ (about 3.5 minutes on an H100; --max-minutes guards it):
    unicorn-convert --hf OUT/gemma3-demo-draft --type F16 --embedding Q4_0 --out models/gemma3-demo-draft.gguf

The model is Gemma3ForCausalLM with the real Gemma 3 tokenizer (262,144 tokens), five
sliding-window layers and one global layer, as Gemma 3 interleaves them. Its dimensions
are unicorn::kGemma3Demo's (include/unicorn/config/dims.hpp), from --dims. The draft shares the
tokenizer, context, window, RoPE and norms, with hidden 64 and two layers (a sliding-window
one, then a global one): unicorn::kGemma3DemoDraft.

Why the embedding is Q4_0 and the rest F16: the tied embedding (262,144 x 192) is 50 M of
the model's 54 M parameters; at F16 it alone would be 100 MB, at Q8_0 53 MB, at Q4_0 28 MB,
and the committed file must stay under 40 MB. So the last phase of training runs with the
embedding rounded to Q4_0 on the way forward (the straight-through estimator: gradients
pass the rounding as if it were not there), and the saved model's embedding lies exactly on
Q4_0's grid and its other matrices on F16's: the GGUF file is the model, without loss, and
its F32 conversion is what transformers' reference perplexity (reference.py) runs.

Training samples windows of SEQ tokens at random from the training text, each starting with
<bos> in place of its first token (as perplexity windows do). Held-out loss is measured
every EVAL_EVERY steps on held-out documents and the best weights are kept: the corpus is
small (1.7 M tokens), and past about a dozen epochs the model memorizes rather than learns.
Reproducible from --seed: the same data order and initial weights; on the same GPU and
software the same result, up to kernels that have no deterministic version (torch warns).
"""
import argparse
import json
import math
import os
import shutil
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS

import torch
import torch.nn.functional as F
import transformers
from tokenizers import Tokenizer
from transformers import Gemma3ForCausalLM, Gemma3TextConfig

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemma3_config  # noqa: E402
from formats import f16, q4_0  # noqa: E402

BOS = 2
# The models this script trains, by the engine's names; their dimensions come from the
# engine (--dims: unicorn-convert --random NAME --hf-config FILE). `steps`, `qat_steps` and
# `max_minutes` are the defaults of the flags of those names.
MODELS = {
    "demo": dict(name="gemma3-demo", steps=2600, qat_steps=400, max_minutes=None),  # unicorn::kGemma3Demo
    # unicorn::kGemma3DemoDraft. Its step costs nearly the demo's: the time goes to the
    # logits (8,192 x 262,144 a step), which do not shrink with the hidden size. So fewer
    # steps, to train in about 3.5 minutes on an H100, with a guard on the whole run.
    "draft": dict(name="gemma3-demo-draft", steps=2000, qat_steps=300, max_minutes=4.0),
}


def make_config(dims, attn_implementation="sdpa"):
    """The model of the engine's config.json `dims` (gemma3_config.load), with the demo's token ids."""
    return gemma3_config.text_config(dims, pad_token_id=0, bos_token_id=BOS, eos_token_id=1,
                                     final_logit_softcapping=None, attn_logit_softcapping=None,
                                     attn_implementation=attn_implementation)


def tokenize(tok, path):
    """The text's token ids with no <bos>: paragraphs in parallel, each ending with its blank line."""
    text = open(path, encoding="utf-8").read()
    parts = [p + "\n\n" for p in text.split("\n\n")]
    ids = []
    for e in tok.encode_batch(parts, add_special_tokens=False):
        ids.extend(e.ids)
    return torch.tensor(ids, dtype=torch.long)


def loss_of(model, windows, quantize_embedding):
    """Mean next-token loss over windows [B, SEQ + 1], the first token read as <bos>."""
    inputs = windows[:, :-1].clone()
    inputs[:, 0] = BOS
    emb = model.model.embed_tokens
    w = emb.weight
    if quantize_embedding:  # straight-through: Q4_0 forward, identity backward
        w = w + (q4_0(w) - w).detach()
    x = F.embedding(inputs, w) * (model.config.hidden_size ** 0.5)  # Gemma's embedding scale
    h = model.model(inputs_embeds=x, use_cache=False).last_hidden_state
    logits = F.linear(h, w)  # tied LM head
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), windows[:, 1:].reshape(-1))


def heldout_loss(model, windows, quantize_embedding, batch):
    model.eval()
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        losses = [loss_of(model, windows[i:i + batch], quantize_embedding).item()
                  for i in range(0, len(windows), batch)]
    model.train()
    return sum(losses) / len(losses)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=MODELS, default="demo",
                    help="demo: the built-in model; draft: its speculative-decoding draft")
    ap.add_argument("--dims", required=True,
                    help="the model's config.json from the engine: unicorn-convert --random gemma3-demo "
                         "--hf-config FILE (gemma3-demo-draft for --model draft)")
    ap.add_argument("--corpus", required=True, help="make_corpus.py's directory (train.txt, heldout.txt)")
    ap.add_argument("--tokenizer", required=True, help="Gemma 3 tokenizer.json")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--steps", type=int, help="steps of the first phase (cosine schedule; default: the model's)")
    ap.add_argument("--qat-steps", type=int, help="steps with the embedding on Q4_0's grid (default: the model's)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--qat-lr", type=float, default=2e-4)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--eval-every", type=int, default=200)
    ap.add_argument("--eval-windows", type=int, default=64)
    ap.add_argument("--max-seconds", type=float, default=300,
                    help="a phase stops here even if steps remain (a guard for a leased machine; logged)")
    ap.add_argument("--max-minutes", type=float,
                    help="both phases stop this long after the start (tokenizing included), the first at "
                         "its share by steps of the time left, and the best weights are saved; logged "
                         "(default: the model's; none for the demo)")
    args = ap.parse_args()
    spec = MODELS[args.model]
    for key in ("steps", "qat_steps", "max_minutes"):
        if getattr(args, key) is None:
            setattr(args, key, spec[key])

    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    device = "cuda"
    tok = Tokenizer.from_file(args.tokenizer)
    t0 = time.time()
    train = tokenize(tok, os.path.join(args.corpus, "train.txt"))
    held = tokenize(tok, os.path.join(args.corpus, "heldout.txt"))
    n_eval = min(args.eval_windows, len(held) // (args.seq + 1))
    eval_windows = held[:n_eval * (args.seq + 1)].view(n_eval, args.seq + 1).to(device)
    print(f"tokens: train {len(train):,}, held-out {len(held):,} ({n_eval} windows evaluated); "
          f"tokenized in {time.time() - t0:.1f} s", flush=True)

    cfg = make_config(gemma3_config.load(args.dims))
    model = Gemma3ForCausalLM(cfg).to(device).train()
    n_params = sum(p.numel() for p in model.parameters())
    n_embedding = model.model.embed_tokens.weight.numel()
    print(f"model {spec['name']}: {n_params / 1e6:.2f} M parameters ({n_embedding / 1e6:.2f} M in the embedding); "
          f"transformers {transformers.__version__}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}", flush=True)

    decay = [p for p in model.parameters() if p.ndim == 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=True)
    gen = torch.Generator(device="cpu").manual_seed(args.seed)
    data = train.to(device)
    span = args.seq + 1
    tokens_per_step = args.batch * args.seq
    log = {"args": vars(args), "evals": []}

    def lr_at(step, total, peak, warmup):
        if step < warmup:
            return peak * (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0))))

    end = t0 + 60 * args.max_minutes if args.max_minutes else None

    def run_phase(name, steps, peak, warmup, quantize_embedding, share):
        # This phase's deadline under --max-minutes: its share of the time left.
        deadline = time.time() + share * (end - time.time()) if end else None
        best = (heldout_loss(model, eval_windows, quantize_embedding, args.batch), 0,
                {k: v.detach().clone() for k, v in model.state_dict().items()})
        start = time.time()
        for step in range(1, steps + 1):
            for g in opt.param_groups:
                g["lr"] = lr_at(step - 1, steps, peak, warmup)
            offsets = torch.randint(0, len(data) - span, (args.batch,), generator=gen)
            windows = torch.stack([data[o:o + span] for o in offsets.tolist()])
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = loss_of(model, windows, quantize_embedding)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            guard = ("--max-seconds" if time.time() - start > args.max_seconds else
                     "--max-minutes" if deadline and time.time() > deadline else None)
            out_of_time = guard is not None
            if out_of_time:
                print(f"{name}: stopped by {guard} at step {step} of {steps}", flush=True)
                log["stopped_early"] = f"{name} at step {step}"
            if step % args.eval_every == 0 or step == steps or out_of_time:
                h = heldout_loss(model, eval_windows, quantize_embedding, args.batch)
                epochs = step * tokens_per_step / len(train)
                seconds = time.time() - start
                log["evals"].append({"phase": name, "step": step, "epochs": epochs, "train_loss": loss.item(),
                                     "heldout_loss": h, "seconds": seconds})
                print(f"{name} step {step:5d} ({epochs:5.2f} epochs, {seconds:6.1f} s): train {loss.item():.4f}, "
                      f"held-out {h:.4f}{' *' if h < best[0] else ''}", flush=True)
                if h < best[0]:
                    best = (h, step, {k: v.detach().clone() for k, v in model.state_dict().items()})
            if out_of_time:
                break
        model.load_state_dict(best[2])
        print(f"{name}: best held-out loss {best[0]:.4f} at step {best[1]} of {steps} "
              f"({time.time() - start:.1f} s)", flush=True)
        return best[0], best[1], time.time() - start

    phase1 = run_phase("train", args.steps, args.lr, args.warmup, False,
                       args.steps / (args.steps + args.qat_steps))
    phase2 = run_phase("qat", args.qat_steps, args.qat_lr, 0, True, 1.0)

    # The saved model: embedding on Q4_0's grid, the other matrices on F16's, norms fp32.
    model = model.float().cpu()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 2:
                p.copy_(q4_0(p) if name.endswith("embed_tokens.weight") else f16(p))
    snapped = heldout_loss(model.to(device), eval_windows, False, args.batch)
    print(f"saved weights (Q4_0 embedding, F16 matrices): held-out loss {snapped:.4f}", flush=True)

    out = os.path.join(args.out, spec["name"])
    os.makedirs(out, exist_ok=True)
    model.cpu().save_pretrained(out, safe_serialization=True)
    model.to(device)
    shutil.copy(args.tokenizer, os.path.join(out, "tokenizer.json"))
    log.update({"command": "python3 " + " ".join(sys.argv), "model": spec["name"], "parameters": n_params,
                "train_tokens": len(train), "heldout_tokens": len(held), "gpu": torch.cuda.get_device_name(),
                "torch": torch.__version__, "transformers": transformers.__version__,
                "phase1": {"best_heldout": phase1[0], "best_step": phase1[1], "seconds": phase1[2]},
                "qat": {"best_heldout": phase2[0], "best_step": phase2[1], "seconds": phase2[2]},
                "saved_heldout_loss": snapped, "seconds_total": time.time() - t0})
    with open(os.path.join(args.out, "train_log.json"), "w") as f:
        json.dump(log, f, indent=1)

    model.eval()
    for prompt in ["The capital of France is", "In the beginning", "And it came to pass, when",
                   "The computer"]:
        ids = torch.tensor([tok.encode(prompt).ids], device=device)
        try:  # samples are for the log: the model is saved whatever happens here
            with torch.no_grad():
                gen_ids = model.generate(ids, max_new_tokens=40, do_sample=False)
            print(f"sample: {tok.decode(gen_ids[0].tolist(), skip_special_tokens=True)!r}", flush=True)
        except Exception as e:
            print(f"sample: generate failed: {e}", flush=True)


if __name__ == "__main__":
    main()
