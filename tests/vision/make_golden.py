#!/usr/bin/env python3
"""Golden data for Gemma 3's image path, from Hugging Face transformers.

Runs where torch, transformers and Pillow are installed (the GPU machine; no GPU
needed), with the tiny model's and its encoder's dimensions from the engine:
    unicorn-convert --random gemma3-tiny --hf-config dims.json
    python3 tests/vision/make_golden.py dims.json OUT_DIR
and writes into OUT_DIR:
  pixels/                   the image processor against test images
    <name>.<ext>            the input images (made here, deterministic)
    <name>.processed.png         Gemma3ImageProcessor (PIL) output at 896x896, as the
                            uint8 pixels it rescaled: round((x + 1) / 2 * 255)
    pixels.json             per image: source size, mode, and the largest
                            difference from the torchvision processor's output
  tiny/                     a tiny Gemma3ForConditionalGeneration, fp32, random
    config.json, model.safetensors   the model as a Hugging Face directory
    image.png               its test image (odd size, resized to 64x64)
    pixel_values.bin        the processor's [3, 64, 64] float32
    vision_out.bin          the vision tower's last hidden state [patches, 64]
    soft_tokens.bin         the projector's output [16, 96]
    logits_f32.bin          logits [tokens, vocab] of golden.json's prompt with
                            the image, token_type_ids marking the image tokens
                            (bidirectional attention inside the image)
    logits_causal.bin       the same prompt with causal attention everywhere, to
                            show the two differ
    golden.json             prompt ids, special ids, dims, scales
All .bin files are little-endian float32. The dimensions are unicorn::kGemma3Tiny's
and unicorn::kGemma3SiglipTiny's (include/unicorn/config/dims.hpp, vision_dims.hpp),
read from the engine's config.json (its "vision_config" and mm_tokens_per_image).
"""
import json
import os
import sys

import numpy as np
import torch
import transformers
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model"))
import make_golden as text_golden  # noqa: E402

SEED = 20261207
BOI, EOI, IMAGE = 506, 507, 505   # ids inside the tiny 512-token vocabulary


def test_images(rng):
    """name -> (PIL image, file extension): the cases the issue lists."""
    def smooth(h, w, c):
        y, x = np.mgrid[0:h, 0:w].astype(np.float32)
        chans = [127 + 100 * np.sin(x / (7 + 3 * k) + y / (11 + 5 * k) + k) for k in range(c)]
        a = np.stack(chans, axis=-1) + rng.normal(0, 2, (h, w, c))
        return np.clip(np.rint(a), 0, 255).astype(np.uint8)
    imgs = {
        "rgb_640x480": (Image.fromarray(smooth(480, 640, 3), "RGB"), "png"),
        "photo_500x375": (Image.fromarray(smooth(375, 500, 3), "RGB"), "jpg"),
        "gray_300x200": (Image.fromarray(smooth(200, 300, 1)[:, :, 0], "L"), "png"),
        "alpha_200x150": (Image.fromarray(smooth(150, 200, 4), "RGBA"), "png"),
        "dot_1x1": (Image.fromarray(np.array([[[200, 30, 90]]], np.uint8), "RGB"), "png"),
        "strip_3000x17": (Image.fromarray(smooth(17, 3000, 3), "RGB"), "png"),
        "bmp_400x300": (Image.fromarray(smooth(300, 400, 3), "RGB"), "bmp"),
        "palette_120x90": (Image.fromarray(smooth(90, 120, 3), "RGB").quantize(64), "gif"),
        "lossless_333x222": (Image.fromarray(smooth(222, 333, 3), "RGB"), "webp"),
    }
    return imgs


def save_image(img, path, ext):
    if ext == "jpg":
        img.save(path, quality=90)
    elif ext == "webp":
        img.save(path, lossless=True)
    else:
        img.save(path)


def as_uint8_png(pixel_values, path):
    """[3, H, W] normalised to [-1, 1] -> the uint8 pixels it was made from."""
    a = ((pixel_values.float().numpy() + 1.0) / 2.0 * 255.0)
    u8 = np.clip(np.rint(a), 0, 255).astype(np.uint8).transpose(1, 2, 0)
    Image.fromarray(u8, "RGB").save(path)
    return a


def processors(size):
    from transformers import Gemma3ImageProcessor
    kw = dict(size={"height": size, "width": size}, do_pan_and_scan=False)
    slow = Gemma3ImageProcessor(**kw)
    try:
        from transformers import Gemma3ImageProcessorFast
        fast = Gemma3ImageProcessorFast(**kw)
    except Exception as e:  # noqa: BLE001
        print("no fast processor:", e)
        fast = None
    return slow, fast


def pixel_fixtures(out, rng):
    os.makedirs(out, exist_ok=True)
    slow, fast = processors(896)
    print("slow processor:", slow)
    report = {}
    for name, (img, ext) in test_images(rng).items():
        path = os.path.join(out, f"{name}.{ext}")
        save_image(img, path, ext)
        loaded = Image.open(path)          # what a user's file holds, decoded by PIL
        entry = {"file": os.path.basename(path), "size": list(loaded.size), "mode": loaded.mode}
        s = slow(images=loaded, return_tensors="pt")["pixel_values"][0]
        a = as_uint8_png(s, os.path.join(out, f"{name}.processed.png"))
        entry["slow_off_grid"] = float(np.abs(a - np.rint(a)).max())
        if fast is not None:
            f = fast(images=Image.open(path), return_tensors="pt")["pixel_values"][0]
            entry["max_abs_slow_minus_fast"] = float((s - f).abs().max())
        report[name] = entry
        print(name, entry)
    with open(os.path.join(out, "pixels.json"), "w") as fh:
        json.dump(report, fh, indent=1)


def make_model(dims):
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, SiglipVisionConfig
    text = text_golden.make_config(dims)
    vision_keys = {k: v for k, v in dims["vision_config"].items() if k != "model_type"}
    vision = SiglipVisionConfig(**vision_keys)
    kw = dict(text_config=text.to_dict(), vision_config=vision.to_dict(),
              mm_tokens_per_image=dims["mm_tokens_per_image"], boi_token_index=BOI, eoi_token_index=EOI,
              image_token_index=IMAGE)
    cfg = Gemma3Config(**kw)
    for attr in ("image_token_id", "image_token_index"):
        if hasattr(cfg, attr):
            setattr(cfg, attr, IMAGE)
    cfg._attn_implementation = "eager"
    model = Gemma3ForConditionalGeneration(cfg).float().eval()
    return cfg, model


def randomize(model, gen):
    for name, p in model.named_parameters():
        with torch.no_grad():
            if "vision_tower" in name or "multi_modal_projector" in name:
                if "layer_norm" in name or "post_layernorm" in name:
                    if name.endswith("weight"):
                        p.copy_(1.0 + torch.randn(p.shape, generator=gen) * 0.2)
                    else:
                        p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
                elif "soft_emb_norm" in name:
                    p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
                elif "position_embedding" in name:
                    p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
                elif "mm_input_projection" in name:     # [vision hidden, text hidden]
                    p.copy_(torch.randn(p.shape, generator=gen) / p.shape[0] ** 0.5)
                elif p.ndim == 1:                        # biases
                    p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
                else:                                    # [out, in] or conv [out, c, k, k]
                    fan_in = p[0].numel()
                    p.copy_(torch.randn(p.shape, generator=gen) / fan_in ** 0.5)
    text_golden.randomize(model.model.language_model if hasattr(model.model, "language_model")
                          else model.language_model, gen)


def tensor_of(x):
    for attr in ("pooler_output", "last_hidden_state"):
        if hasattr(x, attr) and getattr(x, attr) is not None and attr == "last_hidden_state":
            return x.last_hidden_state
    if isinstance(x, (list, tuple)):
        return x[0]
    return x


def tiny_fixture(dims, out, rng, gen):
    os.makedirs(out, exist_ok=True)
    cfg, model = make_model(dims)
    tokens_per_image = dims["mm_tokens_per_image"]
    randomize(model, gen)
    model.save_pretrained(out, safe_serialization=True)
    img = Image.fromarray(np.clip(np.rint(rng.uniform(0, 255, (75, 100, 3))), 0, 255)
                          .astype(np.uint8), "RGB")
    img.save(os.path.join(out, "image.png"))
    slow, _ = processors(64)
    pv = slow(images=Image.open(os.path.join(out, "image.png")),
              return_tensors="pt")["pixel_values"].float()
    pv[0].numpy().astype("<f4").tofile(os.path.join(out, "pixel_values.bin"))
    with torch.no_grad():
        inner = model.model
        vis = inner.vision_tower(pixel_values=pv).last_hidden_state[0]
        vis.numpy().astype("<f4").tofile(os.path.join(out, "vision_out.bin"))
        feats = inner.get_image_features(pixel_values=pv)
        feats = getattr(feats, "pooler_output", None) if not torch.is_tensor(feats) else feats
        if feats is None:
            feats = inner.multi_modal_projector(vis[None])
        feats = feats.reshape(-1, feats.shape[-1])
        direct = inner.multi_modal_projector(vis[None]).reshape(-1, feats.shape[-1])
        print("projector direct vs get_image_features:", float((direct - feats).abs().max()))
        feats.numpy().astype("<f4").tofile(os.path.join(out, "soft_tokens.bin"))

        text_ids = torch.randint(3, 500, (40,), generator=gen).tolist()
        prompt = ([2] + text_ids[:12] + [BOI] + [IMAGE] * tokens_per_image + [EOI]
                  + text_ids[12:])
        ids = torch.tensor([prompt])
        tt = (ids == IMAGE).long()
        logits = model(input_ids=ids, pixel_values=pv, token_type_ids=tt).logits[0].float()
        logits.numpy().astype("<f4").tofile(os.path.join(out, "logits_f32.bin"))
        causal = model(input_ids=ids, pixel_values=pv).logits[0].float()
        causal.numpy().astype("<f4").tofile(os.path.join(out, "logits_causal.bin"))
        diff = float((logits - causal).abs().max())
        print("bidirectional vs causal max |diff|:", diff)
    golden = {"transformers": transformers.__version__, "torch": torch.__version__,
              "seed": SEED, "prompt": prompt, "boi": BOI, "eoi": EOI, "image_token": IMAGE,
              "tokens_per_image": tokens_per_image, "vision": dims["vision_config"],
              "vision_scale": float(vis.abs().max()), "soft_scale": float(feats.abs().max()),
              "logit_scale": float(logits.abs().max()), "bidirectional_vs_causal": diff,
              "config": cfg.to_dict()}
    with open(os.path.join(out, "golden.json"), "w") as fh:
        json.dump(golden, fh, indent=1, default=str)
    print(sorted(os.listdir(out)))
    print({k: v.shape for k, v in model.state_dict().items() if "language_model.layers" not in k})


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: make_golden.py DIMS_JSON OUT_DIR (DIMS_JSON: unicorn-convert --random "
                         "gemma3-tiny --hf-config FILE)")
    dims = text_golden.gemma3_config.load(sys.argv[1])
    if "vision_config" not in dims:
        raise SystemExit(f"{sys.argv[1]}: no vision_config (give gemma3-tiny's, which has an image encoder)")
    out = sys.argv[2]
    rng = np.random.default_rng(SEED)
    gen = torch.Generator().manual_seed(SEED)
    print("transformers", transformers.__version__, "torch", torch.__version__)
    tiny_fixture(dims, os.path.join(out, "tiny"), rng, gen)
    pixel_fixtures(os.path.join(out, "pixels"), rng)


if __name__ == "__main__":
    main()
