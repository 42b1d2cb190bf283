"""A transformers Gemma3TextConfig from the engine's own config.json of a model.

    unicorn-convert --random gemma3-demo --hf-config dims.json

writes the config.json of a Gemma3ForCausalLM in the dimensions the engine compiles
(include/unicorn/config/dims.hpp, through include/unicorn/model/to_hf.hpp), so the scripts
that build a model in transformers (train.py, reference.py, tests/model/make_golden.py) hold
no dimensions of their own.
"""
import json

# config.json keys that Gemma3TextConfig takes as they are.
KEYS = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "vocab_size", "max_position_embeddings", "rms_norm_eps",
        "sliding_window", "query_pre_attn_scalar", "layer_types", "hidden_activation",
        "tie_word_embeddings")


def load(path):
    """The engine's config.json (unicorn-convert --hf-config) as a dict."""
    with open(path, encoding="utf-8") as f:
        engine = json.load(f)
    missing = [k for k in KEYS + ("rope_parameters", "rope_theta", "rope_local_base_freq") if k not in engine]
    if missing:
        raise SystemExit(f"{path}: not unicorn-convert --hf-config's output (no {', '.join(missing)})")
    return engine


def text_config_kwargs(engine):
    """The keyword arguments of Gemma3TextConfig but RoPE's, which depend on the version."""
    return {k: engine[k] for k in KEYS}


def text_config(engine, **extra):
    """Gemma3TextConfig of the engine's dimensions; `extra` adds keyword arguments."""
    from transformers import Gemma3TextConfig
    common = dict(text_config_kwargs(engine), **extra)
    try:  # transformers >= 5: RoPE parameters per layer type
        return Gemma3TextConfig(**common, rope_parameters=engine["rope_parameters"])
    except TypeError:  # older: global theta and scaling, local base frequency
        return Gemma3TextConfig(**common, rope_theta=engine["rope_theta"],
                                rope_local_base_freq=engine["rope_local_base_freq"],
                                rope_scaling=engine["rope_scaling"])
