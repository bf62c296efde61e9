"""The explorers from the keyboard and for screen readers, in a real browser: Tab, focus rings, axe-core,
and the pictures they save. Used by tests/test_browser.py, on pages opened with tests/_lab.py.

* ``tab_stops``: walks an explorer with Tab alone and reports every stop: which control it is, its
  accessible name, and its focus ring (style, width, colour and the background behind it);
* ``ring_failures`` and ``unreached``: focus rings under 3:1 (WCAG 2.2's focus appearance) or under
  2 px, and the controls Tab never reached;
* ``axe``: axe-core (pinned in package.json, ``node_modules/axe-core``) on the explorers or on the rest
  of the page, WCAG 2.1 A and AA rules. JupyterLab's body is 0 px tall (its panels are positioned
  absolutely), and axe then skips its colour-contrast rule without a word; so ``html`` and ``body``
  get ``height: 100%`` while axe runs, and the caller checks that the rule really looked at nodes;
* ``save``: a panel's save button and formats, with the keyboard, each download read back;
* ``kernel_output``: runs a line of Python in the notebook's kernel (JupyterLab's public services API)
  and returns what it printed, to compare a download with the explorer's own numbers.
"""

from __future__ import annotations

import re
from pathlib import Path

from _lab import REPO, NotebookPage

AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
SERIOUS = ("serious", "critical")

# Where Tab is now: the control (data-attnviz-control, set by _lab.explorers), what it is, its name,
# and its focus ring against the first opaque background behind it. null once focus left the explorer.
_JS_STOP = r"""(index) => {
  const root = document.querySelector(`[data-attnviz-root="${index}"]`);
  const box = root.closest('.attnviz-explorer') || root.closest('.jp-OutputArea-output');
  const el = document.activeElement;
  if (!el || !box.contains(el)) return null;
  let under = el.parentElement, behind = 'rgb(255, 255, 255)';
  for (; under; under = under.parentElement) {
    const colour = getComputedStyle(under).backgroundColor;
    if (!/^rgba\(.*, 0\)$/.test(colour) && colour !== 'transparent') { behind = colour; break; }
  }
  const style = getComputedStyle(el);
  const control = el.closest('[data-attnviz-control]');
  const name = el.getAttribute('aria-label') || (el.labels && el.labels[0] && el.labels[0].textContent)
    || el.textContent || '';
  return {control: control ? control.dataset.attnvizControl : null, tag: el.tagName.toLowerCase(),
          role: el.getAttribute('role') || '', cls: String(el.className).slice(0, 60),
          name: name.trim().slice(0, 80), valuetext: el.getAttribute('aria-valuetext'),
          ring: {style: style.outlineStyle, width: parseFloat(style.outlineWidth), colour: style.outlineColor,
                 behind}, focusVisible: el.matches(':focus-visible')};
}"""

# The first element of the explorer that Tab stops at (in the page's order).
_JS_FIRST = r"""(index) => {
  const root = document.querySelector(`[data-attnviz-root="${index}"]`);
  const box = root.closest('.attnviz-explorer') || root.closest('.jp-OutputArea-output');
  const all = box.querySelectorAll('button, select, input, textarea, [tabindex], [contenteditable]');
  const first = Array.from(all).find(el => el.tabIndex >= 0 && !el.disabled && el.getClientRects().length);
  if (!first) return false;
  first.scrollIntoView({block: 'center'});
  first.focus();
  return true;
}"""

# The explorer's controls a learner can reach: shown (not display: none) and not disabled.
_JS_REACHABLE = r"""(index) => {
  const root = document.querySelector(`[data-attnviz-root="${index}"]`);
  const box = root.closest('.attnviz-explorer') || root.closest('.jp-OutputArea-output');
  return Array.from(box.querySelectorAll('[data-attnviz-control]'))
    .filter(el => el.getClientRects().length && !el.querySelector(':disabled') && !el.matches(':disabled'))
    .filter(el => !el.querySelector('[role="slider"][disabled]'))
    .map(el => el.dataset.attnvizControl);
}"""


def focus_first(page: NotebookPage, index: int) -> bool:
    """Focus the first stop of explorer ``index`` the way the keyboard does (False: it has none)."""
    if not page.page.evaluate(_JS_FIRST, index):
        return False
    page.page.keyboard.press("Tab")
    page.page.keyboard.press("Shift+Tab")
    return True


def tab_stops(page: NotebookPage, index: int, limit: int = 300) -> list[dict]:
    """Every stop of Tab through explorer ``index``, from its first to where focus leaves it.

    Focus starts on the explorer's first stop (as if it had been tabbed to from the cell above:
    Tab, then Shift+Tab, so the browser knows the keyboard brought it there); from then on only
    the Tab key moves it."""
    keys = page.page.keyboard
    if not focus_first(page, index):
        return []
    stops = []
    for _ in range(limit):
        stop = page.page.evaluate(_JS_STOP, index)
        if stop is None:
            break
        stops.append(stop)
        keys.press("Tab")
    return stops


def unreached(page: NotebookPage, index: int, stops: list[dict]) -> list[str]:
    """The explorer's shown, enabled controls that no Tab stop reached (their data-attnviz-control)."""
    reached = {stop["control"] for stop in stops}
    return [control for control in page.page.evaluate(_JS_REACHABLE, index) if control not in reached]


_JS_SLIDERS = r"""(index) => {
  const root = document.querySelector(`[data-attnviz-root="${index}"]`);
  const box = root.closest('.attnviz-explorer') || root.closest('.jp-OutputArea-output');
  const text = (el) => (el ? el.textContent.trim() : '');
  return Array.from(box.querySelectorAll('.widget-slider')).map(slider => {
    const handle = slider.querySelector('[role="slider"]');
    return {label: text(slider.querySelector('.widget-label')),
            readout: text(slider.querySelector('.widget-readout')),
            name: handle && handle.getAttribute('aria-label'),
            value: handle && handle.getAttribute('aria-valuetext')};
  });
}"""


_JS_SLIDERS_NAMED = r"""(index) => {
  const root = document.querySelector(`[data-attnviz-root="${index}"]`);
  const box = root.closest('.attnviz-explorer') || root.closest('.jp-OutputArea-output');
  const handles = Array.from(box.querySelectorAll('.widget-slider [role="slider"]'));
  return handles.every(handle => handle.getAttribute('aria-label'));
}"""


def sliders_named(page: NotebookPage, index: int, wait: float = 10.0) -> None:
    """Give explorer ``index`` up to ``wait`` seconds to name its slider handles. It names them as
    ipywidgets draws them, on ipywidgets' schedule (a fresh clone's run on a loaded machine read them, and
    ran axe, before the names came); a handle still unnamed after that fails the checks that follow."""
    try:
        page.page.wait_for_function(_JS_SLIDERS_NAMED, arg=index, timeout=wait * 1000, polling=100)
    except Exception:  # noqa: BLE001 - still unnamed: the checks that follow say which
        pass


def slider_failures(page: NotebookPage, index: int, where: str) -> list[str]:
    """Slider handles a screen reader would not name by their label, or whose value is not the readout's
    (after :func:`sliders_named`)."""
    sliders_named(page, index)
    failures = []
    for slider in page.page.evaluate(_JS_SLIDERS, index):
        if slider["name"] != slider["label"]:
            failures.append(f"{where}: the slider {slider['label']!r} is named {slider['name']!r}")
        if slider["value"] != slider["readout"]:
            failures.append(f"{where}: the slider {slider['label']!r} reads {slider['readout']!r} but a "
                            f"screen reader hears {slider['value']!r}")
    return failures


def channels(colour: str) -> tuple[float, float, float, float]:
    """'rgb(r, g, b)' or 'rgba(r, g, b, a)' -> (r, g, b, a)."""
    numbers = [float(x) for x in re.findall(r"[\d.]+", colour)]
    return (*numbers[:3], numbers[3] if len(numbers) > 3 else 1.0)


def luminance(colour: str) -> float:
    """WCAG 2's relative luminance of an opaque css colour."""
    r, g, b, _alpha = channels(colour)
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
              for c in (r / 255, g / 255, b / 255)]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    """WCAG 2's contrast ratio of two css colours (``a`` may be translucent: mixed onto ``b`` first)."""
    r, g, bl, alpha = channels(a)
    if alpha < 1:
        under = channels(b)
        r, g, bl = (alpha * x + (1 - alpha) * y for x, y in zip((r, g, bl), under[:3], strict=True))
    x, y = luminance(f"rgb({r}, {g}, {bl})"), luminance(b)
    return (max(x, y) + 0.05) / (min(x, y) + 0.05)


def ring_failures(stops: list[dict], where: str) -> list[str]:
    """Stops whose focus ring is missing, thinner than 2 px, or under 3:1 against what is behind it."""
    failures = []
    for stop in stops:
        ring = stop["ring"]
        what = f"{where}: the {stop['tag']} {stop['name']!r} ({stop['cls']})"
        if ring["style"] in ("none", "hidden") or ring["width"] < 2:
            failures.append(f"{what} has no 2 px focus ring ({ring['style']} {ring['width']} px)")
        elif (ratio := contrast(ring["colour"], ring["behind"])) < 3:
            failures.append(f"{what}: focus ring {ring['colour']} on {ring['behind']} is {ratio:.2f}:1, "
                            "under 3:1")
    return failures


_JS_AXE = r"""async ([include, exclude, tags]) => {
  const html = document.documentElement, body = document.body;
  const before = [html.style.height, body.style.height];
  html.style.height = '100%';      // else JupyterLab's body is 0 px tall and axe skips colour contrast
  body.style.height = '100%';
  const context = include ? {include: [include]} : {exclude: [exclude]};
  let result;
  try {
    result = await axe.run(context, {runOnly: {type: 'tag', values: tags},
                                     resultTypes: ['violations', 'incomplete', 'passes']});
  } finally {
    [html.style.height, body.style.height] = before;
  }
  const nodes = (rule) => rule.nodes.map(node => ({
    target: node.target.join(' '), html: node.html.slice(0, 160),
    why: (node.failureSummary || (node.any[0] || {}).message || '').slice(0, 240),
    data: (node.any[0] || {}).data || null}));
  const rules = (list) => list.map(rule => ({id: rule.id, impact: rule.impact, help: rule.help,
                                             nodes: nodes(rule)}));
  const contrast = (list) => (list.find(rule => rule.id === 'color-contrast') || {nodes: []}).nodes.length;
  const unsure = (result.incomplete.find(rule => rule.id === 'color-contrast') || {nodes: []}).nodes
    .map(node => {
      const el = document.querySelector(node.target[0]);
      let background = 'rgb(255, 255, 255)';    // the first opaque background behind the text
      for (let under = el; under; under = under.parentElement) {
        const colour = getComputedStyle(under).backgroundColor;
        if (!/^rgba\(.*, 0\)$/.test(colour) && colour !== 'transparent') { background = colour; break; }
      }
      return {target: node.target.join(' '), why: ((node.any[0] || {}).message || '').slice(0, 160),
              colour: el && getComputedStyle(el).color, background};
    });
  return {violations: rules(result.violations), incomplete: rules(result.incomplete),
          contrast: {passes: contrast(result.passes), violations: contrast(result.violations),
                     incomplete: unsure}};
}"""


def axe(page: NotebookPage, include: str | None = None, exclude: str | None = None) -> dict:
    """axe-core's WCAG 2.1 A/AA results for the elements matching ``include`` (or all but ``exclude``).

    ``contrast``: how many nodes the colour-contrast rule passed and failed, and those it could not
    decide (``incomplete``, with their text and background colours so the caller can decide)."""
    if not page.page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.page.add_script_tag(path=str(AXE))
    return page.page.evaluate(_JS_AXE, [include, exclude, AXE_TAGS])


_JS_MARK_BOX = r"""(index) => {
  const root = document.querySelector(`[data-attnviz-root="${index}"]`);
  const box = root.closest('.attnviz-explorer') || root.closest('.jp-OutputArea-output');
  box.setAttribute('data-attnviz-axe', String(index));
  box.scrollIntoView({block: 'start'});
  return box.getBoundingClientRect().height;
}"""


def axe_explorer(page: NotebookPage, index: int) -> dict:
    """:func:`axe` on explorer ``index`` (its whole box: controls, pictures, text), all of it on screen:
    axe's colour-contrast rule skips what lies outside the window, so for a tall explorer the window
    is made taller while axe runs (then put back)."""
    viewport = page.page.viewport_size
    height = page.page.evaluate(_JS_MARK_BOX, index)
    if height + 150 > viewport["height"]:
        page.page.set_viewport_size({"width": viewport["width"], "height": int(height) + 250})
        page.page.wait_for_timeout(500)
        page.page.evaluate(_JS_MARK_BOX, index)
    page.page.wait_for_timeout(200)
    try:
        return axe(page, include=f'[data-attnviz-axe="{index}"]')
    finally:
        if page.page.viewport_size != viewport:
            page.page.set_viewport_size(viewport)
            page.page.wait_for_timeout(300)


def axe_failures(result: dict, where: str) -> list[str]:
    """Serious or critical violations, and a colour-contrast rule that looked at nothing."""
    failures = [f"{where}: axe {rule['impact']} {rule['id']} ({rule['help']}) on {len(rule['nodes'])} "
                f"node(s), e.g. {rule['nodes'][0]['target']}: {rule['nodes'][0]['why']}"
                for rule in result["violations"] if rule["impact"] in SERIOUS]
    measured = result["contrast"]
    if not measured["passes"] + measured["violations"] + len(measured["incomplete"]):
        failures.append(f"{where}: axe's colour-contrast rule looked at no node (was the page measurable?)")
    for node in result["contrast"]["incomplete"]:    # axe could not tell (a background image, an
        # element on top): the text's colour against the first opaque background behind it
        if node["colour"] and node["background"] and contrast(node["colour"], node["background"]) < 4.5:
            failures.append(f"{where}: {node['target']} text {node['colour']} on {node['background']} is "
                            f"{contrast(node['colour'], node['background']):.2f}:1 ({node['why']})")
    return failures


def png_size(data: bytes) -> tuple[int, int]:
    """A PNG's width and height in pixels, from its IHDR chunk (AssertionError if it is no PNG)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"not a PNG: {data[:16]!r}"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def save(page: NotebookPage, index: int, panel: str, keep: Path | None = None) -> dict[str, tuple]:
    """Save panel ``panel`` of explorer ``index`` in every format, with the keyboard alone: Enter on
    its save button, then Tab to each format and Enter. Returns format -> (file name, bytes); a copy
    of each file goes to ``keep`` when given. Each value: ``(file name, bytes)``."""
    root = page.page.locator(f'[data-attnviz-root="{index}"]')
    figure = root.locator(f'canvas[data-attnviz-panel="{panel}"]').locator("xpath=ancestor::figure[1]")
    button = figure.locator(".attnviz-save > button")
    button.scroll_into_view_if_needed()
    button.focus()
    keys = page.page.keyboard
    keys.press("Enter")
    assert button.get_attribute("aria-expanded") == "true", "Enter did not open the save formats"
    files = {}
    for _ in figure.locator(".attnviz-save-as button").all():
        keys.press("Tab")
        words = page.page.evaluate("() => document.activeElement.textContent")
        with page.page.expect_download(timeout=15_000) as info:
            keys.press("Enter")
        download = info.value
        data = Path(download.path()).read_bytes()
        files[words] = (download.suggested_filename, data)
        # A pause before the next format, as a person's next key press would come: with none, Chromium
        # let the second or third download of a run never start (3 runs of 3 here, no page error; its
        # guard against a page downloading many files); with 500 ms, every download came (3 of 3).
        page.page.wait_for_timeout(500)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / download.suggested_filename).write_bytes(data)
    button.focus()
    keys.press("Enter")                       # closed again
    return files


_JS_KERNEL = r"""async (code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = kernel.requestExecute({code, silent: false, store_history: false});
  let text = '';
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === 'stream') text += msg.content.text;
    if (msg.header.msg_type === 'error') text += `${msg.content.ename}: ${msg.content.evalue}`;
  };
  await future.done;
  return text;
}"""


def kernel_output(page: NotebookPage, code: str) -> str:
    """What ``code`` prints when run in the notebook's kernel (not stored in its history)."""
    return page.page.evaluate(_JS_KERNEL, code)
