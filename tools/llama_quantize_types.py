#!/usr/bin/env python3
"""llama-quantize's file types for Gemma 3, as it lays them out, per official size.

Writes sparse F16 GGUF files of each official shape (holes for data; the
metadata of SOURCE, an F16 file unicorn-convert --random gemma3-270m --type F16
writes), runs `llama-quantize --dry-run` on each for every file type, and prints
one line per (size, type): each matrix kind's type, with the layers that differ
("attn_v=q4_K except q5_K@[0, 1, 2, 3]"). tests/io/data/llama_quantize_types.txt
is this output; Convert.FileTypesAreLaidOutAsLlamaQuantizeDoes compares
unicorn-convert's schemes (quant/scheme.hpp, kLlamaFileTypes) with it.

  tools/llama_quantize_types.py LLAMA_QUANTIZE SOURCE WORK_DIR > table.txt
"""
import collections, re, struct, subprocess, sys, os

SIZES = {"270m": (18, 640, 4, 1, 2048, 256), "1b": (26, 1152, 4, 1, 6912, 256), "4b": (34, 2560, 8, 4, 10240, 256),
         "12b": (48, 3840, 16, 8, 15360, 256), "27b": (62, 5376, 32, 16, 21504, 128)}
TYPES = ("Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 F16 BF16 Q2_K Q2_K_S Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K "
         "IQ4_NL IQ4_XS IQ3_M IQ3_XS IQ3_XXS IQ3_S IQ2_M IQ2_S IQ2_XS IQ2_XXS").split()
KINDS = ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"]
VOCAB = 262144


def read_kvs(path):
    """The metadata of a GGUF file: (key, raw bytes of the whole key/value)."""
    b = open(path, "rb").read(64 << 20)
    pos = 4
    def rd(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, b, pos)[0]; pos += struct.calcsize(fmt); return v
    def skip(t):
        nonlocal pos
        if t == 8:
            n = rd("<Q")
            pos += n
        elif t == 9:
            et, n = rd("<I"), rd("<Q")
            for _ in range(n): skip(et)
        else: pos += {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}[t]
    assert b[:4] == b"GGUF"
    rd("<I"); rd("<Q"); n = rd("<Q")
    kvs = []
    for _ in range(n):
        start = pos
        length = rd("<Q")
        key = b[pos:pos + length].decode()
        pos += length
        skip(rd("<I"))
        kvs.append((key, b[start:pos]))
    return kvs


def write_sparse(kvs, size, out):
    L, H, NH, NKV, FF, HD = SIZES[size]
    dims = {"gemma3.block_count": L, "gemma3.embedding_length": H, "gemma3.feed_forward_length": FF,
            "gemma3.attention.head_count": NH, "gemma3.attention.head_count_kv": NKV,
            "gemma3.attention.key_length": HD, "gemma3.attention.value_length": HD}
    def u32(k, v):
        kb = k.encode(); return struct.pack("<Q", len(kb)) + kb + struct.pack("<II", 4, v)
    meta = b"".join(u32(k, dims[k]) if k in dims else raw for k, raw in kvs)
    tensors = [("token_embd.weight", (H, VOCAB), 1)]
    for l in range(L):
        p = f"blk.{l}."
        tensors += [(p + "attn_norm.weight", (H,), 0), (p + "attn_q.weight", (H, NH * HD), 1),
                    (p + "attn_k.weight", (H, NKV * HD), 1), (p + "attn_v.weight", (H, NKV * HD), 1),
                    (p + "attn_q_norm.weight", (HD,), 0), (p + "attn_k_norm.weight", (HD,), 0),
                    (p + "attn_output.weight", (NH * HD, H), 1), (p + "post_attention_norm.weight", (H,), 0),
                    (p + "ffn_norm.weight", (H,), 0), (p + "ffn_gate.weight", (H, FF), 1),
                    (p + "ffn_up.weight", (H, FF), 1), (p + "ffn_down.weight", (FF, H), 1),
                    (p + "post_ffw_norm.weight", (H,), 0)]
    tensors.append(("output_norm.weight", (H,), 0))
    info, offset = b"", 0
    for name, shape, t in tensors:
        nb = name.encode()
        info += struct.pack("<Q", len(nb)) + nb + struct.pack("<I", len(shape))
        info += b"".join(struct.pack("<Q", d) for d in shape) + struct.pack("<IQ", t, offset)
        n = 1
        for d in shape: n *= d
        offset += (n * (4 if t == 0 else 2) + 31) // 32 * 32
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + meta + info
    head += b"\0" * (-len(head) % 32)
    with open(out, "wb") as f:
        f.write(head)
        f.truncate(len(head) + offset)


def summary(size, ftype, dry_run_output):
    types = {}
    for line in dry_run_output.splitlines():
        m = re.match(r"\[\s*\d+/\s*\d+\]\s+(\S+)\s+- \[.*\], type =\s+(\S+), size =.*?(?:\((\S+)\))?$", line.strip())
        if m: types[m.group(1)] = m.group(3) or m.group(2)
    kinds = collections.defaultdict(dict)
    for name, t in types.items():
        m = re.match(r"blk\.(\d+)\.(\w+)\.weight", name)
        if m and m.group(2) in KINDS: kinds[m.group(2)][int(m.group(1))] = t
    words = [f"token_embd={types.get('token_embd.weight')}"]
    for k in KINDS:
        layers = kinds[k]
        common = collections.Counter(layers.values()).most_common(1)[0][0]
        others = {t: [l for l in sorted(layers) if layers[l] == t] for t in sorted(set(layers.values())) if t != common}
        words.append(f"{k}={common}" + (" except " + "; ".join(f"{t}@{v}" for t, v in others.items()) if others else ""))
    return f"{size} {ftype}: " + ", ".join(words)


def main():
    quantize, source, work = sys.argv[1:4]
    kvs = read_kvs(source)
    for size in SIZES:
        path = os.path.join(work, f"gemma3-{size}-sparse-f16.gguf")
        write_sparse(kvs, size, path)
        for t in TYPES:
            r = subprocess.run([quantize, "--dry-run", path, t], capture_output=True, text=True)
            print(summary(size, t, r.stdout + r.stderr))
        os.remove(path)


if __name__ == "__main__":
    main()
