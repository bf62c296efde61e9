"""What a keypress does to an ipywidgets slider in the browser, known by the sliders' public traits.

The look-ahead (:mod:`._ahead`) needs three facts about a slider: which attribute the browser
changes (``index`` for a selection slider, ``value`` otherwise), the values one or more arrow keys
away (:func:`neighbours`), and what the kernel's ``value`` becomes once a value the browser reports
arrives (:func:`kernel_value`, which checks it: a message from the browser is never trusted).
"""

from __future__ import annotations

import copy
import math

import ipywidgets as w


def _option_value(option):
    return option[1] if isinstance(option, tuple) and len(option) == 2 else option


def neighbours(control: w.Widget, at=None, offsets=(-1, 1)) -> tuple[str, list[tuple[object, object]]] | None:
    """``(attribute, [(browser value, kernel value), ...])`` one step either side of ``control``'s
    value (or of browser value ``at``; other ``offsets`` in steps, in that order, those past the
    slider's ends left out), or None when it is not a slider. The browser value is what the
    front-end's model holds after that many arrow keys; the kernel value is what ``control.value``
    will then be."""
    if isinstance(control, w.SelectionSlider):
        options, index = list(control.options), control.index if at is None else at
        if index is None:
            return None
        return "index", [(index + k, _option_value(options[index + k])) for k in offsets
                         if 0 <= index + k < len(options)]
    value = control.value if at is None else at
    if isinstance(control, w.FloatLogSlider):
        base, step, low, high = control.base, control.step, control.min, control.max
        if not (value > 0 and step > 0 and base > 1):
            return None
        exponent = math.log(value, base)
        grid = low + round((exponent - low) / step) * step            # the slider snaps to this grid
        exponents = [grid + k * step for k in offsets]
        values = [base ** e for e in exponents if low - 1e-9 <= e <= high + 1e-9]
        return "value", [(v, v) for v in values]
    if isinstance(control, (w.IntSlider, w.FloatSlider)):
        step = control.step
        if not step or step <= 0:
            return None
        values = [value + k * step for k in offsets]
        return "value", [(v, v) for v in values if control.min <= v <= control.max]
    return None


def browser_attribute(control: w.Widget) -> str:
    """The attribute of ``control`` that the browser changes: ``index`` where it has one."""
    step = neighbours(control)
    if step is not None:
        return step[0]
    return "index" if control.has_trait("index") else "value"


def position(control: w.Widget, value):
    """The browser's value (of the attribute :func:`neighbours` names) for kernel value ``value``."""
    if isinstance(control, w.SelectionSlider):
        values = [_option_value(option) for option in control.options]
        return values.index(value) if value in values else None
    return value


def kernel_value(control: w.Widget, browser_value):
    """What ``control.value`` becomes once the browser's ``browser_value`` (of the attribute
    :func:`neighbours` names) reaches the kernel; None if it is not a value this slider can take
    (a message from the browser is checked, never trusted)."""
    if isinstance(browser_value, bool) or not isinstance(browser_value, (int, float)):
        return None
    if isinstance(control, w.SelectionSlider):
        options = list(control.options)
        ok = isinstance(browser_value, int) and 0 <= browser_value < len(options)
        return _option_value(options[browser_value]) if ok else None
    if isinstance(control, w.IntSlider) and not isinstance(browser_value, int):
        return None
    if isinstance(control, (w.IntSlider, w.FloatSlider, w.FloatLogSlider)):
        if not math.isfinite(browser_value):
            return None
        if isinstance(control, w.FloatLogSlider) and not _on_log_grid(control, browser_value):
            return None                         # the browser's log slider only stops on its grid
        low, high = ((control.base ** control.min, control.base ** control.max)
                     if isinstance(control, w.FloatLogSlider) else (control.min, control.max))
        return browser_value if low - 1e-9 * abs(low) <= browser_value <= high + 1e-9 * abs(high) else None
    return None


def _on_log_grid(control: w.FloatLogSlider, value: float) -> bool:
    """Whether ``value`` is ``base ** (min + k * step)`` for a whole k (within rounding)."""
    if value <= 0 or control.step <= 0:
        return False
    steps = (math.log(value, control.base) - control.min) / control.step
    return abs(steps - round(steps)) < 1e-6


def without_echo(control: w.Widget, attr: str) -> None:
    """Stop the kernel echoing ``attr`` back to the browser each time the browser changes it.

    ipywidgets echoes every value a browser sends, for other browsers showing the same widget;
    the one that sent it already shows it. One slider step then costs one message less. (A second
    browser window on the same kernel would no longer see this slider move; its pictures still
    do.) ``echo_update`` is the trait metadata ipywidgets reads for this (``FileUpload`` uses it);
    the trait is copied, so other widgets of the class keep their echo.
    """
    trait = copy.copy(control.traits()[attr])
    trait.metadata = {**trait.metadata, "echo_update": False}
    control.add_traits(**{attr: trait})
