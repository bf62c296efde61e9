"""What a saved picture is called: the notebook, the explorer and its settings.

The browser saves an explorer's panels (``js/save.js``), but it knows neither the notebook nor the
settings a picture was computed for; every scene the kernel sends brings them, as ``file``:
``03_saturation_d_k-512``, to which the browser adds the panel's name and the format
(``_unscaled.png``, ``_unscaled_2x.png``). The settings named are those not at the default of the
explorer's own arguments (here temperature 1, mask "none" and seed 0 are), so the name stays short
and every update's message too (one keypress at n = 8 must stay under 10 kB: benchmarks/
browser_bytes.py). For the same reason a step the kernel prepared ahead (``_ahead``) does not carry
its name: for the round trip until the kernel's own scene of that setting arrives, a picture saved
keeps the name of the one before.

The notebook comes from ``JPY_SESSION_NAME``, the environment variable Jupyter's server gives a
kernel it starts for a notebook (ipykernel reads it for ``__session__``): the notebook's path when
the kernel started. A course notebook gives its number (``03``), any other its name; outside
Jupyter there is none.
"""

from __future__ import annotations

import inspect
import os
import re
from pathlib import PurePath

__all__ = ["file_stem", "named_settings", "notebook_prefix"]


def notebook_prefix() -> str:
    """``"03"`` for ``.../03_why_sqrt_dk.ipynb``, the file's stem for another notebook, else ``""``."""
    path = os.environ.get("JPY_SESSION_NAME", "")
    if not path:
        return ""
    stem = PurePath(path).stem
    number = re.match(r"(\d+)_", stem)
    return number.group(1) if number else stem


def _text(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def safe(words: str) -> str:
    """``words`` with the characters a file name should not hold dropped at the ends and every run
    of them inside turned into one ``-`` (a sign stays: ``-inf``, ``-1e9``)."""
    bad = r"[^\w.+-]+"
    return re.sub(bad, "-", re.sub(f"^{bad}|{bad}$", "", words))


def file_stem(kind: str, settings: dict, prefix: str | None = None) -> str:
    """The start of a saved picture's file name: notebook, explorer kind, then ``name-value`` per setting."""
    prefix = notebook_prefix() if prefix is None else prefix
    words = [safe(prefix), safe(kind)]
    words += [f"{safe(name)}-{safe(_text(value))}" for name, value in settings.items()]
    return "_".join(word for word in words if word)


def named_settings(explorer, values: dict) -> dict:
    """The settings that name ``explorer``'s saved pictures: those it is named by (its ``named_by``,
    else every control) that differ, in words, from the default of its class's argument of that name."""
    parameters = inspect.signature(type(explorer)).parameters
    defaults = {name: p.default for name, p in parameters.items() if p.default is not inspect.Parameter.empty}
    names = explorer.named_by if explorer.named_by is not None else list(values)
    return {name: values[name] for name in names
            if name not in defaults or _text(values[name]) != _text(defaults[name])}
