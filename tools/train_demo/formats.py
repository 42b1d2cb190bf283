"""Weights rounded through GGUF's formats, in torch, bit for bit as unicorn-convert writes them.

ggml's reference quantizers (tools/ggml_quantize.hpp), in the same float32 arithmetic, so a
model whose weights lie on these grids converts to GGUF without loss, and a reference run on
rounded weights isolates the engine's error from the format's. Used by train.py (the demo
model's embedding is trained onto Q4_0's grid) and reference.py (a reference per format).
"""
import torch


def _round_half_away(v):
    return torch.sign(v) * torch.floor(torch.abs(v) + 0.5)


def q8_0(w):
    x = w.detach().reshape(-1, 32).float()
    d = x.abs().max(dim=1, keepdim=True).values / 127.0
    inv = torch.where(d != 0, 1.0 / d, torch.zeros_like(d))
    q = _round_half_away(x * inv)
    return (q * d.half().float()).reshape(w.shape)


def q4_0(w):
    x = w.detach().reshape(-1, 32).float()
    idx = x.abs().argmax(dim=1, keepdim=True)  # the first largest |x|, as ggml
    d = torch.gather(x, 1, idx) / -8.0
    inv = torch.where(d != 0, 1.0 / d, torch.zeros_like(d))
    q = torch.clamp(torch.trunc(x * inv + 8.5), max=15.0)
    return ((q - 8.0) * d.half().float()).reshape(w.shape)


def f16(w):
    return w.detach().half().float()


def bf16(w):
    return w.detach().to(torch.bfloat16).float()


# Every format the engine runs, by the names unicorn-convert --type takes.
ROUNDERS = {"F32": None, "F16": f16, "BF16": bf16, "Q8_0": q8_0, "Q4_0": q4_0}
