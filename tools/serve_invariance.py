#!/usr/bin/env python3
# tools/serve_invariance.py — issue 15's batch invariance against a running
# server, by hand: a seeded request (temperature 0.8, seed 42) and a greedy
# one, each first alone, then the same two while OTHERS seeded requests share
# the decode steps; prints whether each text came back the same, and where it
# first differs. Python's standard library only, so it runs on the GPU
# machine (device tool) as on this one.
#   python3 tools/serve_invariance.py PORT [--others 30] [--tokens 96] [--rounds 2] [--cache]
# --cache lets the server reuse a slot's prompt cache (cache_prompt: true);
# without it every request prefills its whole prompt.
import argparse
import json
import sys
import threading
import time
import urllib.request


def main():
    ap = argparse.ArgumentParser(description="seeded and greedy requests alone, then among others")
    ap.add_argument("port", type=int)
    ap.add_argument("--others", type=int, default=30, help="seeded requests sharing the steps")
    ap.add_argument("--tokens", type=int, default=96, help="tokens each checked request generates")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cache", action="store_true", help="cache_prompt: true")
    args = ap.parse_args()

    def complete(body):
        body = dict(body, cache_prompt=args.cache)
        req = urllib.request.Request(f"http://127.0.0.1:{args.port}/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        reply = json.load(urllib.request.urlopen(req, timeout=600))
        return reply["choices"][0]["text"]

    failures = 0
    for rnd in range(args.rounds):
        checked = {
            "seeded": {"prompt": f"The history of the river {rnd} begins", "max_tokens": args.tokens,
                       "temperature": 0.8, "seed": 42},
            "greedy": {"prompt": f"In the morning {rnd} the market opened", "max_tokens": args.tokens,
                       "temperature": 0},
        }
        alone = {name: complete(body) for name, body in checked.items()}
        shared = {}

        def run(key, body):
            shared[key] = complete(body)

        others = [threading.Thread(target=run, args=(i, {"prompt": f"Other request {rnd} number {i} talks about",
                                                         "max_tokens": args.tokens + 32, "temperature": 0.7,
                                                         "seed": 1000 + i}))
                  for i in range(args.others)]
        for t in others:
            t.start()
        time.sleep(0.3)  # the others are decoding when the checked requests arrive
        mine = [threading.Thread(target=run, args=(name, body)) for name, body in checked.items()]
        for t in mine:
            t.start()
        for t in others + mine:
            t.join()
        for name, text in alone.items():
            under_load = shared[name]
            first = next((i for i, (a, b) in enumerate(zip(text, under_load)) if a != b),
                         None if len(text) == len(under_load) else min(len(text), len(under_load)))
            same = first is None
            failures += not same
            print(f"round {rnd} {name}: alone and among {args.others} others "
                  f"{'the same' if same else f'differ from character {first}'} ({len(text)} characters)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
