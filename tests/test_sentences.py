"""Sentences that once claimed more than their cells printed stay fixed.

Each test holds one fix: a phrase that overclaimed is gone, the assert that now backs a sentence is
in a visible cell (with a comment above it naming the claim), or a quiz answer agrees with what the
notebook measured. The numbers themselves are checked where they are printed, by nbval running the
notebooks; these tests read the committed notebooks and the quiz bank, so they are fast.
"""

import json
import re
from pathlib import Path

import torch
from torch import nn

import attnviz
from attnviz.quiz_bank import QUIZZES

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = {path.name[:2]: path for path in sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))}


def raw_cells(number):
    return json.loads(NOTEBOOKS[number].read_text())["cells"]


def cells(number):
    return [(c["cell_type"], "".join(c["source"])) for c in raw_cells(number)]


def markdown(number):
    return "\n\n".join(source for kind, source in cells(number) if kind == "markdown")


def code(number):
    return [source for kind, source in cells(number) if kind == "code"]


def asserted(number, claim):
    """The code cells of notebook `number` in which an assert follows a comment matching `claim`.

    The comment is the run of ``#`` lines directly above the assert, read as one text: a claim wrapped
    over two lines to fit a projector (about 95 characters) is still the comment above its assert.
    """
    found = []
    for source in code(number):
        lines = source.splitlines()
        for i, line in enumerate(lines):
            if not line.lstrip().startswith("assert"):
                continue
            start = i
            while start and lines[start - 1].lstrip().startswith("#"):
                start -= 1
            comment = " ".join(lines[j].strip().lstrip("#").strip() for j in range(start, i))
            if comment and re.search(claim, comment, re.I):
                found.append(source)
    return found


def plain(text):
    return re.sub(r"<[^>]+>", "", text)


def question(number, words):
    matches = [q for q in QUIZZES[number] if words in plain(q["question"])]
    assert len(matches) == 1, f"quiz {number}: expected one question containing {words!r}"
    return matches[0]


# ---- 01 -----------------------------------------------------------------------------------------

def test_01_attention_gradient_title_says_what_the_numbers_show():
    text = "\n".join(code("01"))
    assert "barely shrinks" not in text
    assert "falls roughly like 1/n" in text and asserted("01", r"1/n line")


def test_01_gradient_ratios_start_at_two_positions():
    text = "\n".join(code("01"))
    assert "lengths = [2, 4, 8, 16, 32]" in text
    assert "g(32)/g(1)" not in text and "g(32)/g(1)" not in markdown("01")
    assert "rnn[32] / rnn[2]" in text and "n = 1" in markdown("01")


def test_01_order_of_the_weights_as_t_grows_is_asserted():
    assert "first it goes to `hen`" in markdown("01")
    assert asserted("01", r"hen gets a real share .* before spider and snake")
    assert asserted("01", r"at every T of the sweep the weights come in the order of the scores")


# ---- 02 -----------------------------------------------------------------------------------------

def test_02_positions_are_not_beyond_the_course():
    text = markdown("02")
    assert "beyond this course" not in text
    assert "notebook 04" in text and "notebook 06" in text


# ---- 03 -----------------------------------------------------------------------------------------

def test_03_explorer_steps_start_where_the_explorer_opens():
    text = markdown("03")
    assert "from 1 to 4096" not in text
    opens = re.search(r"saturation_explorer\(d_k=(\d+)", "\n".join(code("03"))).group(1)
    assert f"The explorer opens at `d_k = {opens}`" in text


def test_03_the_asked_for_pair_column_is_said_and_asserted_to_be_the_same():
    assert "by construction" in markdown("03")
    assert asserted("03", r"same slot as the scaled model's")


def test_03_the_default_scale_names_pytorchs_documentation():
    text = markdown("03")
    assert "documentation of\n`torch.nn.functional.scaled_dot_product_attention`" in text


def test_03_the_small_d_k_surprise_is_said_and_asserted():
    # the table shows unscaled rows passing more gradient at d_k = 4; the text says why, a cell backs it
    assert "One surprise in the table" in markdown("03")
    assert asserted("03", r"at d_k = 4 and 8 the unscaled rows passed more")
    assert asserted("03", r"stretched ×2, the rows pass about 10% more")
    assert asserted("03", r"each wider stretch passes less")


def test_03_the_unscaled_model_learns_later_is_measured():
    # "how soon, not whether": the longer unscaled runs are trained, printed and asserted
    assert "Can the unscaled model not learn at all" in markdown("03")
    assert asserted("03", r"given 600 steps the unscaled model learns the lookup too")


# ---- 04 -----------------------------------------------------------------------------------------

def test_04_has_the_where_positions_come_from_note_pointing_to_06():
    note = [s for kind, s in cells("04") if kind == "markdown" and "Where positions come from" in s]
    assert note and "Notebook 06" in note[0]
    assert asserted("04", r"same token at two positions enters attention as two different vectors")


def test_04_is_the_first_notebook_to_use_position_embeddings():
    users = [n for n in NOTEBOOKS if any("position_embedding" in s or "toys import language" in s
                                         for s in code(n))]
    assert users and users[0] == "04", users


def test_04_profiler_is_introduced_where_it_is_first_used():
    text = "\n".join(code("04")) + markdown("04")
    assert "as in notebook 06" not in text
    assert "profiler records each one" in markdown("04")


def test_04_no_argument_against_a_claim_the_learner_never_saw():
    assert "is true of\nneither" not in markdown("04") and "is true of neither" not in markdown("04")
    assert "The Annotated Transformer" in markdown("04")


def test_04_seed_spread_and_nan_step_are_asserted():
    assert asserted("04", r"how far it drops depends on the seed")
    assert asserted("04", r"one plain gradient step .* makes every input-projection weight NaN")


def test_04_quiz_leak_question_matches_the_experiment():
    """The notebook trains with no mask (loss near 0); an inverted causal mask gives NaN instead."""
    leak = question("04", "training loss near 0")
    assert "no causal mask" in plain(leak["question"])
    assert not re.search(r"upside down|invert", plain(leak["question"]), re.I)
    for q in QUIZZES["04"]:
        assert not re.search(r"upside down", plain(q["question"]), re.I)


def test_fact_an_inverted_causal_mask_gives_nan_not_a_good_loss():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 1, batch_first=True)
    x = torch.randn(1, 5, 8)
    out, _ = mha(x, x, x, attn_mask=attnviz.causal_mask(5))   # True = may attend, given where True = ignore
    out.pow(2).mean().backward()
    assert out[0, -1].isnan().all() and mha.in_proj_weight.grad.isnan().all()


# ---- 05 -----------------------------------------------------------------------------------------

def test_05_one_head_is_worse_not_incapable():
    text = markdown("05")
    assert "cannot do that" not in text and "not incapable" in text
    assert asserted("05", r"worse here, not incapable")
    assert asserted("05", r"answers at least one question less well")


def test_05_quiz_does_not_say_one_head_cannot():
    answers = question("05", "over one head of the same total width")["answers"]
    right = next(a for a in answers if a["correct"])
    assert "cannot" not in plain(right["feedback"]) and "worse" in plain(right["feedback"])


def test_05_section_6_promises_only_what_it_measures():
    text = markdown("05")
    assert "stays around 64 to 128" not in text
    assert "does not say why published models settle on 64 or 128" in text
    assert asserted("05", r"64 features single out no more")
    assert "get_supported_head_sizes" in text and "config.json" in text


# ---- 06 -----------------------------------------------------------------------------------------

def test_06_allocation_events_are_printed_relative_to_the_first():
    text = "\n".join(code("06"))
    assert 'print(f"allocation events: {changes}")' not in text
    assert "(when - start_ns) / 1e3" in text


def test_06_fused_claim_names_its_source():
    assert "FlashAttention: Fast and Memory-Efficient Exact Attention with\nIO-Awareness" in markdown("06")


# ---- the teacher's guide ------------------------------------------------------------------------

def test_guide_lists_exactly_the_notebooks_with_exercises():
    with_exercises = sorted(n for n in NOTEBOOKS
                            if any("solution" in c.get("metadata", {}).get("tags", []) for c in raw_cells(n)))
    guide = (REPO / "docs" / "teaching.md").read_text()
    sentence = re.search(r"Notebooks ([0-9, and]+) have exercises", guide)
    assert sentence, "docs/teaching.md should say which notebooks have exercises"
    assert sorted(re.findall(r"\d\d", sentence.group(1))) == with_exercises


def test_guide_does_not_give_llama_2_7b_eight_kv_heads():
    guide = (REPO / "docs" / "teaching.md").read_text()
    assert not re.search(r"LLaMA-2 7B's shape \([^)]*8 KV heads", guide)
