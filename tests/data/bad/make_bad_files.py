#!/usr/bin/env python3
"""Writes the bad-file corpus of tests/data/bad: small GGUF files, each named
for its one defect, and errors.txt, which pairs each file with the words the
generator's error must contain (tests/cli checks exit status 1 and them).

Run it from anywhere after changing a case; the files are committed so the
tests need nothing but the generator binary:
    python3 tests/data/bad/make_bad_files.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

# GGUF value type ids (gguf.hpp's GgufType).
U32, I32, F32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9


def s(text):  # a GGUF string: u64 length, bytes (text, or bytes as they are)
    b = text if isinstance(text, bytes) else text.encode()
    return struct.pack("<Q", len(b)) + b


def kv_bool(key, v):
    return s(key) + struct.pack("<IB", BOOL, v)


def kv_i32_array(key, items):
    return s(key) + struct.pack("<IIQ", ARRAY, I32, len(items)) + b"".join(struct.pack("<i", i) for i in items)


def kv_u32(key, v):
    return s(key) + struct.pack("<II", U32, v)


def kv_f32(key, v):
    return s(key) + struct.pack("<If", F32, v)


def kv_str(key, v):
    return s(key) + struct.pack("<I", STRING) + s(v)


def kv_str_array(key, items):
    return s(key) + struct.pack("<IIQ", ARRAY, STRING, len(items)) + b"".join(s(i) for i in items)


def tensor_info(name, dims, ggml_type, offset):
    return s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) + \
        struct.pack("<IQ", ggml_type, offset)


def gguf(kvs, tensors, data=b"", version=3, magic=b"GGUF", counts=None):
    """A file: header, metadata, tensor infos, padding to 32, data."""
    n_tensors, n_kvs = counts if counts else (len(tensors), len(kvs))
    head = magic + struct.pack("<IQQ", version, n_tensors, n_kvs) + b"".join(kvs) + b"".join(tensors)
    head += b"\0" * (-len(head) % 32)
    return head + data


# The hyperparameters every gemma3 file names (any values: these files fail before they are compared).
GEMMA3_KEYS = [
    kv_str("general.architecture", "gemma3"),
    kv_u32("gemma3.embedding_length", 4),
    kv_u32("gemma3.block_count", 1),
    kv_u32("gemma3.feed_forward_length", 8),
    kv_u32("gemma3.attention.head_count", 1),
    kv_u32("gemma3.attention.head_count_kv", 1),
    kv_u32("gemma3.attention.key_length", 4),
    kv_u32("gemma3.attention.sliding_window", 16),
    kv_f32("gemma3.attention.layer_norm_rms_epsilon", 1e-6),
    kv_u32("gemma3.context_length", 32),
]
EMBEDDING = tensor_info("token_embd.weight", [4, 2], 0, 0)  # F32, 2 rows of 4: 32 bytes
EMBEDDING_DATA = struct.pack("<8f", *range(8))
VALID = gguf(GEMMA3_KEYS, [EMBEDDING], EMBEDDING_DATA)


def with_keys(*kvs, replace=()):
    """The valid file with `kvs` added and the keys named in `replace` left out."""
    keys = [k for k in GEMMA3_KEYS if not any(r.encode() in k for r in replace)]
    return gguf(keys + list(kvs), [EMBEDDING], EMBEDDING_DATA)


# A vocabulary of the embedding's two rows, as the loader checks it.
TOKENS = kv_str_array("tokenizer.ggml.tokens", ["<pad>", "<eos>"])


def f32_tensor(name, n, offset):
    return tensor_info(name, [n], 0, offset)


CASES = {
    "empty-file.gguf": (b"", "not a GGUF file"),
    "bad-magic.gguf": (gguf(GEMMA3_KEYS, [EMBEDDING], EMBEDDING_DATA, magic=b"GGUG"), "not a GGUF file"),
    "unsupported-version.gguf": (gguf(GEMMA3_KEYS, [EMBEDDING], EMBEDDING_DATA, version=4),
                                 "unsupported GGUF version 4 (this reader reads 2 and 3)"),
    "big-endian.gguf": (gguf(GEMMA3_KEYS, [EMBEDDING], EMBEDDING_DATA, version=0x03000000),
                        "big-endian GGUF files are not supported"),
    "impossible-tensor-count.gguf": (gguf([], [], counts=(1 << 40, 0)), "tensor count 1099511627776 is impossible"),
    "string-length-past-end.gguf": (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1000) + b"general",
                                    "truncated header: metadata key #0 at byte 32 needs 1000 bytes"),
    "array-length-past-end.gguf": (gguf([s("tokenizer.ggml.scores") + struct.pack("<IIQ", ARRAY, F32, 1000000)], []),
                                   "array of 1000000 float32 elements cannot fit"),
    "tensor-offset-past-end.gguf": (gguf([], [f32_tensor("t", 8, 4096)], struct.pack("<8f", *range(8))),
                                    "tensor 't' data offset 4096 points past the end of the file"),
    "misaligned-tensor.gguf": (gguf([], [f32_tensor("t", 8, 16)], b"\0" * 64),
                               "tensor 't' data offset 16 is not a multiple of the alignment 32"),
    "overlapping-tensors.gguf": (gguf([], [f32_tensor("a", 16, 0), f32_tensor("b", 8, 32)], b"\0" * 96),
                                 "tensors 'a' and 'b' overlap"),
    "duplicate-tensor-name.gguf": (gguf([], [f32_tensor("t", 8, 0), f32_tensor("t", 8, 32)], b"\0" * 64),
                                   "duplicate tensor name 't'"),
    "unknown-tensor-type.gguf": (gguf([], [tensor_info("t", [8], 1000, 0)], b"\0" * 32),
                                 "tensor 't' has unknown ggml type 1000"),
    "five-dimensions.gguf": (gguf([], [tensor_info("t", [1, 1, 1, 1, 2], 0, 0)], b"\0" * 32),
                             "tensor 't' has 5 dimensions (at most 4)"),
    "dimension-product-overflow.gguf": (gguf([], [tensor_info("t", [1 << 32, 1 << 32], 0, 0)], b"\0" * 32),
                                        "tensor 't' element count overflows"),
    "vocabulary-differs-from-embedding.gguf": (
        gguf(GEMMA3_KEYS + [kv_str_array("tokenizer.ggml.tokens", ["<pad>", "<eos>", "<bos>"])], [EMBEDDING],
             EMBEDDING_DATA),
        "tokenizer.ggml.tokens lists 3 tokens but token_embd.weight has 2 rows"),
    "missing-required-key.gguf": (gguf([k for k in GEMMA3_KEYS if b"embedding_length" not in k], [EMBEDDING],
                                       EMBEDDING_DATA),
                                  "metadata key 'gemma3.embedding_length' is missing"),
    "wrong-architecture.gguf": (gguf([kv_str("general.architecture", "llama")], [EMBEDDING], EMBEDDING_DATA),
                                "general.architecture is 'llama'; this engine runs Gemma 3"),
    # Values a Gemma 3 never has, each refused by name (the loader's rules: config/hparams.hpp's
    # ranges, model/from_gguf.hpp's and text/load_tokenizer.hpp's key checks).
    "rope-freq-base-infinite.gguf": (with_keys(kv_f32("gemma3.rope.freq_base", float("inf"))),
                                     "gemma3.rope.freq_base is inf; a Gemma 3 model's is a finite number from 1 to"),
    "rms-epsilon-negative-infinite.gguf": (
        with_keys(kv_f32("gemma3.attention.layer_norm_rms_epsilon", float("-inf")), replace=["rms_epsilon"]),
        "gemma3.attention.layer_norm_rms_epsilon is -inf; a Gemma 3 model's is a finite number"),
    "rope-freq-base-nan.gguf": (with_keys(kv_f32("gemma3.rope.freq_base", float("nan"))),
                                "gemma3.rope.freq_base is nan"),
    "value-length-differs.gguf": (with_keys(kv_u32("gemma3.attention.value_length", 65)),
                                  "gemma3.attention.value_length is 65 but gemma3.attention.key_length is 4"),
    "value-length-max.gguf": (with_keys(kv_u32("gemma3.attention.value_length", 0xFFFFFFFF)),
                              "gemma3.attention.value_length is 4294967295 but"),
    "rope-scaling-yarn.gguf": (with_keys(kv_str("gemma3.rope.scaling.type", "yarn")),
                               "gemma3.rope.scaling.type is 'yarn'; this engine scales RoPE linearly"),
    "quantization-version-31.gguf": (with_keys(kv_u32("general.quantization_version", 31)),
                                     "general.quantization_version is 31; this engine reads version 2"),
    "bos-token-id-past-vocabulary.gguf": (with_keys(TOKENS, kv_u32("tokenizer.ggml.bos_token_id", 0xFFFFFFFF)),
                                          "tokenizer.ggml.bos_token_id is 4294967295, past the vocabulary's 2 tokens"),
    "pad-token-id-past-embedding.gguf": (with_keys(kv_u32("tokenizer.ggml.padding_token_id", 2)),
                                         "tokenizer.ggml.padding_token_id is 2, past the vocabulary's 2 tokens"),
    "eos-token-id-names-another-token.gguf": (
        with_keys(TOKENS, kv_u32("tokenizer.ggml.eos_token_id", 0)),
        "tokenizer.ggml.eos_token_id is 0, the token '<pad>'; this engine takes it to be <eos> or <end_of_turn>"),
    "add-bos-token-false.gguf": (with_keys(TOKENS, kv_bool("tokenizer.ggml.add_bos_token", 0)),
                                 "tokenizer.ggml.add_bos_token is false"),
    "token-type-out-of-range.gguf": (with_keys(TOKENS, kv_i32_array("tokenizer.ggml.token_type", [3, 0x85])),
                                     "token 1 has type 133; llama.cpp's token types are 1 to 6"),
    "token-not-utf8.gguf": (with_keys(kv_str_array("tokenizer.ggml.tokens", ["<pad>", b"\xff\xfe"])),
                            "token 1 is not valid UTF-8"),
    "truncated-in-header.gguf": (VALID[:12], "truncated header: tensor count at byte 8 needs 8 bytes"),
    # Cut inside the fifth key's name: late enough that ten keys still fit the count check.
    "truncated-in-metadata.gguf": (VALID[:24 + sum(map(len, GEMMA3_KEYS[:4])) + 12],
                                   "truncated header: metadata key #4"),
    "truncated-in-tensor-data.gguf": (VALID[:-8], "truncated: tensor 'token_embd.weight' data ends at byte"),
}


def main():
    for name in os.listdir(HERE):
        if name.endswith(".gguf"):
            os.remove(os.path.join(HERE, name))
    lines = ["# tests/data/bad: each file, then the words the generator's error for it must contain.",
             "# Written by make_bad_files.py; tests/cli/cli_tests.cpp (Cli.BadFilesAreRefused) reads it."]
    for name, (data, error) in CASES.items():
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)
        lines.append(f"{name}\t{error}")
    with open(os.path.join(HERE, "errors.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
