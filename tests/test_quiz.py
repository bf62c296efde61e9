"""The quiz banks are well formed, show_quiz displays offline, and the facts the answers state hold."""

import re

import pytest
import torch
import torch.nn.functional as F
from _fresh import modules_after
from torch import nn

import attnviz
from attnviz import quiz
from attnviz.quiz_bank import QUIZZES, RIGHT, WRONG

NOTEBOOKS = ["01", "02", "03", "04", "05", "06", "07", "08"]


def test_every_notebook_has_three_to_five_questions():
    assert sorted(QUIZZES) == NOTEBOOKS
    for notebook, questions in QUIZZES.items():
        assert 3 <= len(questions) <= 5, notebook


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_each_question_has_one_right_answer_and_feedback_on_every_option(notebook):
    for question in QUIZZES[notebook]:
        assert question["type"] == "multiple_choice"
        assert question["question"].strip()
        answers = question["answers"]
        assert len(answers) >= 3, question["question"]
        assert sum(a["correct"] for a in answers) == 1, question["question"]
        texts = [a["answer"] for a in answers]
        assert len(set(texts)) == len(texts), "duplicate options"
        for answer in answers:
            feedback = answer["feedback"]
            assert feedback.startswith(RIGHT if answer["correct"] else WRONG), feedback
            assert len(feedback) > len(WRONG) + 5, "feedback must say why"


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_texts_are_safe_for_jupyterquiz(notebook):
    """No TeX ($ would be handed to MathJax), no raw HTML beyond <code>, no markdown links."""
    for question in QUIZZES[notebook]:
        parts = [question["question"]] + [a[k] for a in question["answers"] for k in ("answer", "feedback")]
        for text in parts:
            assert "$" not in text and "](" not in text and "http" not in text, text
            assert not re.sub(r"</?code>", "", text).count("<"), text


def test_right_answer_is_not_always_in_the_same_place():
    positions = {next(i for i, a in enumerate(q["answers"]) if a["correct"])
                 for questions in QUIZZES.values() for q in questions}
    assert len(positions) >= 3


def test_the_sqrt_dk_question_explains_the_overflow_answer():
    question = QUIZZES["03"][0]
    overflow = next(a for a in question["answers"] if "overflow" in a["answer"])
    assert not overflow["correct"] and "gradient" in overflow["feedback"]


@pytest.mark.parametrize("key", ["03", "3", 3])
def test_quiz_text_accepts_several_spellings(key):
    text = quiz.quiz_text(key, answers=True)
    assert "√d_k" in text and " *" in text and "Not quite." in text


def test_unknown_quiz_is_a_clear_error():
    with pytest.raises(ValueError, match="there are quizzes for 01, 02"):
        quiz.show_quiz("09")


def test_show_quiz_displays_html_and_javascript_that_fetch_nothing(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    quiz.show_quiz("04")
    assert [type(obj).__name__ for obj in shown] == ["HTML", "Javascript"]
    script = shown[1].data
    assert script.startswith("var MathJax;")          # shadows JupyterLab's MathJax: no CDN fallback
    assert not re.findall(r"https?://[^\s'\"]+\.js", script)
    assert "cdn." not in script
    assert "masked_fill" in script                    # the questions are embedded, not loaded


def test_quiz_module_imports_no_torch_widgets():
    bad = modules_after("import attnviz.quiz") & {"ipywidgets", "plotly"}
    assert not bad, bad


# ---- the facts the answers state, measured on the installed PyTorch ----------------------------

def test_fact_fully_masked_row_plain_softmax_nan_fused_zeros():
    row = torch.full((3,), float("-inf"))
    assert torch.isnan(torch.softmax(row, dim=-1)).all()
    q = torch.randn(1, 3, 4)
    mask = torch.tensor([[True, False, True], [False, False, False], [True, True, True]])
    out = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    assert torch.equal(out[0, 1], torch.zeros(4))


def test_fact_float16_fill_of_minus_1e9_raises_and_finfo_min_is_minus_65504():
    scores = torch.zeros(2, 3, dtype=torch.float16)
    with pytest.raises(RuntimeError, match="overflow"):
        scores.masked_fill(torch.ones(2, 3, dtype=torch.bool), -1e9)
    assert torch.finfo(torch.float16).min == -65504


def test_fact_kv_cache_512_kib_per_token():
    assert attnviz.kv_cache_bytes(32, 32, 128, 1, bytes_per_element=2) == 512 * 1024


def test_fact_fused_default_scale_is_one_over_sqrt_d_k():
    q, k, v = torch.randn(5, 16), torch.randn(6, 16), torch.randn(6, 3)
    ours, _ = attnviz.scaled_dot_product_attention(q, k, v)
    assert torch.allclose(F.scaled_dot_product_attention(q, k, v), ours, atol=1e-5)


def test_fact_torch_multihead_is_sequence_first_by_default():
    assert nn.MultiheadAttention(8, 2).batch_first is False


def test_fact_temperature_keeps_the_order_and_sharpens():
    scores = torch.tensor([0.3, 1.2, -0.5])
    sharp, plain = torch.softmax(scores / 0.2, -1), torch.softmax(scores, -1)
    assert sharp.argmax() == plain.argmax() and sharp.max() > plain.max()


def test_the_right_answer_is_not_given_away_by_its_length():
    """The right option is never much longer than the longest wrong one (a classic quiz tell)."""
    for notebook, questions in QUIZZES.items():
        for question in questions:
            right = max(len(a["answer"]) for a in question["answers"] if a["correct"])
            longest_wrong = max(len(a["answer"]) for a in question["answers"] if not a["correct"])
            assert right <= 1.3 * longest_wrong, (notebook, question["question"])


def test_projected_options_carry_the_answer_keys_letters_unless_shuffled():
    """jupyterquiz lays options out in a grid, so "the second one" is ambiguous: each option is headed
    with the letter quiz_text's answer key gives it."""
    page, script = quiz.quiz_javascript_and_html("05")
    key = quiz.quiz_text("05", answers=True)
    for question in QUIZZES["05"]:
        for letter, option in zip("abcd", question["answers"], strict=False):
            assert f"{letter}) {option['answer']}" in script, option["answer"]
            assert f"{letter}) {quiz._plain(option['answer'])}" in key
    _, shuffled = quiz.quiz_javascript_and_html("05", shuffle_answers=True)
    first = QUIZZES["05"][0]["answers"][0]["answer"]
    assert f"a) {first}" not in shuffled and first in shuffled


def test_code_in_an_option_keeps_a_light_box_in_dark_themes():
    """JupyterLab Dark's rule for code in an output is more specific than jupyterquiz's 'inherit' and
    painted dark text on a dark box inside the light option buttons (seen in a screenshot)."""
    page, _ = quiz.quiz_javascript_and_html("05")
    div_id = re.search(r'<div id="(\w+)"', page).group(1)
    assert f"#{div_id} .MCButton code {{background-color: rgba(0, 0, 0, 0.07) !important; " \
           "color: #1f1f1f !important;}" in page


def test_feedback_words_are_readable_on_a_dark_page():
    """The marks' green and red read 3.7:1 and 2.9:1 on JupyterLab Dark's page (#111, measured in a
    screenshot); on a dark theme's page the feedback words take colours of at least 7:1 there, while
    on the light page the marks' own colours stay (at least 4.5:1 on white)."""
    from _a11y import contrast

    def rgb(hex_colour):
        return "rgb({}, {}, {})".format(*(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)))

    page, _ = quiz.quiz_javascript_and_html("03")
    div_id = re.search(r'<div id="(\w+)"', page).group(1)
    for kind in ("correct", "incorrect"):
        rule = re.search(rf'body\[data-jp-theme-light="false"\] #{div_id} \.{kind} {{color: (#\w+);}}',
                         page)
        assert rule, f"no dark-page colour for .{kind}"
        assert contrast(rgb(rule.group(1)), rgb("#111111")) >= 7, (kind, rule.group(1))
        assert contrast(rgb(quiz._COLOURS[f"--jq-{kind}-color"]), rgb("#ffffff")) >= 4.5
