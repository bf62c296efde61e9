"""How often notebook 07's induction circuit forms, seed by seed, with the notebook's settings.

    .venv/bin/python benchmarks/induction_seeds.py [N_SEEDS]    # default 30: seeds 0 .. 29

For each seed, ``attnviz.toys.induction.train_induction(seed)`` (as notebook 07 calls it), then on
held-out sequences: layer 0's best previous-token score, layer 1's best induction score (Olsson et
al.'s threshold is 0.4), the repeat accuracy, the accuracy with that previous-token head knocked out
(as a share of the accuracy before), and the worst accuracy over the periods it never trained on
(2, 3, 13 .. 20). A seed passes when both scores reach 0.4, the knockout leaves under half, and every
unseen period is predicted at 90% or more: what notebook 07 asserts on its three seeds. Prints one
row per seed and the count of passes; about 2 s of CPU per seed.
"""

from __future__ import annotations

import sys

import torch

from attnviz.toys import induction

UNSEEN = (2, 3, *range(13, 21))


def main(argv: list[str]) -> int:
    n_seeds = int(argv[0]) if argv else 30
    print(f"{'seed':>4} {'prev':>5} {'induct':>6} {'acc':>6} {'KO/acc':>6} {'unseen':>6} {'CPU s':>5}  pass")
    passed = 0
    for seed in range(n_seeds):
        run = induction.train_induction(seed)
        head = int(run.previous[0].argmax())
        knocked = induction.knock_out(run.model, [(0, head)])
        ratio = induction.repeat_accuracy(knocked, run.eval_tokens, run.eval_period) / run.repeat_accuracy
        generator = torch.Generator().manual_seed(100 + seed)
        samples = [induction.sample_segments(64, 24, 24, [period], generator) for period in UNSEEN]
        unseen = min(induction.repeat_accuracy(run.model, tokens, period) for tokens, period in samples)
        previous, score = float(run.previous[0].max()), float(run.induction[1].max())
        ok = previous >= 0.4 and score >= 0.4 and ratio < 0.5 and unseen >= 0.9
        passed += ok
        print(f"{seed:>4} {previous:>5.2f} {score:>6.2f} {run.repeat_accuracy:>6.1%} {ratio:>6.2f} "
              f"{unseen:>6.1%} {run.seconds:>5.1f}  {'yes' if ok else 'NO'}", flush=True)
    print(f"{passed} of {n_seeds} seeds pass")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
