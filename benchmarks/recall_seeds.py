"""Notebook 03's recall ablation (section 5) on many seeds, with two initialisation controls: what its
sentences about other seeds, and about the start against the division, rest on.

    .venv/bin/python benchmarks/recall_seeds.py [--seeds 40]

Every run uses the notebook's settings (attnviz.toys.recall: d_model = d_k = 64, 16 pairs, 32 keys and
32 values, batches of 32, Adam at 5e-3) and the notebook's seeding (the seed fixes the initial weights
and the batches). Five arms per seed:

* ``÷√d_k`` and ``unscaled``: the notebook's two models (``train_recall``), 600 steps each; their first
  100 steps are the notebook's 100-step runs;
* ``unscaled, soft start``: no division, but W_q and W_k multiplied by 64^(-1/4) right after they are
  drawn, so that its step-1 scores are exactly the ÷√d_k model's; it is unscaled for the rest of
  training (600 steps);
* ``÷√d_k, saturated start``: divided by √d_k, but W_q and W_k multiplied by 64^(+1/4), so that its
  step-1 scores are exactly the unscaled model's (600 steps);
* ``÷√512``: divided by √(8·64), what ÷√d_model would be in a model of 8 heads of 64 (200 steps).

Per seed it prints the step-1 numbers of notebook 03's second table (attention entropy, the median
row's softmax gradient), the unscaled run's highest softmax gradient in its first 100 steps, each arm's
loss over steps 81-100 and the first step at which the mean loss of the last 20 steps is below 0.5.
Then: how many seeds pass each comparison the notebook makes (or used to assert), the ranges, and the
rank correlation between the unscaled model's step-1 softmax gradient and how long it took to learn,
and how much of the unscaled model's extra steps the soft start removed.
About 3.5 s of CPU per seed.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch
from torch import nn

from attnviz.diagnostics import attention_entropy
from attnviz.toys._training import fit
from attnviz.toys.recall import RecallAttention, make_batch, train_recall

SETTINGS = {"d_k": 64, "n_pairs": 16, "n_keys": 32, "n_values": 32, "batch_size": 32, "lr": 5e-3}
LONG = 600


def first_below(losses, level=0.5, window=20):
    """The first step at which the mean of the last `window` losses is below `level` (None: never)."""
    return next((step for step in range(window, len(losses) + 1)
                 if sum(losses[step - window:step]) / window < level), None)


def final(losses):
    """The notebook's final loss of a 100-step run: the mean over steps 81-100."""
    return sum(losses[80:100]) / 20


def train_arm(seed, scaled, steps, init_factor=1.0, divisor_d_k=None):
    """train_recall's run, with W_q and W_k multiplied by init_factor right after they are drawn, and
    (if given) the scores divided by √divisor_d_k instead of √d_k. Returns (losses, step-1 entropy)."""
    torch.manual_seed(seed)
    model = RecallAttention(SETTINGS["n_keys"], SETTINGS["n_values"], 64, SETTINGS["d_k"], scaled=scaled)
    with torch.no_grad():
        model.W_q.weight.mul_(init_factor)
        model.W_k.weight.mul_(init_factor)
    if divisor_d_k is not None:
        model.d_k = divisor_d_k          # forward divides by math.sqrt(self.d_k)
    data = torch.Generator().manual_seed(10_000 + seed)
    entropy = []

    def loss_of(batch):
        pair_keys, pair_values, query_key, answer = batch
        logits, weights = model(pair_keys, pair_values, query_key)
        return nn.functional.cross_entropy(logits, answer), weights.detach()

    def on_step(step, loss, batch, weights):
        entropy.append(attention_entropy(weights).mean().item())

    def next_batch():
        return make_batch(SETTINGS["batch_size"], SETTINGS["n_pairs"], SETTINGS["n_keys"],
                          SETTINGS["n_values"], data)

    losses = fit(model, next_batch, loss_of, steps=steps, lr=SETTINGS["lr"], on_step=on_step)
    return losses, entropy[0]


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    for rank, i in enumerate(order):
        out[i] = float(rank)
    return out


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    return cov / math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))


def spread(values, fmt="{}"):
    return f"{fmt.format(min(values))} to {fmt.format(max(values))}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40, help="seeds 0 .. S-1 (default 40)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.process_time()

    # the control's training loop is train_recall's: with no change it gives the same losses
    assert train_arm(0, False, 5)[0] == train_recall(False, 0, steps=5, **SETTINGS).loss
    soft, hot = 64 ** -0.25, 64 ** 0.25
    assert math.isclose(soft * soft * math.sqrt(64), 1.0) and math.isclose(hot * hot / math.sqrt(64), 1.0)

    rows = []
    print("step 1: entropy (nats) and median softmax gradient, ÷√d_k / unscaled; 'most': the unscaled run's"
          " highest\nmedian gradient in steps 1-100. loss 81-100, and first step with the mean loss of the"
          " last 20 below 0.5\n(-: not within the run), per arm: ÷√d_k, unscaled, unscaled soft start,"
          " ÷√d_k saturated start, ÷√512")
    print(f"{'seed':>4} | {'entropy':>11} | {'gradient':>13} {'ratio':>5} {'most':>5} | "
          f"{'loss 81-100':>29} | {'first below 0.5':>23}")
    for seed in range(args.seeds):
        scaled = train_recall(True, seed, steps=LONG, **SETTINGS)
        unscaled = train_recall(False, seed, steps=LONG, **SETTINGS)
        soft_loss, soft_entropy = train_arm(seed, False, LONG, init_factor=soft)
        hot_loss, hot_entropy = train_arm(seed, True, LONG, init_factor=hot)
        wide_loss, wide_entropy = train_arm(seed, True, 200, divisor_d_k=8 * 64)
        # the controls start where they should: the soft start's step-1 attention is the ÷√d_k model's
        assert math.isclose(soft_entropy, scaled.entropy[0], rel_tol=1e-3)
        assert math.isclose(hot_entropy, unscaled.entropy[0], rel_tol=1e-3)
        curves = (scaled.loss, unscaled.loss, soft_loss, hot_loss, wide_loss)
        row = {
            "seed": seed,
            "entropy": (scaled.entropy[0], unscaled.entropy[0], wide_entropy),
            "grad": (scaled.softmax_grad[0], unscaled.softmax_grad[0]),
            "most": max(unscaled.softmax_grad[:100]),
            "max_weight": unscaled.max_weight[0],
            "unscaled_end": sum(unscaled.loss[-20:]) / 20,
            "on_target": (scaled.on_target[0], unscaled.on_target[0]),
            "final": tuple(final(c) for c in curves),
            "below": tuple(first_below(c) for c in curves),
            "scaled_end": (scaled.entropy[99], scaled.softmax_grad[99]),
        }
        rows.append(row)
        below = "  ".join(f"{'-' if b is None else b:>3}" for b in row["below"])
        losses = "  ".join(f"{f:.2f}" for f in row["final"])
        print(f"{seed:>4} | {row['entropy'][0]:.2f} / {row['entropy'][1]:.2f} | "
              f"{row['grad'][0]:.3f} / {row['grad'][1]:.3f} {row['grad'][1] / row['grad'][0]:5.2f} "
              f"{row['most']:5.3f} | {losses} | {below}", flush=True)

    n = len(rows)

    def count(name, test):
        held = [r["seed"] for r in rows if test(r)]
        failed = [r["seed"] for r in rows if not test(r)]
        print(f"  {name}: {len(held)} of {n}" + (f" (not on seeds {failed})" if failed else ""))

    print(f"\n{n} seeds, {time.process_time() - started:.0f} s of CPU")
    print("notebook 03's comparisons (100-step runs unless said):")
    count("÷√d_k final loss < 0.5", lambda r: r["final"][0] < 0.5)
    count("unscaled final loss > ÷√d_k's + 1", lambda r: r["final"][1] > r["final"][0] + 1)
    count("step-1 entropy unscaled < half ÷√d_k's", lambda r: r["entropy"][1] < 0.5 * r["entropy"][0])
    count("step-1 largest weight unscaled > 0.8", lambda r: r["max_weight"] > 0.8)
    count("step-1 largest weight unscaled > 0.7", lambda r: r["max_weight"] > 0.7)
    count("step-1 on the asked-for pair < 0.2, the same for both", lambda r: r["on_target"][1] < 0.2
          and r["on_target"][0] == r["on_target"][1])
    for share in (0.2, 0.8, 1.0):
        count(f"step-1 median softmax gradient unscaled < {share} x ÷√d_k's",
              lambda r, share=share: r["grad"][1] < share * r["grad"][0])
    count("unscaled median softmax gradient never (steps 1-100) half ÷√d_k's step-1",
          lambda r: r["most"] < 0.5 * r["grad"][0])
    count("÷√d_k entropy at step 100 < 0.25 x step 1",
          lambda r: r["scaled_end"][0] < 0.25 * r["entropy"][0])
    count("÷√d_k softmax gradient at step 100 < 0.1 x step 1",
          lambda r: r["scaled_end"][1] < 0.1 * r["grad"][0])
    count(f"unscaled below 0.5 within {LONG} steps", lambda r: r["below"][1] is not None)
    count("unscaled takes over 3 x the steps of ÷√d_k", lambda r: r["below"][1] is not None
          and r["below"][1] > 3 * r["below"][0])
    count("unscaled takes over 2.5 x the steps of ÷√d_k", lambda r: r["below"][1] is not None
          and r["below"][1] > 2.5 * r["below"][0])
    count(f"unscaled takes over 2.5 x the steps of ÷√d_k, or never gets below 0.5 in {LONG}",
          lambda r: r["below"][1] is None or r["below"][1] > 2.5 * r["below"][0])
    count(f"unscaled loss over steps {LONG - 19}-{LONG} < 1", lambda r: r["unscaled_end"] < 1)
    never = ", ".join(f"{r['unscaled_end']:.2f}" for r in rows if r["below"][1] is None) or "-"
    ends = spread([r["unscaled_end"] for r in rows], "{:.2f}")
    print(f"  unscaled loss over steps {LONG - 19}-{LONG}: {ends}; "
          f"on the seeds where it never got below 0.5: {never}")
    print(f"  step-1 largest weight, unscaled: {spread([r['max_weight'] for r in rows], '{:.3f}')}")
    learned = [r for r in rows if r["below"][1] is not None]
    slower = spread([r["below"][1] / r["below"][0] for r in learned], "{:.2f}")
    print(f"  unscaled / ÷√d_k steps to below 0.5, where it got there: {slower}")
    print(f"  step-1 entropy: ÷√d_k {spread([r['entropy'][0] for r in rows], '{:.2f}')}, "
          f"unscaled {spread([r['entropy'][1] for r in rows], '{:.2f}')} nats")
    print(f"  step-1 median softmax gradient, unscaled / ÷√d_k: "
          f"{spread([r['grad'][1] / r['grad'][0] for r in rows], '{:.3f}')}")
    both = [r for r in rows if r["below"][1] is not None]
    rho = spearman([r["grad"][1] for r in both], [r["below"][1] for r in both]) if len(both) > 2 else math.nan
    print(f"  rank correlation (Spearman) of the unscaled step-1 softmax gradient with the unscaled model's "
          f"steps to below 0.5, {len(both)} seeds: {rho:+.2f}")

    print("the initialisation controls (first step below 0.5; '-': not within the run):")
    names = ("÷√d_k", "unscaled", "unscaled, soft start", "÷√d_k, saturated start", "÷√512")
    for i, name in enumerate(names):
        got = [r["below"][i] for r in rows if r["below"][i] is not None]
        missing = n - len(got)
        print(f"  {name:>23}: {spread(got) if got else '-'} steps"
              + (f", not within the run on {missing} seeds" if missing else "")
              + f"; loss 81-100 {spread([r['final'][i] for r in rows], '{:.2f}')}")
    count("unscaled, soft start learns sooner than unscaled", lambda r: r["below"][2] is not None and (
        r["below"][1] is None or r["below"][2] < r["below"][1]))
    count("÷√d_k, saturated start learns later than ÷√d_k", lambda r: r["below"][3] is None
          or r["below"][3] > r["below"][0])
    count("unscaled, soft start learns sooner than ÷√d_k, saturated start",
          lambda r: r["below"][2] is not None and (r["below"][3] is None or r["below"][2] < r["below"][3]))
    count("unscaled, soft start takes more steps than ÷√d_k", lambda r: r["below"][2] is not None
          and r["below"][2] > r["below"][0])
    count("loss 81-100: unscaled soft start < ÷√d_k saturated start", lambda r: r["final"][2] < r["final"][3])
    count("loss 81-100: unscaled soft start < unscaled - 1", lambda r: r["final"][2] < r["final"][1] - 1)
    count("loss 81-100: ÷√d_k saturated start > ÷√d_k + 1", lambda r: r["final"][3] > r["final"][0] + 1)
    # how much of the unscaled model's extra steps (over the ÷√d_k model's) the soft start removed; an
    # unscaled run that never got below 0.5 counts as LONG steps, which makes its share a lower bound
    removed = []
    for r in rows:
        unscaled_steps = r["below"][1] if r["below"][1] is not None else LONG
        if r["below"][2] is not None:
            removed.append((unscaled_steps - r["below"][2]) / (unscaled_steps - r["below"][0]))
    print(f"  share of the unscaled model's extra steps that the soft start removed: median "
          f"{statistics.median(removed):.2f}, {spread(removed, '{:.2f}')}; over half on "
          f"{sum(x > 0.5 for x in removed)} of {len(removed)}")
    soft_vs = [r["below"][2] / r["below"][0] for r in rows if r["below"][2] is not None]
    print(f"  unscaled soft start / ÷√d_k steps to below 0.5: {spread(soft_vs, '{:.2f}')}")
    print(f"  ÷√512: step-1 entropy {spread([r['entropy'][2] for r in rows], '{:.2f}')} of at most "
          f"{math.log(16):.2f} nats")
    count("÷√512 learns no later than ÷√d_k",
          lambda r: r["below"][4] is not None and r["below"][4] <= r["below"][0])


if __name__ == "__main__":
    main()
