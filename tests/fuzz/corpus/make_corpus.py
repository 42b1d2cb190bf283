#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target (tests/fuzz/corpus/<target>/):
small valid inputs of each kind, from which the fuzzers mutate. Committed;
rerun after adding a seed here:
    python3 tests/fuzz/corpus/make_corpus.py
Inputs a fuzzer found that crashed it are kept apart, in corpus/<target>/regression-*,
and are not touched by this script.
"""
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def s(text):
    b = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(b)) + b


def kv(key, type_id, payload):
    return s(key) + struct.pack("<I", type_id) + payload


def arr(elem_type, items, pack):
    return struct.pack("<IQ", elem_type, len(items)) + b"".join(pack(i) for i in items)


def gguf(kvs, tensors, data, version=3):
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs)
    for name, dims, ggml_type, offset in tensors:
        head += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        head += struct.pack("<IQ", ggml_type, offset)
    head += b"\0" * (-len(head) % 32)
    return head + data


VOCAB = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>", "\u2581", "a", "b", "c",
         "\u2581a", "ab", "abc", "<0x00>", "<0x41>", "<0xE2>", "<0x96>", "<0x81>"]
TYPES = [3, 3, 3, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 6, 6, 6, 6, 6]
SCORES = [0.0] * 4 + [0.0, 0.0, -1.0, -2.0, -3.0, -4.0, -1.5, -2.5, -0.5] + [0.0] * 5


def gguf_seeds():
    every_type = [
        kv("u8", 0, struct.pack("<B", 7)), kv("i8", 1, struct.pack("<b", -7)),
        kv("u16", 2, struct.pack("<H", 7)), kv("i16", 3, struct.pack("<h", -7)),
        kv("u32", 4, struct.pack("<I", 7)), kv("i32", 5, struct.pack("<i", -7)),
        kv("f32", 6, struct.pack("<f", 0.5)), kv("bool", 7, b"\1"), kv("str", 8, s("text")),
        kv("u64", 10, struct.pack("<Q", 7)), kv("i64", 11, struct.pack("<q", -7)), kv("f64", 12, struct.pack("<d", 0.5)),
        kv("arr_u32", 9, arr(4, [1, 2, 3], lambda v: struct.pack("<I", v))),
        kv("arr_str", 9, arr(8, ["x", "yz"], s)),
        kv("arr_arr", 9, struct.pack("<IQ", 9, 1) + struct.pack("<I", 9) + arr(4, [1], lambda v: struct.pack("<I", v))),
        kv("general.alignment", 4, struct.pack("<I", 32)),
    ]
    q8 = struct.pack("<e", 0.25) + bytes(range(32))
    q4 = struct.pack("<e", 0.25) + bytes(range(16))
    tensors = [("f32", [4, 2], 0, 0), ("f16", [8], 1, 32), ("q8_0", [32], 8, 64), ("q4_0", [32], 2, 128),
               ("bf16", [16], 30, 160), ("q6_k", [256], 14, 192)]
    data = struct.pack("<8f", *range(8)) + struct.pack("<8e", *range(8)) + b"\0" * 16 + q8 + b"\0" * 30 + q4 + \
        b"\0" * 14 + b"\0" * 32
    vocab = [
        kv("general.architecture", 8, s("gemma3")),
        kv("tokenizer.ggml.model", 8, s("llama")),
        kv("tokenizer.ggml.tokens", 9, arr(8, VOCAB, s)),
        kv("tokenizer.ggml.scores", 9, arr(6, SCORES, lambda v: struct.pack("<f", v))),
        kv("tokenizer.ggml.token_type", 9, arr(5, TYPES, lambda v: struct.pack("<i", v))),
    ]
    merges = vocab + [kv("tokenizer.ggml.merges", 9, arr(8, ["\u2581 a", "a b", "ab c"], s))]
    return {
        "every-value-type.gguf": gguf(every_type, tensors, data),
        "vocabulary.gguf": gguf(vocab, [("token_embd.weight", [4, len(VOCAB)], 0, 0)], b"\0" * 16 * len(VOCAB)),
        "vocabulary-merges.gguf": gguf(merges, [], b""),
        "version2.gguf": gguf(every_type[:3], tensors[:1], data[:32], version=2),
    }


def mmproj_seeds():
    """A one-layer Gemma 3 image encoder as llama.cpp's mmproj GGUF (8-pixel
    images, 4-pixel patches, one soft token, hidden 32, feed-forward 64,
    projection 32): F32 vectors and embeddings, F16 matrices."""
    h, f, text = 32, 64, 32
    keys = [kv("general.architecture", 8, s("clip")), kv("clip.has_vision_encoder", 7, b"\1"),
            kv("clip.projector_type", 8, s("gemma3")), kv("clip.use_gelu", 7, b"\1"),
            kv("clip.vision.projection_dim", 4, struct.pack("<I", text)),
            kv("clip.vision.image_size", 4, struct.pack("<I", 8)), kv("clip.vision.patch_size", 4, struct.pack("<I", 4)),
            kv("clip.vision.embedding_length", 4, struct.pack("<I", h)),
            kv("clip.vision.feed_forward_length", 4, struct.pack("<I", f)),
            kv("clip.vision.block_count", 4, struct.pack("<I", 1)),
            kv("clip.vision.attention.head_count", 4, struct.pack("<I", 2)),
            kv("clip.vision.attention.layer_norm_epsilon", 6, struct.pack("<f", 1e-6)),
            kv("clip.vision.projector.scale_factor", 4, struct.pack("<I", 2)),
            kv("clip.vision.image_mean", 9, arr(6, [0.5] * 3, lambda v: struct.pack("<f", v))),
            kv("clip.vision.image_std", 9, arr(6, [0.5] * 3, lambda v: struct.pack("<f", v)))]
    specs = [("v.patch_embd.weight", [4, 4, 3, h], 0), ("v.patch_embd.bias", [h], 0),
             ("v.position_embd.weight", [h, 4], 0)]
    for stem, dims in [("ln1", [h]), ("attn_q", [h, h]), ("attn_k", [h, h]), ("attn_v", [h, h]),
                       ("attn_out", [h, h]), ("ln2", [h]), ("ffn_up", [h, f]), ("ffn_down", [f, h])]:
        specs.append((f"v.blk.0.{stem}.weight", dims, 1 if len(dims) == 2 else 0))
        if stem != "ln1" and stem != "ln2":
            specs.append((f"v.blk.0.{stem}.bias", [dims[1]], 0))
        else:
            specs.append((f"v.blk.0.{stem}.bias", [h], 0))
    specs += [("v.post_ln.weight", [h], 0), ("v.post_ln.bias", [h], 0),
              ("mm.input_projection.weight", [text, h], 1), ("mm.soft_emb_norm.weight", [h], 0)]
    tensors, data = [], b""
    for name, dims, t in specs:
        n = 1
        for d in dims:
            n *= d
        one = name.endswith("ln1.weight") or name.endswith("ln2.weight") or name.startswith(("v.post_ln.weight", "mm.soft"))
        blob = struct.pack("<%d%s" % (n, "e" if t else "f"), *([1.0 if one else 0.01] * n))
        tensors.append((name, dims, t, len(data)))
        data += blob + b"\0" * (-len(blob) % 32)
    return {"tiny-encoder.gguf": gguf(keys, tensors, data)}


def safetensors_seeds():
    def file(header, data):
        h = json.dumps(header).encode()
        return struct.pack("<Q", len(h)) + h + data
    return {
        "two-tensors.safetensors": file({"__metadata__": {"format": "pt"},
                                         "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
                                         "b": {"dtype": "BF16", "shape": [4], "data_offsets": [16, 24]}},
                                        struct.pack("<4f", 1, 2, 3, 4) + b"\0" * 8),
        "empty-tensor.safetensors": file({"e": {"dtype": "F16", "shape": [0, 3], "data_offsets": [0, 0]}}, b""),
    }


def tokenizer_json_seed():
    """A small tokenizer.json in Gemma 3's shape."""
    vocab = {t: i for i, t in enumerate(VOCAB)}
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, t in enumerate(VOCAB[:6])]
    return json.dumps({
        "version": "1.0", "added_tokens": added,
        "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
        "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": False},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]},
        "model": {"type": "BPE", "byte_fallback": True, "fuse_unk": True, "unk_token": "<unk>", "vocab": vocab,
                  "merges": [["\u2581", "a"], ["a", "b"], ["ab", "c"]]},
    }, ensure_ascii=False).encode()


TEXTS = {
    "english.txt": "The capital of France is Paris. It has 2,148,271 inhabitants (2020).\n".encode(),
    "chat.txt": "<bos><start_of_turn>user\nWhy is the sky blue?<end_of_turn>\n<start_of_turn>model\n".encode(),
    "many-scripts.txt": "caf\u00e9 \u65e5\u672c\u8a9e \u0440\u0443\u0441\u0441\u043a\u0438\u0439 \U0001F984 \u0627\u0644\u0639\u0631\u0628\u064a\u0629\t\t  \n\n\n".encode(),
    "invalid-utf8.bin": b"ok \xff\xfe \xc3( \xe2\x82 \xf0\x9f\x98 end",
    "spaces-and-marker.txt": "  two  spaces \u2581 marker ".encode(),
}

BODIES = {
    "chat.json": {"model": "m", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
                  "max_tokens": 16, "temperature": 0.7, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 42,
                  "stop": ["\n\n", "END"], "stream": True, "stream_options": {"include_usage": True},
                  "presence_penalty": 0.5, "frequency_penalty": -0.5, "repeat_penalty": 1.1, "repeat_last_n": 64},
    "chat-parts.json": {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                                     {"role": "assistant", "content": "c"}, {"role": "user", "content": "d"}],
                        "n": 1, "logprobs": False, "cache_prompt": False, "ignore_eos": True, "user": "u"},
    "completion-text.json": {"prompt": "Once upon a time", "max_tokens": 8, "echo": False, "best_of": 1},
    "completion-ids.json": {"prompt": [[2, 9, 10]], "seed": -1, "temperature": 0},
    "tokenize.json": {"content": "Hello world", "add_special": True, "with_pieces": True},
    "detokenize.json": {"tokens": [2, 9, 10, 11]},
    "ollama-chat.json": {"model": "m", "stream": False, "keep_alive": "5m", "format": "",
                         "messages": [{"role": "system", "content": "Be brief."},
                                      {"role": "user", "content": "Hi", "images": []}],
                         "options": {"num_predict": 16, "temperature": 0.7, "top_k": 40, "top_p": 0.9, "seed": 42,
                                     "stop": ["END"], "repeat_last_n": -1, "num_ctx": 128, "num_gpu": 1}},
    "ollama-generate.json": {"model": "m:latest", "prompt": "Once", "system": "s", "raw": False, "context": [],
                             "options": {"min_p": 0.05, "repeat_penalty": 1.1, "mirostat": 0, "typical_p": 1}},
    "chat-schema.json": {"messages": [{"role": "user", "content": "JSON"}], "n": 2,
                         "response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": True, "schema": {
                             "type": "object", "properties": {"a": {"type": "string", "maxLength": 4},
                                                              "b": {"enum": [1, "x", None]},
                                                              "c": {"type": "array", "items": {"$ref": "#/$defs/d"}}},
                             "required": ["a"], "$defs": {"d": {"type": "integer", "minimum": 0, "maximum": 9}}}}}},
    "chat-grammar.json": {"messages": [{"role": "user", "content": "x"}], "grammar": "root ::= [a-z]+ (\" \" [0-9]{1,3})?"},
    "chat-tools.json": {"messages": [{"role": "user", "content": "Weather?"},
                                     {"role": "assistant", "content": None, "refusal": None, "tool_calls": [
                                         {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"P\"}"}}]},
                                     {"role": "tool", "tool_call_id": "c1", "content": "21"}],
                        "tools": [{"type": "function", "function": {"name": "w", "description": "d", "strict": True,
                                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
                        "tool_choice": "auto", "parallel_tool_calls": False},
}


def http_requests():
    body = json.dumps(BODIES["chat.json"]).encode()
    return {
        "post-length.http": b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            b"Authorization: Bearer k\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body,
        "post-chunked.http": b"POST /v1/completions?x=1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                             b"d\r\n{\"prompt\":\"a\"\r\n1\r\n}\r\n0\r\n\r\n",
        "expect-continue.http": b"POST /tokenize HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 15\r\n\r\n"
                                b"{\"content\":\"a\"}",
        "get-health.http": b"GET /health HTTP/1.0\r\n\r\n",
        "gzip-encoding.http": b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nxx",
    }


def kld_base(vocab, ctx, chunks, tweak=lambda b: b):
    """unicorn-perplexity's KL-divergence base file (examples/perplexity/kld_base.hpp)."""
    scored = ctx - 1 - ctx // 2
    out = b"UNIKLD01" + struct.pack("<4I", vocab, ctx, chunks, scored)
    out += struct.pack("<%di" % (ctx * chunks), *[(i * 7) % vocab for i in range(ctx * chunks)])
    for r in range(chunks * scored):
        out += struct.pack("<2f", -24.5, -1.25 - r) + struct.pack("<%dH" % vocab, *[(r * 977 + i * 131) % 65536 for i in range(vocab)])
    return tweak(out)


def ollama_manifests():
    """Manifests as `ollama pull gemma3` writes them, and `ollama:` names."""
    def layer(media_type, hex_char, size):
        return {"mediaType": media_type, "digest": "sha256:" + hex_char * 64, "size": size}
    full = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "config": layer("application/vnd.docker.container.image.v1+json", "c", 490),
            "layers": [layer("application/vnd.ollama.image.model", "a", 3338792448),
                       layer("application/vnd.ollama.image.template", "d", 358),
                       layer("application/vnd.ollama.image.license", "e", 8432),
                       layer("application/vnd.ollama.image.params", "f", 77)]}
    no_model = dict(full, layers=full["layers"][1:])
    return {"gemma3-latest.json": json.dumps(full).encode(), "no-model-layer.json": json.dumps(no_model).encode(),
            "name-namespaced.txt": b"ollama:me/mine:q4_K_M", "name-host.txt": b"ollama:example.com:5000/team/model:v1"}


# fuzz_grammar: the first byte picks GBNF (even) or a JSON schema (odd).
def grammar_seeds():
    gbnf = {
        "chess.gbnf": 'root ::= "1. " move " " move "\\n" ([1-9] [0-9]? ". " move " " move "\\n")+\n'
                      'move ::= (pawn | nonpawn | castle) [+#]?\n'
                      'pawn ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBRQ])?\n'
                      'nonpawn ::= [NBKRQ] [a-h]? [1-8]? "x"? [a-h] [1-8]\n'
                      'castle ::= "O-O" "-O"?\n',
        "classes.gbnf": 'root ::= [^"\\\\\\x00-\\x1F]* ( "\\\\" . )? [α-ω]{1,3} "\\u00e9" .\n',
        "repeat.gbnf": '# comment\nroot ::= ( "ab" | x ){2,5} x* x+ x?\nx ::= "c" | "d" root? "e"\n',
        "json.gbnf": 'root ::= object\n'
                     'value ::= object | array | string | number | "true" | "false" | "null"\n'
                     'object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"\n'
                     'array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"\n'
                     'string ::= "\\"" [^"\\\\\\x00-\\x1F]* ( "\\\\" ["\\\\/bfnrt] [^"\\\\\\x00-\\x1F]* )* "\\""\n'
                     'number ::= "-"? [0-9]{1,5} ( "." [0-9]+ )?\n'
                     'ws ::= | " " | "\\n" [ \\t]{0,8}\n',
    }
    schemas = {
        "object.json": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 8}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "tags": {"type": "array", "items": {"enum": ["a", "b", 3, None]}, "maxItems": 3},
            "when": {"type": "string", "format": "date-time"}, "id": {"type": "string", "format": "uuid"}},
            "required": ["name"], "additionalProperties": {"type": "boolean"}},
        "ref.json": {"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "properties": {
            "v": {"type": ["number", "null"]}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "required": ["v"], "additionalProperties": False}}},
        "anyof.json": {"anyOf": [{"type": "string", "minLength": 2}, {"const": {"k": [1, 2]}},
                                 {"type": "integer", "exclusiveMaximum": -7}]},
        "empty.json": {},
    }
    out = {k: b"\x00" + v.encode() for k, v in gbnf.items()}
    out.update({k: b"\x01" + json.dumps(v).encode() for k, v in schemas.items()})
    return out


# The image decoder's seeds (fuzz_image): tiny files of every format and the
# layouts the decoders branch on. PNG, BMP and GIF are written here; the JPEG
# and WebP bytes were written once by libjpeg-turbo (baseline, gray,
# progressive) and libwebp (lossless with alpha, lossy) and are kept as bytes.
JPEG_RGB_8X8 = bytes.fromhex(
    "ffd8ffe000104a46494600010100000100010000ffdb004300100b0c0e0c0a100e0d0e1211101318281a181616183123"
    "251d283a333d3c3933383740485c4e404457453738506d51575f626768673e4d71797064785c656763ffdb0043011112"
    "121815182f1a1a2f63423842636363636363636363636363636363636363636363636363636363636363636363636363"
    "6363636363636363636363636363ffc00011080008000803012200021101031101ffc400150001010000000000000000"
    "0000000000000002ffc4001b10000203010101000000000000000000000102001121311222ffc4001501010100000000"
    "000000000000000000000203ffc4001a110002020300000000000000000000000000010311124171ffda000c03010002"
    "110311003f0085507e7c80b758a4250cd156708cef17acc6222251e5b6b84a474cffd9")
JPEG_GRAY_3X5 = bytes.fromhex(
    "ffd8ffe000104a46494600010100000100010000ffdb004300100b0c0e0c0a100e0d0e1211101318281a181616183123"
    "251d283a333d3c3933383740485c4e404457453738506d51575f626768673e4d71797064785c656763ffc0000b080005"
    "000301011100ffc40014000100000000000000000000000000000001ffc4001d10000202010500000000000000000000"
    "00020301041100051271a1ffda0008010100003f0013b3935206161681918c2d75c2463ae599f75fffd9")
JPEG_PROGRESSIVE_9X7 = bytes.fromhex(
    "ffd8ffe000104a46494600010100000100010000ffdb004300100b0c0e0c0a100e0d0e1211101318281a181616183123"
    "251d283a333d3c3933383740485c4e404457453738506d51575f626768673e4d71797064785c656763ffdb0043011112"
    "121815182f1a1a2f63423842636363636363636363636363636363636363636363636363636363636363636363636363"
    "6363636363636363636363636363ffc20011080007000903012200021101031101ffc400160001010100000000000000"
    "000000000000000203ffc40014010100000000000000000000000000000002ffda000c030100021003100000018dc47f"
    "ffc4001510010100000000000000000000000000000023ffda000801010001050251ffc4001511010100000000000000"
    "000000000000000011ffda0008010301013f01afffc400161101010100000000000000000000000000110001ffda0008"
    "010201013f01312fffc4001610010101000000000000000000000000000031b1ffda0008010100063f024c7fffc4001c"
    "100001040301000000000000000000000011000121f031c1d1f1ffda0008010100013f2160f11a03972abe17ffda000c"
    "0301000200030000001083ffc40018110101000300000000000000000000000001110031d1ffda0008010301013f1060"
    "19bee7ffc40017110100030000000000000000000000000001001141ffda0008010201013f10192ca9ffc4001a100101"
    "010100030000000000000000000001113100217191ffda0008010100013f106c96654092d24ba19b3c6abbdff7afffd9")
WEBP_LOSSLESS_ALPHA_4X3 = bytes.fromhex(
    "524946465a000000574542505650384c4d0000002f038000105f40266dc3be88d839ff26678248db8656c4e1fc2bb928"
    "226ddb18ad88c3693891b66d8c56c4e1dc9d6092a6da8ec97f5805dd06abfe00826c9b640a73bac29dae70f188fe872f"
    "0b00")
WEBP_LOSSY_4X3 = bytes.fromhex(
    "524946464c000000574542505650382040000000d001009d012a0400030002c04c25b00274010efe038e0000faf3d91c"
    "626e4eba7fbdee8e813cda3770bce53e20be4cded037c8021d10ccf67dcaf1ff40000000")


def png(width, height, depth, color_type, rows, extra=(), interlace=0, raw=None):
    """rows: each row's bytes, given filter 0 here; or raw: the filtered data whole."""
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, interlace)
    if raw is None:
        raw = b"".join(b"\0" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + b"".join(chunk(k, v) for k, v in extra)
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def bmp(width, height, bits, rows, palette=b""):
    stride = (bits * width + 31) // 32 * 4
    data = b"".join(r.ljust(stride, b"\0") for r in rows)
    offset = 14 + 40 + len(palette)
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, bits, 0, len(data), 2835, 2835, len(palette) // 4, 0)
    return b"BM" + struct.pack("<IHHI", offset + len(data), 0, 0, offset) + info + palette + data


def gif(width, height, indices, palette, transparent=None, interlace=False):
    """LZW with a clear code after every second index, so that every code is a
    literal of 3 bits (a minimum code size of 2: 4 colours)."""
    codes = []
    for i in range(0, len(indices), 2):
        codes += [4] + list(indices[i:i + 2])
    codes.append(5)
    bits, nbits = 0, 0
    out = bytearray()
    for c in codes:
        bits |= c << nbits
        nbits += 3
        while nbits >= 8:
            out.append(bits & 255)
            bits >>= 8
            nbits -= 8
    if nbits:
        out.append(bits & 255)
    gce = b""
    if transparent is not None:
        gce = b"\x21\xf9\x04\x01\x00\x00" + bytes([transparent]) + b"\x00"
    desc = b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0x40 if interlace else 0)
    return (b"GIF89a" + struct.pack("<HHBBB", width, height, 0x81, 0, 0) + palette.ljust(12, b"\0") + gce + desc
            + b"\x02" + bytes([len(out)]) + bytes(out) + b"\x00\x3b")


def image_seeds():
    pal = bytes([255, 0, 0, 0, 255, 0, 0, 0, 255, 250, 250, 250])
    return {
        "rgb-1x1.png": png(1, 1, 8, 2, [b"\xc8\x1e\x5a"]),
        "rgba-2x2.png": png(2, 2, 8, 6, [bytes(range(8)), bytes(range(8, 16))]),
        "gray16-3x2.png": png(3, 2, 16, 0, [bytes(range(6)), bytes(range(6, 12))]),
        "graya-2x1.png": png(2, 1, 8, 4, [b"\x10\x00\xf0\xff"]),
        "palette-trns-2x2.png": png(2, 2, 2, 3, [b"\x10", b"\xc0"], [(b"PLTE", pal), (b"tRNS", b"\x00\x80")]),
        # Adam7 on 3 x 3: passes 1, 4, 5, 6 and 7 hold 1, 1, 2, 1 + 1 and 3 pixels.
        "interlaced-3x3.png": png(3, 3, 8, 0, None, interlace=1,
                                  raw=b"\0\x01" b"\0\x03" b"\0\x07\x09" b"\0\x02" b"\0\x08" b"\0\x04\x05\x06"),
        "rgb-2x2.bmp": bmp(2, 2, 24, [b"\x00\x00\xff\x00\xff\x00", b"\xff\x00\x00\xff\xff\xff"]),
        "palette-3x2.bmp": bmp(3, 2, 8, [b"\x00\x01\x02", b"\x02\x01\x00"], palette=bytes([0, 0, 255, 0, 0, 255, 0, 0, 255, 0, 0, 0])),
        "top-down-2x2.bmp": bmp(2, -2, 32, [bytes(range(8)), bytes(range(8, 16))]),
        "3x2.gif": gif(3, 2, [0, 1, 2, 3, 2, 1], pal),
        "transparent-2x2.gif": gif(2, 2, [0, 1, 2, 3], pal, transparent=3),
        "interlaced-2x4.gif": gif(2, 4, [0, 1, 2, 3, 3, 2, 1, 0], pal, interlace=True),
        "rgb-8x8.jpg": JPEG_RGB_8X8,
        "gray-3x5.jpg": JPEG_GRAY_3X5,
        "progressive-9x7.jpg": JPEG_PROGRESSIVE_9X7,
        "lossless-alpha-4x3.webp": WEBP_LOSSLESS_ALPHA_4X3,
        "lossy-4x3.webp": WEBP_LOSSY_4X3,
    }


def main():
    targets = {
        "gguf": gguf_seeds(),
        "mmproj": mmproj_seeds(),
        "safetensors": safetensors_seeds(),
        "hf_config": {"tiny-config.json": open(os.path.join(ROOT, "tests/model/fixtures/tiny/config.json"), "rb").read(),
                      "multimodal.json": json.dumps({"architectures": ["Gemma3ForConditionalGeneration"],
                                                     "text_config": {"hidden_size": 64, "num_hidden_layers": 2,
                                                                     "layer_types": ["sliding_attention", "full_attention"]}}).encode()},
        "tokenizer_json": {"small-tokenizer.json": tokenizer_json_seed(),
                           "tiny-tokenizer.json": open(os.path.join(ROOT, "tests/server/fixtures/tiny_tokenizer.json"), "rb").read()},
        "tokenizer_gguf": {**{k: v for k, v in gguf_seeds().items() if k.startswith("vocabulary")},
                           "structured.bin": bytes(range(256))},
        "tokenize": TEXTS,
        "chat_template": {"a.bin": b"\x03\x01\x01hello \xe2\x80\x83\x01\x02hi", "b.bin": bytes(range(64))},
        "cli_options": {"sampling.args": b"--temp\x000.5\x00--top-p\x000.9\x00--top-k\x0040\x00--min-p\x000.05\x00"
                                         b"--repeat-penalty\x001.1\x00--repeat-last-n\x0064\x00--seed\x007",
                        "tokens.args": b"--tokens\x002,94,2245\x00--max-device-memory\x006G",
                        "list.txt": b"2,94,2245,-1,2147483647"},
        "server_request": {k: json.dumps(v).encode() for k, v in BODIES.items()},
        "http_request": http_requests(),
        "kld_base": {"two-windows.kld": kld_base(16, 8, 2), "one-window.kld": kld_base(5, 4, 1),
                     "truncated.kld": kld_base(16, 8, 2)[:-3]},
        "ollama_manifest": ollama_manifests(),
        "grammar": grammar_seeds(),
        "image": image_seeds(),
    }
    for target, seeds in targets.items():
        d = os.path.join(HERE, target)
        os.makedirs(d, exist_ok=True)
        for name in os.listdir(d):
            if not name.startswith("regression-"):
                os.remove(os.path.join(d, name))
        for name, data in seeds.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
    # The bad-file corpus is hostile GGUF too.
    bad = os.path.join(ROOT, "tests/data/bad")
    for name in sorted(os.listdir(bad)):
        if name.endswith(".gguf"):
            shutil.copy(os.path.join(bad, name), os.path.join(HERE, "gguf", "bad-" + name))


if __name__ == "__main__":
    main()
