#!/usr/bin/env python3
"""Reference perplexity of the demo model, by Hugging Face transformers in fp32.

    python3 tools/train_demo/reference.py --gguf models/gemma3-demo.gguf --tokenizer tokenizer.json \
        --text excerpt=tests/perplexity/heldout-excerpt.txt@128 \
        --text heldout=tests/perplexity/heldout.txt@512 --out tests/perplexity/reference.json

Perplexity is computed as llama-perplexity and unicorn-perplexity do: the text is tokenized
with <bos> in front and cut into windows of CTX tokens (what does not fill a window is
dropped); each window starts with <bos> in place of its first token, and the second half of
each is scored (positions CTX/2 .. CTX-2 predict the next token). PPL = exp(mean NLL), and
its uncertainty is PPL * sqrt(var(NLL) / (n - 1)).

Each text's result keeps every window's sums of NLL and NLL^2, so the figure for its
first k windows (unicorn-perplexity --chunks k) follows from it.

One reference per format the engine runs: the same fp32 model on every matrix rounded
through the format (formats.py, as unicorn-convert rounds it), so each of unicorn's formats
has its own figure to match. The model is read from a GGUF file (the demo model: its
F32 conversion is exactly these weights) or from a Hugging Face directory (train.py's
output); given both, the GGUF file must hold exactly the directory's weights.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import transformers
from tokenizers import Tokenizer
from transformers import Gemma3ForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from formats import ROUNDERS  # noqa: E402
import gemma3_config  # noqa: E402
from train import make_config  # noqa: E402

BOS = 2


def window_nll(model, ids, ctx, batch=8):
    """Negative log-likelihoods of the scored tokens, window by window (float64)."""
    if len(ids) < 2 * ctx:
        raise SystemExit(f"reference: {len(ids)} tokens; windows of {ctx} need at least {2 * ctx}")
    chunks = len(ids) // ctx
    first = ctx // 2
    windows = torch.tensor([ids[i * ctx:(i + 1) * ctx] for i in range(chunks)])
    windows[:, 0] = BOS
    device = next(model.parameters()).device
    out = []
    with torch.no_grad():
        for b in range(0, chunks, batch):
            w = windows[b:b + batch].to(device)
            logits = model(w).logits[:, first:ctx - 1].double()
            lp = torch.log_softmax(logits, dim=-1)
            target = w[:, first + 1:ctx]
            out.append(-lp.gather(2, target.unsqueeze(-1)).squeeze(-1).reshape(-1).cpu())
    return torch.cat(out), chunks


def summarize(nll, chunks, tokens, ctx):
    n = nll.numel()
    mean = float(nll.mean())
    var = float((nll * nll).mean()) - mean * mean
    ppl = math.exp(mean)
    per_window = nll.reshape(chunks, -1)
    return {"ppl": ppl, "uncertainty": ppl * math.sqrt(max(var, 0.0) / (n - 1)), "mean_nll": mean,
            "scored": n, "chunks": chunks, "ctx": ctx, "tokens": tokens,
            "window_nll_sum": per_window.sum(1).tolist(), "window_nll2_sum": (per_window ** 2).sum(1).tolist()}


# GGUF reading, just enough for unicorn-convert's files: key/value pairs are skipped,
# tensors decoded to float32.
_GGUF_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read_gguf(path):
    data = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0] if len(v) == 1 else v

    def string():
        nonlocal pos
        n = take("Q")
        s = data[pos:pos + n].decode()
        pos += n
        return s

    def skip_value(t):
        if t == 8:
            string()
        elif t == 9:
            inner, n = take("I"), take("Q")
            for _ in range(n):
                skip_value(inner)
        else:
            take(_GGUF_SCALAR[t])

    if data[:4] != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF file")
    pos = 4
    _, n_tensors, n_kv = take("I"), take("Q"), take("Q")
    alignment = 32
    for _ in range(n_kv):
        key, t = string(), take("I")
        if key == "general.alignment":
            alignment = take("I")
        else:
            skip_value(t)
    infos = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("Q") for _ in range(take("I"))]
        infos.append((name, dims, take("I"), take("Q")))
    base = (pos + alignment - 1) // alignment * alignment
    tensors = {}
    for name, dims, ggml_type, offset in infos:
        count = math.prod(dims)
        at = base + offset
        if ggml_type == 0:    # F32
            x = np.frombuffer(data, "<f4", count, at)
        elif ggml_type == 1:  # F16
            x = np.frombuffer(data, "<f2", count, at).astype(np.float32)
        elif ggml_type == 2:  # Q4_0: f16 scale, 16 bytes of nibbles (low: 0..15, high: 16..31)
            blocks = np.frombuffer(data, np.uint8, count // 32 * 18, at).reshape(-1, 18)
            d = blocks[:, :2].copy().view("<f2").astype(np.float32)
            q = np.concatenate([blocks[:, 2:] & 15, blocks[:, 2:] >> 4], axis=1).astype(np.float32)
            x = ((q - 8.0) * d).reshape(-1)
        elif ggml_type == 8:  # Q8_0: f16 scale, 32 int8
            blocks = np.frombuffer(data, np.uint8, count // 32 * 34, at).reshape(-1, 34)
            d = blocks[:, :2].copy().view("<f2").astype(np.float32)
            x = (blocks[:, 2:].copy().view(np.int8).astype(np.float32) * d).reshape(-1)
        else:
            raise SystemExit(f"{path}: {name}: ggml type {ggml_type} is not read here")
        tensors[name] = torch.from_numpy(np.array(x, dtype=np.float32)).reshape(list(reversed(dims)))
    return tensors


def gguf_name(hf_name):
    """llama.cpp's gemma3 tensor names (the engine's io/tensor_names.hpp)."""
    names = {"embed_tokens.weight": "token_embd.weight", "norm.weight": "output_norm.weight"}
    layer = {"input_layernorm": "attn_norm", "post_attention_layernorm": "post_attention_norm",
             "pre_feedforward_layernorm": "ffn_norm", "post_feedforward_layernorm": "post_ffw_norm",
             "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
             "self_attn.k_norm": "attn_k_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down"}
    name = hf_name.removeprefix("model.")
    if name in names:
        return names[name]
    _, i, rest = name.split(".", 2)
    return f"blk.{i}.{layer[rest.removesuffix('.weight')]}.weight"


def model_from_gguf(path, dims):
    """The model whose weights a GGUF file holds (norms stored as 1 + w: w = g - 1, exact in fp32),
    in the engine's dimensions `dims` (gemma3_config.load)."""
    tensors = read_gguf(path)
    cfg = make_config(dims, attn_implementation="eager")
    model = Gemma3ForCausalLM(cfg).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            g = tensors[gguf_name(name)]
            p.copy_(g - 1.0 if p.ndim == 1 else g)
    return model


def check_gguf(model, path):
    """The GGUF file holds the model's weights exactly (norms as 1 + w, as llama.cpp stores them)."""
    tensors = read_gguf(path)
    checked = 0
    for name, p in model.named_parameters():
        g = gguf_name(name)
        want = p.detach().float().cpu() + (1.0 if p.ndim == 1 else 0.0)
        if g not in tensors or tensors[g].shape != want.shape or not torch.equal(tensors[g], want):
            diff = (tensors[g] - want).abs().max() if g in tensors and tensors[g].shape == want.shape else "shape"
            raise SystemExit(f"reference: {path}: {g} differs from the model's {name} (max |diff| {diff})")
        checked += 1
    print(f"{path}: all {checked} tensors equal the model's weights, bit for bit")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="Hugging Face directory of the demo model")
    ap.add_argument("--dims", help="without --model: the model's config.json from the engine "
                                   "(unicorn-convert --random gemma3-demo --hf-config FILE)")
    ap.add_argument("--tokenizer", help="tokenizer.json (default: the model directory's)")
    ap.add_argument("--text", action="append", required=True, help="NAME=FILE@CTX, repeatable")
    ap.add_argument("--gguf", help="the model as a GGUF file (with --model: checked to hold its weights)")
    ap.add_argument("--formats", default=",".join(ROUNDERS), help="comma-separated (default: all)")
    ap.add_argument("--out", required=True, help="JSON file to write")
    args = ap.parse_args()

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32
    torch.backends.cudnn.allow_tf32 = False
    if args.model:
        model = Gemma3ForCausalLM.from_pretrained(args.model, dtype=torch.float32,
                                                  attn_implementation="eager").float().eval()
        if args.gguf:
            check_gguf(model, args.gguf)
    elif args.gguf and args.dims:
        model = model_from_gguf(args.gguf, gemma3_config.load(args.dims))
    else:
        raise SystemExit("reference: give --gguf FILE with --dims FILE, --model DIR, or --model and --gguf")
    model.to(device)
    tok = Tokenizer.from_file(args.tokenizer or os.path.join(args.model, "tokenizer.json"))
    texts = []
    for spec in args.text:
        name, rest = spec.split("=", 1)
        path, ctx = rest.rsplit("@", 1)
        ids = tok.encode(open(path, encoding="utf-8").read()).ids  # <bos> in front
        if ids[0] != BOS:
            raise SystemExit("reference: the tokenizer did not put <bos> in front")
        texts.append((name, os.path.basename(path), int(ctx), ids))

    result = {"command": "python3 " + " ".join(sys.argv), "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
              "torch": torch.__version__, "transformers": transformers.__version__,
              "precision": "fp32 (eager attention, TF32 off)", "texts": {}, "formats": {}}
    for name, file, ctx, ids in texts:
        result["texts"][name] = {"file": file, "ctx": ctx, "tokens": len(ids)}
    base = {k: v.clone() for k, v in model.state_dict().items()}
    for fmt in args.formats.split(","):
        rounder = ROUNDERS[fmt]
        model.load_state_dict(base)
        if rounder:
            with torch.no_grad():
                for _, p in model.named_parameters():
                    if p.ndim == 2:  # every matrix, the tied embedding included
                        p.copy_(rounder(p.cpu()).to(device))
        result["formats"][fmt] = {}
        for name, file, ctx, ids in texts:
            nll, chunks = window_nll(model, ids, ctx)
            r = summarize(nll, chunks, len(ids), ctx)
            result["formats"][fmt][name] = r
            print(f"{fmt:5} {name:10} ctx {ctx:4}: PPL = {r['ppl']:.4f} +/- {r['uncertainty']:.5f} "
                  f"({r['scored']} tokens scored)", flush=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
