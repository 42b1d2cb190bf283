#!/usr/bin/env python3
"""KL divergence and top-token agreement between two N x V float32 logit files.

  kl.py A B [VOCAB]   prints: KL(A || B) mean and max over the positions, and
                      the positions whose top token is the same in both."""
import array, math, sys


def load(path):
    a = array.array("f")
    a.frombytes(open(path, "rb").read())
    return a


def log_softmax(row):
    m = max(row)
    lse = m + math.log(math.fsum(math.exp(x - m) for x in row))
    return [x - lse for x in row]


def compare(pa, pb, vocab):
    a, b = load(pa), load(pb)
    n = len(a) // vocab
    if len(a) != len(b) or n * vocab != len(a):
        sys.exit(f"kl.py: {pa} and {pb} are not two N x {vocab} logit files of one N")
    kls, same = [], 0
    for i in range(n):
        ra, rb = a[i * vocab:(i + 1) * vocab], b[i * vocab:(i + 1) * vocab]
        la, lb = log_softmax(ra), log_softmax(rb)
        kls.append(math.fsum(math.exp(x) * (x - y) for x, y in zip(la, lb)))
        same += max(range(vocab), key=ra.__getitem__) == max(range(vocab), key=rb.__getitem__)
    return sum(kls) / n, max(kls), same, n


if __name__ == "__main__":
    mean, most, same, n = compare(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 262144)
    print(f"KL mean {mean:.6f} max {most:.6f}, same top token {same}/{n}")
