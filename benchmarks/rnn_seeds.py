"""Notebook 01's RNN measurements on many seeds, the gated RNNs (LSTM, GRU) beside the plain one, and
the timing of its width-4 loop: what its sentences about other seeds and other recurrent networks rest on.

    .venv/bin/python benchmarks/rnn_seeds.py [--seeds 40] [--timings 5]

1. Notebook 01's measurement 1 (the loop RNN and the attention step of section 4, the median of 20
   random sequences per length), drawn exactly as the notebook draws them but from global seed s
   instead of 0, for s = 0 .. S-1 (seed 0 is the notebook's own numbers): the RNN's g(32)/g(2), its
   factor per step between each pair of lengths, attention's ratio to the 1/n line through its n = 2
   point, and the recurrent matrix W_h's largest singular value and spectral radius.
2. g(32)/g(2) measured as attnviz.toys.rnn.first_input_gradient measures it (one random sequence per
   length and seed, PyTorch's default initialisation, d = 32) for the notebook's RNN and for
   torch.nn.LSTM and torch.nn.GRU, over seeds 0 .. S-1.
3. attnviz.toys.rnn.time_rnn_vs_attention (n = 256, the fastest of 9, width 64) and time_rnn_widths
   (widths 64 and 4 in turn, as notebook 01 times them), ``--timings`` times: the width-4 loop's time
   over the width-64 loop's, and attention's speed-up.
About 1 s of CPU per seed.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch

from attnviz.toys.rnn import first_input_gradient, time_rnn_vs_attention, time_rnn_widths

D = 32
LENGTHS = [2, 4, 8, 16, 32]


def notebook_measurement(seed):
    """Notebook 01's cells from cell-021 to cell-028b, with torch.manual_seed(seed) in place of 0."""
    torch.manual_seed(seed)
    bound = 1 / math.sqrt(D)
    W_x = torch.empty(D, D).uniform_(-bound, bound)
    W_h = torch.empty(D, D).uniform_(-bound, bound)
    b = torch.empty(D).uniform_(-bound, bound)

    def rnn_last_state(x):
        h = torch.zeros(D)
        for x_t in x:
            h = torch.tanh(x_t @ W_x.T + h @ W_h.T + b)
        return h

    torch.nn.RNN(D, D, batch_first=True)     # the notebook builds one to compare with (it draws numbers)
    torch.randn(10, D)
    W_q, W_k, W_v = (torch.randn(D, D) / math.sqrt(D) for _ in range(3))

    def attention_last_output(x):
        query = x[-1] @ W_q
        key, value = x @ W_k, x @ W_v
        return torch.softmax(key @ query / math.sqrt(D), dim=-1) @ value

    direction = torch.randn(D)
    direction = direction / direction.norm()

    def gradient(model, n, draws=20):
        sizes = []
        for _ in range(draws):
            x = torch.randn(n, D, requires_grad=True)
            (grad,) = torch.autograd.grad(model(x) @ direction, x)
            sizes.append(grad[0].norm())
        return torch.stack(sizes).median().item()

    rnn = [gradient(rnn_last_state, n) for n in LENGTHS]
    attention = [gradient(attention_last_output, n) for n in LENGTHS]
    line = [attention[0] * LENGTHS[0] / n for n in LENGTHS]
    factors = [(rnn[j + 1] / rnn[j]) ** (1 / (LENGTHS[j + 1] - LENGTHS[j])) for j in range(len(LENGTHS) - 1)]
    return {
        "seed": seed,
        "rnn_ratio": rnn[-1] / rnn[0],
        "factors": factors,
        "to_line": [a / ln for a, ln in zip(attention, line, strict=True)],
        "singular": torch.linalg.matrix_norm(W_h, 2).item(),
        "radius": torch.linalg.eigvals(W_h).abs().max().item(),
    }


def gated_gradient(kind, n, seed):
    """first_input_gradient's measurement for a torch.nn.LSTM or torch.nn.GRU at PyTorch's default init."""
    torch.manual_seed(seed)
    model = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[kind](D, D, batch_first=True)
    data = torch.Generator().manual_seed(1_000 + seed)
    direction = torch.randn(D, generator=data)
    direction = direction / direction.norm()
    x = torch.randn(1, n, D, generator=data).requires_grad_(True)
    out, _ = model(x)
    (grad,) = torch.autograd.grad(out[0, -1] @ direction, x)
    return grad[0, 0].norm().item()


def spread(values, fmt):
    return f"{fmt.format(min(values))} to {fmt.format(max(values))}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40, help="seeds 0 .. S-1 (default 40)")
    parser.add_argument("--timings", type=int, default=5, help="repeats of the timing (default 5)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.process_time()

    print("1. notebook 01's measurement 1, global seed s in place of 0")
    print(f"{'seed':>4}  {'RNN g(32)/g(2)':>14}  {'factor per step':>15}  {'attention / 1/n line':>20}  "
          f"{'W_h: largest singular value, spectral radius':>44}")
    rows = []
    for seed in range(args.seeds):
        r = notebook_measurement(seed)
        rows.append(r)
        print(f"{seed:>4}  {r['rnn_ratio']:14.1e}  {spread(r['factors'], '{:.2f}'):>15}  "
              f"{spread(r['to_line'], '{:.2f}'):>20}  {r['singular']:26.2f}, {r['radius']:.2f}", flush=True)
    n = len(rows)

    def count(name, test):
        failed = [r["seed"] for r in rows if not test(r)]
        print(f"  {name}: {n - len(failed)} of {n}" + (f" (not on seeds {failed})" if failed else ""))

    count("the RNN's gradient falls by more than a million from n = 2 to 32", lambda r: r["rnn_ratio"] < 1e-6)
    count("every factor per step between 0.3 and 0.6", lambda r: all(0.3 < f < 0.6 for f in r["factors"]))
    for band in (3, 5):
        count(f"attention within a factor of {band} of the 1/n line",
              lambda r, band=band: all(1 / band < x < band for x in r["to_line"]))
    count("W_h's largest singular value above 1", lambda r: r["singular"] > 1)
    print(f"  factor per step: {spread([f for r in rows for f in r['factors']], '{:.2f}')}; "
          f"attention / 1/n line: {spread([x for r in rows for x in r['to_line']], '{:.2f}')}; "
          f"W_h largest singular value {spread([r['singular'] for r in rows], '{:.2f}')}, "
          f"spectral radius {spread([r['radius'] for r in rows], '{:.2f}')}")

    print(f"\n2. g(32)/g(2), one random sequence per length and seed, seeds 0 .. {n - 1}, "
          "PyTorch's default initialisation")
    for kind in ("rnn", "lstm", "gru"):
        if kind == "rnn":
            ratios = [first_input_gradient(32, "rnn", seed=s) / first_input_gradient(2, "rnn", seed=s)
                      for s in range(n)]
        else:
            ratios = [gated_gradient(kind, 32, s) / gated_gradient(kind, 2, s) for s in range(n)]
        name = {"rnn": "notebook's RNN (SimpleRNN)", "lstm": "torch.nn.LSTM", "gru": "torch.nn.GRU"}[kind]
        print(f"  {name:>26}: median {statistics.median(ratios):.1e}, {spread(ratios, '{:.1e}')}; "
              f"under 1e-4 on {sum(x < 1e-4 for x in ratios)} of {n}", flush=True)

    print(f"\n3. time_rnn_vs_attention and time_rnn_widths (n = 256, repeats = 9), {args.timings} times")
    narrow_over_wide, speedups = [], []
    for i in range(args.timings):
        wide = time_rnn_vs_attention(n=256, d=64, repeats=9)
        loops = time_rnn_widths(n=256, widths=(64, 4), repeats=9)     # as notebook 01 times them
        narrow_over_wide.append(loops[4] / loops[64])
        speedups.append(wide["ratio"])
        print(f"  {i}: RNN width 64 {loops[64] * 1e3:.2f} ms, width 4 {loops[4] * 1e3:.2f} ms"
              f" (width 4 / width 64 = {narrow_over_wide[-1]:.2f}); attention {wide['ratio']:.1f}x faster")
    print(f"  width 4 / width 64: {spread(narrow_over_wide, '{:.2f}')}; "
          f"attention's speed-up {spread(speedups, '{:.1f}')}")
    print(f"\n{time.process_time() - started:.0f} s of CPU")


if __name__ == "__main__":
    main()
