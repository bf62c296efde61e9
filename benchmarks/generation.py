"""Time per generated token with and without the KV cache, at several context lengths, side by side.

    .venv/bin/python benchmarks/generation.py [--d-model 128] [--layers 4] [--heads 4] [--kv-heads 4]

One untrained attnviz.gpt.TinyGPT (speed does not depend on the weights), one CPU thread, CPU time
of the calling thread, median of 5 after a warm-up. "no cache" is the cost of the token at context
length n when everything is recomputed: one forward pass over n positions. "KV cache" is one new
position against n - 1 cached ones (the cache is copied first so every repeat starts from the same
n - 1). The last columns: the ratio, and the cache's size from attnviz.kv_cache_bytes (float32).
"""

from __future__ import annotations

import argparse

import torch

import attnviz
from attnviz.gpt import KVCache, TinyGPT
from attnviz.toys.timing import loglog_slope, median_seconds, single_thread

CONTEXTS = (64, 128, 256, 512, 1024, 2048)


def _one_step(model, filled: KVCache, last):
    fresh = KVCache()
    fresh.keys, fresh.values = list(filled.keys), list(filled.values)   # filled itself stays n - 1 long
    return model(last, fresh)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=None)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = TinyGPT(64, args.d_model, args.heads, args.layers, max(CONTEXTS), n_kv_heads=args.kv_heads).eval()
    text = torch.randint(64, (1, max(CONTEXTS)))
    print(f"TinyGPT d_model={model.d_model}, {model.n_layers} layers, {model.n_heads} heads, "
          f"{model.n_kv_heads} KV heads; CPU time per generated token, one thread, median of 5")
    print(f"{'context n':>9} {'no cache (ms)':>14} {'KV cache (ms)':>14} {'ratio':>7} {'cache bytes':>12}")
    rows = []
    with single_thread(), torch.no_grad():
        for n in CONTEXTS:
            filled = model(text[:, :n - 1], KVCache())[1]
            plain = median_seconds(model, text[:, :n], clock="thread")
            cached = median_seconds(_one_step, model, filled, text[:, n - 1:n], clock="thread")
            size = attnviz.kv_cache_bytes(model.n_layers, model.n_kv_heads, model.d_head, n, 4)
            rows.append((n, plain, cached))
            print(f"{n:>9} {plain * 1e3:>14.3f} {cached * 1e3:>14.3f} {plain / cached:>6.1f}x {size:>12}",
                  flush=True)
    contexts = [r[0] for r in rows]
    print(f"fitted log-log slopes: no cache {loglog_slope(contexts, [r[1] for r in rows]):.2f}, "
          f"KV cache {loglog_slope(contexts, [r[2] for r in rows]):.2f}")


if __name__ == "__main__":
    main()
