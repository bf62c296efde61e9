"""Checker times: correct code, buggy code and a timed-out call, per checker (target: < 2 s on correct code).

Run: .venv/bin/python benchmarks/checker_times.py                      # this tree
     .venv/bin/python benchmarks/checker_times.py --compare /path/to/other/checkout [--rounds 3]

With ``--compare`` the same measurements run for the other checkout and this one, alternately in fresh
processes (each imports attnviz from its own tree), ``--rounds`` times each; the table shows the
fastest of the rounds side by side, so both trees meet the same load. The learner code measured is the
same in both: the zoo's members that exist in both trees, and decoding steps written here from the
model's public pieces (``embed``, ``blocks``, ``unembed``).
"""

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def _cpu():
    """CPU seconds of this process and of its finished children (the checkers' forked children)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _seconds(check, fn, **kwargs):
    """(wall seconds, CPU seconds) of one check."""
    start, cpu = time.perf_counter(), _cpu()
    check(fn, **kwargs)
    return time.perf_counter() - start, _cpu() - cpu


def _fastest(pairs):
    return min(wall for wall, _ in pairs), min(cpu for _, cpu in pairs)


def _stuck(*args, **kwargs):
    return sum(range(10 ** 12))


def _decode_step(scale=True, advance=True):
    """A decoding step from the public pieces (a list of (keys, values) per layer as its cache)."""
    import torch
    import torch.nn.functional as F

    def step(model, tokens, cache):
        past = 0 if cache is None else cache[0][0].shape[-2]
        batch, n_new = tokens.shape
        h, h_kv, d = model.n_heads, model.n_kv_heads, model.d_head
        x = model.embed(tokens, past if advance else 0)
        new = []
        for layer, block in enumerate(model.blocks):
            a, y = block.attention, block.norm_attention(x)
            q = a.W_q(y).view(batch, n_new, h, d).transpose(1, 2)
            k = a.W_k(y).view(batch, n_new, h_kv, d).transpose(1, 2)
            v = a.W_v(y).view(batch, n_new, h_kv, d).transpose(1, 2)
            if cache is not None:
                k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
            new.append((k, v))
            n_all = k.shape[-2]
            mask = torch.ones(n_new, n_all, dtype=torch.bool).tril(n_all - n_new)
            heads = F.scaled_dot_product_attention(q, k.repeat_interleave(h // h_kv, 1),
                                                   v.repeat_interleave(h // h_kv, 1), attn_mask=mask,
                                                   scale=None if scale else 1.0)
            x = x + a.W_o(heads.transpose(1, 2).reshape(batch, n_new, h * d))
            x = x + block.mlp(block.norm_mlp(x))
        return model.unembed(x), new

    return step


def _rows():
    import torch

    import attnviz
    from attnviz import check, zoo

    return [
        ("check_attention", check.check_attention,
         lambda q, k, v, mask=None: attnviz.scaled_dot_product_attention(q, k, v, mask), zoo.mask_inverted),
        ("check_multi_head", check.check_multi_head, attnviz.MultiHeadAttention,
         zoo.MULTI_HEAD_BUGS["heads_averaged"]),
        ("check_causal_mask", check.check_causal_mask, lambda n: torch.ones(n, n, dtype=torch.bool).tril(),
         zoo.causal_future_visible),
        ("check_padding_mask", check.check_padding_mask, attnviz.padding_mask, zoo.padding_masks_queries),
        ("check_decoding_step (buggy: positions)", check.check_decoding_step, _decode_step(),
         _decode_step(advance=False)),
        ("check_decoding_step (buggy: no scale)", check.check_decoding_step, _decode_step(),
         _decode_step(scale=False)),
    ]


def measure():
    """{row name: [(wall, cpu) for first call, correct, buggy first, buggy again, timeout]} for the
    attnviz on sys.path."""
    out = {}
    for name, check, right, wrong in _rows():
        first = _seconds(check, right)
        again = _fastest([_seconds(check, right) for _ in range(3)])
        buggy = [_seconds(check, wrong) for _ in range(4)]
        stuck = _seconds(check, _stuck, time_limit=1.0)
        out[name] = [first, again, buggy[0], _fastest(buggy[1:]), stuck]
    return out


def _in_tree(tree):
    env = dict(os.environ, PYTHONPATH=str(tree))
    bench = str(HERE / "benchmarks")
    code = (f"import sys; sys.path.insert(0, {str(tree)!r}); sys.path.insert(0, {bench!r}); "
            "import json, attnviz, checker_times; "
            "assert attnviz.__file__.startswith(sys.path[1]), attnviz.__file__; "
            "print('@@' + json.dumps(checker_times.measure()))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                          cwd="/")
    return json.loads(next(line[2:] for line in done.stdout.splitlines() if line.startswith("@@")))


COLUMNS = ("first call (cold)", "correct", "buggy, first", "buggy, again", "timeout (limit 1 s)")
"""A timed-out child burns its whole limit of CPU: that column is compared by wall time only."""


def _cell(seconds):
    if math.isnan(seconds):
        return "—"
    return f"{seconds:.2f} s" if seconds >= 0.995 else f"{seconds * 1000:.0f} ms"


def _table(title, heads, rows):
    print(f"\n{title}\n")
    print("| checker | " + " | ".join(heads) + " |")
    print("|---" * (len(heads) + 1) + "|")
    for name, cells in rows:
        print(f"| {name} | " + " | ".join(cells) + " |")


def main():
    args = sys.argv[1:]
    if "--compare" not in args:
        sys.path.insert(0, str(HERE))
        table = measure()
        for kind, which in (("wall time", 0), ("CPU time (kernel and the checker's children)", 1)):
            _table(kind, COLUMNS, [(name, [_cell(c[which]) for c in cells[:-1]] + [_cell(cells[-1][0])])
                                   for name, cells in table.items()])
        return
    other = Path(args[args.index("--compare") + 1]).resolve()
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 3
    runs = {"old": [], "new": []}
    for _ in range(rounds):
        runs["old"].append(_in_tree(other))
        runs["new"].append(_in_tree(HERE))
    print(f"old: {other}   new: {HERE}   fastest of {rounds} alternating rounds each")
    for kind, which in (("wall time", 0), ("CPU time (kernel and the checker's children)", 1)):
        best = {tree: {row: [min(r[row][i][which] for r in found) for i in range(len(COLUMNS))]
                       for row in found[0]} for tree, found in runs.items()}
        rows = []
        for row, new in best["new"].items():
            old = best["old"].get(row) or [math.nan] * len(new)
            cells = [f"{_cell(o)} / {_cell(n)}" for o, n in zip(old, new, strict=True)]
            rows.append((row, cells[:-1] + ["(wall time only)"] if which else cells))
        _table(kind + ": old / new", COLUMNS, rows)


if __name__ == "__main__":
    main()
