"""Synthetic click logs in the Criteo format DeepRec's modelzoo programs read.

Each line of `train.csv` / `eval.csv` is `label,I1..I13,C1..C26`: a 0/1 click, 13 integer
counts (some left empty, as in the real data) and 26 categorical values written as
8-digit hex hashes (some empty). The ids follow a long tail that keeps growing: column
`Ck`'s value is drawn from a Zipf law over a vocabulary whose size grows with the line
number, so later lines bring ids never seen before (what hash-bucket embeddings lose to
collisions and EmbeddingVariables grow for). The click is a Bernoulli draw from a
logistic model of hidden per-id weights and the log-counts, so a model that learns the
ids' embeddings reaches an AUC well above 0.5; `auc_ceiling` in the returned summary is
the AUC of the true click probabilities on the eval lines, what a perfect model would get.

Example:
    >>> from tensorweave.datasets.criteo import write_synthetic
    >>> write_synthetic("/tmp/criteo", train_lines=20000, eval_lines=2000)["auc_ceiling"] > 0.7
    True

Command line (what the modelzoo programs take as `--data_location`):
    python -m tensorweave.datasets.criteo --out ./data --train 100000 --eval 10000
"""
from __future__ import annotations

import argparse
import os

import numpy as np

NUM_INTS, NUM_CATS = 13, 26
_WEIGHT_SEED = 0x5EED


def _ids(rng: np.random.Generator, lines: np.ndarray, base_vocab: int,
         growth: float) -> np.ndarray:
    # A Zipf(1.2) draw folded into a vocabulary that grows with the line number.
    vocab = (base_vocab + growth * lines).astype(np.int64)
    raw = rng.zipf(1.2, size=(len(lines), NUM_CATS)).astype(np.int64)
    return (raw - 1) % vocab[:, None]


def _hashes(ids: np.ndarray) -> np.ndarray:
    # splitmix64-style mix of (column, id): each column's values look like Criteo's.
    cols = np.arange(NUM_CATS, dtype=np.uint64)[None, :]
    z = ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + cols * np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(31)
    z *= np.uint64(0x94D049BB133111EB)
    return (z >> np.uint64(32)).astype(np.uint32)


def _weights(hashes: np.ndarray) -> np.ndarray:
    # Each (column, value)'s hidden click weight: a fixed function of its hash, so train
    # and eval agree without keeping a table. Only some columns matter, as in real logs.
    z = (hashes.astype(np.uint64) * np.uint64(0xD6E8FEB86659FD93) + np.uint64(_WEIGHT_SEED))
    z ^= z >> np.uint64(29)
    u = (z & np.uint64(0xFFFFFF)).astype(np.float64) / float(1 << 24)
    scale = np.where(np.arange(NUM_CATS) % 3 == 0, 1.6, 0.25)
    return (u - 0.5) * 2 * scale[None, :]


def _lines(rng: np.random.Generator, first: int, count: int, base_vocab: int,
           growth: float) -> tuple[list[str], np.ndarray]:
    at = np.arange(first, first + count, dtype=np.float64)
    ints = rng.poisson(3.0, size=(count, NUM_INTS)) * rng.integers(1, 20, size=(1, NUM_INTS))
    hashes = _hashes(_ids(rng, at, base_vocab, growth))
    logit = _weights(hashes).sum(1) + 0.35 * (np.log1p(ints[:, 0]) - 1.3) - 1.0
    prob = 1 / (1 + np.exp(-logit))
    labels = (rng.random(count) < prob).astype(np.int64)
    empty_int = rng.random((count, NUM_INTS)) < 0.1
    empty_cat = rng.random((count, NUM_CATS)) < 0.03
    out = []
    for r in range(count):
        i = ["" if empty_int[r, k] else str(int(ints[r, k])) for k in range(NUM_INTS)]
        c = ["" if empty_cat[r, k] else format(int(hashes[r, k]), "08x")
             for k in range(NUM_CATS)]
        out.append(",".join([str(labels[r])] + i + c))
    return out, prob


def _auc(labels: np.ndarray, scores: np.ndarray) -> float:
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels == 1
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if not n_pos or not n_neg:
        return 0.5
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def write_synthetic(out_dir: str, train_lines: int = 100000, eval_lines: int = 10000,
                    seed: int = 0, base_vocab: int = 2000, growth: float = 0.5) -> dict:
    """Writes `<out_dir>/train.csv` and `eval.csv` in the modelzoo's Criteo format.

    Args:
        out_dir: the directory (made if missing).
        train_lines, eval_lines: lines per file (eval continues the stream after train,
            so it holds ids training never saw, as tomorrow's log does).
        seed: the random seed (same seed, same files).
        base_vocab: each column's vocabulary at the first line.
        growth: new vocabulary per line (the id space keeps growing).

    Returns:
        {"train": path, "eval": path, "click_rate": ..., "auc_ceiling": ...}.
    """
    if train_lines < 1 or eval_lines < 1:
        raise ValueError(f"write_synthetic: train_lines={train_lines} and eval_lines="
                         f"{eval_lines} must both be at least 1")
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(seed)
    paths = {}
    clicks, probs, labels = 0, None, None
    for name, first, count in (("train", 0, train_lines), ("eval", train_lines, eval_lines)):
        path = paths[name] = os.path.join(out_dir, f"{name}.csv")
        with open(path, "w") as f:
            for start in range(first, first + count, 50000):
                n = min(50000, first + count - start)
                text, p = _lines(rng, start, n, base_vocab, growth)
                f.write("\n".join(text) + "\n")
                got = np.array([int(t[0]) for t in text])
                clicks += int(got.sum())
                if name == "eval":
                    probs = p if probs is None else np.concatenate([probs, p])
                    labels = got if labels is None else np.concatenate([labels, got])
    assert probs is not None and labels is not None
    return {"train": paths["train"], "eval": paths["eval"],
            "click_rate": clicks / (train_lines + eval_lines),
            "auc_ceiling": _auc(labels, probs)}


def main(argv: list[str] | None = None) -> None:
    """The command line: writes the files and prints what it wrote."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="./data", help="directory for train.csv and eval.csv")
    p.add_argument("--train", type=int, default=100000, help="training lines")
    p.add_argument("--eval", type=int, default=10000, help="evaluation lines")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    got = write_synthetic(a.out, a.train, a.eval, a.seed)
    print(f"wrote {got['train']} ({a.train} lines) and {got['eval']} ({a.eval} lines); "
          f"click rate {got['click_rate']:.3f}, AUC of the true probabilities on eval "
          f"{got['auc_ceiling']:.3f}")


if __name__ == "__main__":
    main()
