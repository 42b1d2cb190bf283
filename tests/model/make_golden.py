#!/usr/bin/env python3
"""Golden logits for the tiny Gemma 3 test model, from Hugging Face transformers.

Runs where torch and transformers are installed (the GPU machine; no GPU needed), with
the tiny model's dimensions from the engine:
    unicorn-convert --random gemma3-tiny --hf-config dims.json
    python3 tests/model/make_golden.py dims.json OUT_DIR
and writes into OUT_DIR/tiny:
    config.json, model.safetensors   the model (random weights, fixed seed, fp32)
    golden.json                      prompt token ids, greedy continuations, metadata
    logits_<fmt>.bin                 teacher-forced logits, float32 LE, [tokens, vocab]
for fmt in f32, bf16, q8_0, q4_0. The quantized references run the same fp32 model
on weights rounded through the format (ggml's reference quantizers, re-implemented
here with the same float32 arithmetic), so they isolate the engine's error from the
format's. Copy OUT_DIR/tiny to tests/model/fixtures/tiny to update the fixture.

The dimensions are unicorn::kGemma3Tiny's (include/unicorn/config/dims.hpp), read from
the engine's config.json (tools/train_demo/gemma3_config.py).
"""
import json
import os
import sys

import torch
import transformers
from transformers import Gemma3ForCausalLM

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "train_demo"))
import gemma3_config  # noqa: E402

SEED = 20261122
PROMPT_TOKENS = 96
GREEDY_TOKENS = 32


def make_config(dims):
    return gemma3_config.text_config(dims, pad_token_id=0, bos_token_id=2, eos_token_id=1,
                                     attn_implementation="eager")


def randomize(model, gen):
    # Wider than the default init so that logits are far from uniform and a
    # wrong kernel cannot hide in noise.
    # The embedding is kept small next to the layers' output, so the next token
    # depends on the context rather than echoing the current one, and the final
    # norm is wide, so greedy choices have clear margins.
    for name, p in model.named_parameters():
        with torch.no_grad():
            if name.endswith("model.norm.weight"):
                p.copy_(2.0 + torch.randn(p.shape, generator=gen) * 0.5)
            elif p.ndim == 1:      # RMSNorm weights w (the model uses 1 + w)
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
            elif "embed" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.15)
            else:
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[1] ** 0.5)


def round_half_away(v):
    return torch.sign(v) * torch.floor(torch.abs(v) + 0.5)


def q8_0(w):
    x = w.reshape(-1, 32).float()
    amax = x.abs().max(dim=1, keepdim=True).values
    d = amax / 127.0
    inv = torch.where(d != 0, 1.0 / d, torch.zeros_like(d))
    q = round_half_away(x * inv)
    return (q * d.half().float()).reshape(w.shape)


def q4_0(w):
    x = w.reshape(-1, 32).float()
    idx = x.abs().argmax(dim=1, keepdim=True)          # first largest |x|, as ggml
    m = torch.gather(x, 1, idx)
    d = m / -8.0
    inv = torch.where(d != 0, 1.0 / d, torch.zeros_like(d))
    q = torch.clamp(torch.trunc(x * inv + 8.5), max=15.0)
    return ((q - 8.0) * d.half().float()).reshape(w.shape)


def bf16(w):
    return w.to(torch.bfloat16).float()


FORMATS = {"f32": None, "bf16": bf16, "q8_0": q8_0, "q4_0": q4_0}


def logits_of(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].float()


def greedy(model, ids, n):
    ids = list(ids)
    out = []
    for _ in range(n):  # full recompute each step: no cache involved in the reference
        nxt = int(logits_of(model, ids)[-1].argmax())
        out.append(nxt)
        ids.append(nxt)
    return out


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: make_golden.py DIMS_JSON OUT_DIR (DIMS_JSON: unicorn-convert --random "
                         "gemma3-tiny --hf-config FILE)")
    dims = gemma3_config.load(sys.argv[1])
    out = os.path.join(sys.argv[2], "tiny")
    os.makedirs(out, exist_ok=True)
    gen = torch.Generator().manual_seed(SEED)
    cfg = make_config(dims)
    model = Gemma3ForCausalLM(cfg).float().eval()
    randomize(model, gen)
    model.save_pretrained(out, safe_serialization=True)
    prompt = torch.randint(3, dims["vocab_size"], (PROMPT_TOKENS,), generator=gen).tolist()
    prompt[0] = 2  # <bos>

    golden = {"transformers": transformers.__version__, "torch": torch.__version__,
              "seed": SEED, "prompt": prompt, "greedy": {}, "logit_scale": {},
              "config": cfg.to_dict()}
    base = {k: v.clone() for k, v in model.state_dict().items()}
    for fmt, fn in FORMATS.items():
        model.load_state_dict(base)
        if fn:
            with torch.no_grad():
                for name, p in model.named_parameters():
                    if p.ndim == 2:  # every matrix, the tied embedding included
                        p.copy_(fn(p))
        logits = logits_of(model, prompt)
        logits.numpy().astype("<f4").tofile(os.path.join(out, f"logits_{fmt}.bin"))
        golden["greedy"][fmt] = greedy(model, prompt, GREEDY_TOKENS)
        golden["logit_scale"][fmt] = float(logits.abs().max())
        top2 = logits.topk(2, dim=1).values
        margin = float((top2[:, 0] - top2[:, 1]).min())
        print(fmt, "max|logit|", golden["logit_scale"][fmt], "min top-2 margin", margin,
              "greedy", golden["greedy"][fmt])
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump(golden, f, indent=1)
    print(json.dumps(cfg.to_dict(), default=str)[:1500])
    print(sorted(os.listdir(out)))


if __name__ == "__main__":
    main()
