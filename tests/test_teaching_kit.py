"""The teacher's kit holds together: lesson pages, their exit tickets, fallbacks, measurements.

What is checked: every lesson page is linked from docs/teaching.md and has a minute-by-minute table
that adds up to 60 minutes and ends with a 5-minute exit ticket with answers; every explorer the
notebooks 01-08 show has a fallback picture, committed and linked; no page of the kit still
carries a placeholder ("being rebuilt", "to re-time"); every link and image in the kit
resolves; the cells benchmarks/lesson_times.py times exist; and every number the kit quotes as
machine time or memory appears in the benchmarks' output in docs/lessons/measurements.md.
"""

import html
import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
LESSONS = sorted((DOCS / "lessons").glob("lesson*.md"))
MEASURED = (DOCS / "lessons" / "measurements.md").read_text()
GUIDE = (DOCS / "teaching.md").read_text()
LINK = re.compile(r"\]\(([^)#\s]+)(?:#([^)\s]*))?\)")

sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tools"))
import lesson_times  # noqa: E402
import make_fallbacks  # noqa: E402

# explorer function in the notebooks -> its section in docs/fallback/index.md; a (notebook, explorer)
# key overrides it for a notebook whose explorer shows a model of its own
FALLBACK_OF = {"lookup_explorer": "lookup", "saturation_explorer": "saturation", "mask_explorer": "mask",
               "head_explorer": "heads", "kv_cache_explorer": "kv_cache",
               ("07_tiny_gpt", "head_explorer"): "induction_heads"}


def _anchor(heading: str) -> str:
    """GitHub's anchor for a markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_there_are_four_lessons_linked_from_the_guide_each_with_a_timing_plan():
    assert [p.name for p in LESSONS] == ["lesson1_01-03.md", "lesson2_04-05.md", "lesson3_06-07.md",
                                         "lesson4_08.md"]
    for page in LESSONS:
        assert f"](lessons/{page.name})" in GUIDE, f"docs/teaching.md does not link {page.name}"
    assert sorted(lesson_times.LESSONS) == [1, 2, 3, 4]
    for number, (_, notebooks) in lesson_times.LESSONS.items():
        page = LESSONS[number - 1].read_text()
        for stem in notebooks:
            assert f"`{stem}`" in page, f"lesson {number}'s page does not open {stem}, which its plan times"


PLACEHOLDERS = re.compile(r"being rebuilt|to be re-?timed|to re-?time|to fill in|once 07 is rebuilt|"
                          r"after (its|the) rebuild", re.IGNORECASE)


@pytest.mark.parametrize("page", [*LESSONS, DOCS / "teaching.md", DOCS / "lessons" / "measurements.md",
                                  REPO / "benchmarks" / "lesson_times.py"], ids=lambda p: p.name)
def test_no_page_of_the_kit_keeps_a_placeholder(page):
    found = [m.group(0) for m in PLACEHOLDERS.finditer(page.read_text())]
    assert not found, f"{page.name} still says {found}"


@pytest.mark.parametrize("page", LESSONS, ids=lambda p: p.name)
def test_minute_plan_fills_sixty_minutes_and_ends_with_the_exit_ticket(page):
    rows = re.findall(r"^\| (\d+)–(\d+) \|(.*)$", page.read_text(), re.M)
    assert rows, f"{page.name} has no minute-by-minute table"
    spans = [(int(a), int(b)) for a, b, _ in rows]
    assert spans[0][0] == 0 and spans[-1][1] == 60, spans
    assert all(b == c for (_, b), (c, _) in zip(spans, spans[1:], strict=False)), f"gaps or overlaps: {spans}"
    assert spans[-1] == (55, 60) and "exit ticket" in rows[-1][2], "the last 5 minutes are the exit ticket"


@pytest.mark.parametrize("page", LESSONS, ids=lambda p: p.name)
def test_exit_ticket_has_questions_and_an_answer_for_each(page):
    text = page.read_text()
    assert "## Exit ticket (5 minutes)" in text
    ticket = text.split("## Exit ticket (5 minutes)", 1)[1]
    questions = re.findall(r"^(\d+)\. ", ticket, re.M)
    answers = ticket.split("**Answers.**", 1)
    assert len(answers) == 2, f"{page.name}: the exit ticket has no answers"
    assert len(questions) >= 3
    for number in questions:
        assert re.search(rf"\b{number}: ", answers[1]), f"{page.name}: no answer to question {number}"


KIT_PAGES = [*LESSONS, DOCS / "fallback" / "index.md", DOCS / "lessons" / "measurements.md"]


@pytest.mark.parametrize("page", KIT_PAGES, ids=lambda p: p.name)
def test_links_images_and_anchors_resolve(page):
    problems = []
    for target, anchor in LINK.findall(page.read_text()):
        if "://" in target:
            continue
        path = (page.parent / target).resolve()
        if not path.exists():
            problems.append(f"missing {target}")
        elif anchor and path.suffix == ".md":
            headings = [_anchor(h) for h in re.findall(r"^#+ (.*)$", path.read_text(), re.M)]
            if anchor not in headings:
                problems.append(f"{target}#{anchor}: no such heading")
    assert not problems, f"{page.name}: {problems}"


def test_guide_anchors_resolve():
    problems = []
    for target, anchor in LINK.findall(GUIDE):
        path = (DOCS / target).resolve()
        if anchor and path.suffix == ".md" and path.exists():
            headings = [_anchor(h) for h in re.findall(r"^#+ (.*)$", path.read_text(), re.M)]
            if anchor not in headings:
                problems.append(f"{target}#{anchor}")
    assert not problems, problems


def _texts_written(widget) -> list[str]:
    """Each piece of text the explorer's html widgets hold (tags taken out), whitespace collapsed."""
    import ipywidgets as w

    found, todo = [], [widget]
    while todo:
        node = todo.pop()
        todo += list(getattr(node, "children", ()))
        if isinstance(node, w.HTML):
            for piece in re.split(r"<[^>]+>", node.value):
                piece = " ".join(html.unescape(piece).split())
                if re.search(r"[A-Za-z0-9]", piece):
                    found.append(piece)
    return found


# the explorers whose fallbacks cost no training to build again (the head explorers show a model
# trained by notebooks 05 and 07: seconds of CPU each, left to make_fallbacks)
CHEAP_FALLBACKS = ("lookup", "saturation", "mask", "kv_cache")
_NUMBER = re.compile(r"-?\d[\d,]*(\.\d+)?(e[-+]?\d+)?")


@pytest.mark.parametrize("name", CHEAP_FALLBACKS)
def test_fallback_pictures_show_what_the_explorer_writes_today(name):
    """docs/fallback/texts.json holds each picture's text as drawn; every piece of text the explorer
    writes at that setting today must be in it. A renamed label (score_std to 'softmax input std')
    fails here until `tools/make_fallbacks.py` draws the pictures again (a teacher found them stale)."""
    texts = json.loads((DOCS / "fallback" / "texts.json").read_text())
    _, setup, pictures = make_fallbacks.SETTINGS[name]
    for stem, code, _ in pictures:
        space: dict = {}
        exec(setup, space)                                         # noqa: S102 - the script's own code
        *lines, last = code.splitlines()
        exec("\n".join(lines), space)                             # noqa: S102
        explorer = eval(last, space)                               # noqa: S307
        assert explorer.metrics is not None                        # computed now, as a view would
        # the words, not the numbers: the browser's slider snaps (temperature 0.5 shows 0.501)
        shown = _NUMBER.sub("#", texts[stem])
        missing = [piece for piece in _texts_written(explorer.widget) if _NUMBER.sub("#", piece) not in shown]
        assert not missing, (f"{stem}.png shows an older explorer: {missing[:4]} are not in it. "
                             "Run .venv/bin/python tools/make_fallbacks.py")


def test_every_explorer_in_01_to_08_has_committed_fallback_pictures():
    used = {}                                                   # fallback section -> notebook
    for path in sorted((REPO / "notebooks").glob("0[1-8]_*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                for explorer in re.findall(r"\b(\w+_explorer)\(", "".join(cell["source"])):
                    name = FALLBACK_OF.get((path.stem, explorer), FALLBACK_OF.get(explorer))
                    assert name, f"{path.name}: {explorer} has no fallback section"
                    used.setdefault(name, path.stem)
    assert "induction_heads" in used, "07's head explorer was not found"
    index = (DOCS / "fallback" / "index.md").read_text()
    for name, notebook in used.items():
        # the pictures are drawn from the notebook that first shows the explorer (07's are 07's model)
        assert make_fallbacks.SETTINGS[name][0] == notebook, f"{name}: pictures of another notebook"
        stems = [stem for stem, _, _ in make_fallbacks.SETTINGS[name][2]]
        assert stems, name
        for stem in stems:
            assert (DOCS / "fallback" / f"{stem}.png").stat().st_size > 10_000, f"{stem}.png missing or empty"
            assert f"]({stem}.png)" in index, f"fallback/index.md does not show {stem}.png"
        link = f"](fallback/index.md#{_anchor(name + ' explorer')})"
        assert link in GUIDE, f"the guide does not link the {name} fallbacks"


def test_fallback_index_is_what_the_script_writes():
    assert (DOCS / "fallback" / "index.md").read_text() == make_fallbacks.index_page(DOCS / "fallback")


def test_lesson_timing_plans_name_existing_cells():
    assert lesson_times.check_plans() == []


def test_the_plan_checker_names_a_missing_cell():
    plans = {9: ("test", {"01_soft_lookup": [("cell-nope", "a cell that is not there")]})}
    assert lesson_times.check_plans(plans) == [
        "lesson 9: 01_soft_lookup.ipynb has no cell 'cell-nope' (a cell that is not there)"]


def test_the_plan_checker_names_an_explorer_row_at_a_cell_without_one():
    # 03's cell-023 checks PyTorch's docstring; the saturation explorer is drawn two cells later
    plans = {9: ("test", {"03_why_sqrt_dk": [("cell-023", "saturation explorer"),
                                              ("cell-025", "saturation explorer")]})}
    assert lesson_times.check_plans(plans) == [
        "lesson 9: 03_why_sqrt_dk.ipynb's cell-023 draws no explorer, but the plan times it as the "
        "saturation explorer"]


def _machine_numbers(text):
    """Numbers the kit quotes as measurements: in 'Machine time' paragraphs, the tables of
    notebooks, lessons and a real hub's class, and the sizing for 30 students."""
    quoted = []
    for paragraph in text.split("\n\n"):
        if paragraph.startswith(("**Machine time", "| 0", "| notebook |", "| lesson |",
                                 "| per student |", "For 30 students")) \
                or re.match(r"\| \d \(", paragraph):
            quoted += re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])|(?<=\| )\d{3}(?= \|)", paragraph)
    return quoted


@pytest.mark.parametrize("page", [*LESSONS, DOCS / "teaching.md"], ids=lambda p: p.name)
def test_every_quoted_measurement_is_in_the_benchmarks_output(page):
    quoted = _machine_numbers(page.read_text())
    if page.name == "teaching.md":
        assert len(quoted) >= 20, quoted        # the two hub tables
    else:
        assert quoted, f"{page.name} quotes no machine time"
    missing = [number for number in quoted
               if not re.search(rf"(?<![\d.]){re.escape(number)}(?![\d])", MEASURED)]
    assert not missing, f"{page.name} quotes numbers the benchmarks did not print: {missing}"


def test_hub_section_gives_the_measured_hub_numbers_and_their_source():
    section = GUIDE.split("### What a hub needs per student", 1)[1].split("\n### ", 1)[0]
    assert "Measured on a real JupyterHub" in section and "not measured yet" not in section
    assert "tests/test_hub.py" in section and "benchmarks/hub_sizing.py" in section
    assert "For 30 students" in section


def test_every_lesson_page_maps_its_cells_and_the_map_is_up_to_date():
    """JupyterLab shows no cell ids: each lesson page ends with where each of its ids sits (make docs)."""
    import cell_map

    assert cell_map.main(["--check"]) == 0, "a lesson page's cell map is out of date: run make docs"
    for page in LESSONS:
        part = page.read_text().split(cell_map.START)[1]
        ids = {cell_id for _, cell_id in cell_map.plan_cells(page)}
        assert ids and all(f"| `{cell_id}` |" in part for cell_id in ids), page.name
        assert "(not in the notebook)" not in part, page.name
        # Find matches a cell's source, case aside: each map's words lead to its cell and no other
        row = r"^\| `(cell-[\w-]+)` \| (\S+) \| .* \| (`.*`|\(its code is folded.*\)) \|$"
        rows = re.findall(row, part, re.M)
        assert len(rows) == len(cell_map.plan_cells(page)), page.name
        for cell_id, name, words in rows:
            path = REPO / "notebooks" / f"{name}.ipynb"
            if words == cell_map.FOLDED:        # Find would unfold its code: go by the contents
                cell = next(c for c in cell_map.learners_cells(path) if c["id"] == cell_id)
                assert cell["metadata"]["jupyter"]["source_hidden"], (page.name, cell_id)
                continue
            typed = words.strip("`").removesuffix("...").lower()
            # in the learner's edition (projected in class: a stub's solution is a cell of its own there,
            # and must not be found) and in the teacher's
            for edition, cells in (("learner's", cell_map.learners_cells(path)),
                                   ("teacher's", json.loads(path.read_text())["cells"])):
                found = [cell["id"] for cell in cells if typed in "".join(cell["source"]).lower()]
                assert found == [cell_id], (f"{page.name}: Find for {words!r} in the {edition} edition "
                                            f"lands on {found}, not {cell_id}")


def test_start_heres_cpu_range_covers_every_notebooks_measured_time():
    """00 says what Run All of each notebook costs: its range holds every run measurements.md prints."""
    start = json.loads((REPO / "notebooks" / "00_start_here.ipynb").read_text())["cells"]
    texts = ("".join(cell["source"]) for cell in start)
    said = next(text for text in texts if "of CPU time for each notebook" in text)
    low, high = map(float, re.search(r"took (\d+) to (\d+) s of CPU time for each notebook", said).groups())
    rows = re.findall(r"^(\d\d_\w+\.ipynb)\s+\d+\s+([\d.]+)\s+[\d.]+\s+(?:yes|no)$", MEASURED, re.M)
    assert len(rows) >= 18, rows                    # two runs of nine notebooks
    assert all(low <= float(cpu) <= high for _, cpu in rows), [(n, c) for n, c in rows
                                                               if not low <= float(c) <= high]
