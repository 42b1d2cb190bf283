#!/usr/bin/env python3
"""The demo model's corpus: English text that Debian ships, split into training and held-out text.

Runs on Debian with the packages installed (standard library only):
    apt-get install bible-kjv fortunes
    python3 tools/train_demo/make_corpus.py OUT_DIR
and writes into OUT_DIR:
    train.txt     the training documents
    heldout.txt   the held-out documents (never trained on): the perplexity checks read it
Documents are joined by a blank line. A document is one chapter of the King James Bible
(public domain; `bible -l0 Gen1:1-Rev22:21` prints all 1,189) or one fortune cookie
(BSD fortune-mod's database, package `fortunes`). Whole documents are held out, chosen
by SEED, so no held-out verse or fortune is seen in training, even in part.
"""
import os
import random
import re
import subprocess
import sys

SEED = 20261201
HELDOUT_FRACTION = 0.02
FORTUNE_DIR = "/usr/share/games/fortunes"
# Pictures drawn in characters teach no English.
FORTUNE_SKIP = {"art", "ascii-art"}


def bible_chapters():
    text = subprocess.run(["bible", "-l0", "Gen1:1-Rev22:21"], check=True, capture_output=True,
                          text=True).stdout
    # Each chapter starts with its heading line ("Genesis 1", "1 Samuel 3").
    parts = re.split(r"\n(?=\S[^\n]* \d+\n)", text.strip("\n"))
    return [p.strip("\n") for p in parts]


def clean(text):
    text = re.sub(r".\x08", "", text).replace("\r", "")  # overstrike (bold, underline on a teletype)
    text = re.sub(r"[^\S\n\t]", " ", text)  # form feeds, no-break spaces
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", "", text)


def fortunes():
    docs = []
    for name in sorted(os.listdir(FORTUNE_DIR)):
        path = os.path.join(FORTUNE_DIR, name)
        if "." in name or name in FORTUNE_SKIP or not os.path.isfile(path):
            continue  # .dat indexes, .u8 links, pictures
        raw = open(path, "rb").read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("latin-1")
        for cookie in re.split(r"^%\n", text, flags=re.M):
            cookie = clean(cookie).strip("\n")
            if cookie.strip():
                docs.append(cookie)
    return docs


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    chapters, cookies = bible_chapters(), fortunes()
    if len(chapters) != 1189:
        sys.exit(f"make_corpus: expected the 1,189 chapters of the KJV, got {len(chapters)}")
    docs = chapters + cookies
    order = list(range(len(docs)))
    random.Random(SEED).shuffle(order)
    n_held = round(len(docs) * HELDOUT_FRACTION)
    held = order[:n_held]              # shuffled: chapters and fortunes mixed
    train = sorted(order[n_held:])     # corpus order; the trainer samples windows at random
    for name, ids in (("train.txt", train), ("heldout.txt", held)):
        text = "\n\n".join(docs[i] for i in ids) + "\n"
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            f.write(text)
        print(f"{name}: {len(ids)} documents, {len(text.encode()):,} bytes")
    print(f"corpus: {len(chapters)} KJV chapters, {len(cookies)} fortunes, seed {SEED}")


if __name__ == "__main__":
    main()
