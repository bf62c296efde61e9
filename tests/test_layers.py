"""The package's layers (docs/ARCHITECTURE.md) hold: each module imports only what its layer may.

Read statically from the source (every import, including those inside functions), so a layer
break fails here even if no test happens to call the offending function.

    core    attnviz/*.py (core, mha, cost, diagnostics, counting, explore, gpt, ...)   torch only
    quiz    attnviz/quiz.py, quiz_bank.py      the quiz's display: jupyterquiz and IPython, lazily
    toys    attnviz/toys/                      core
    zoo     attnviz/zoo.py                     core
    check   attnviz/check/                     core and zoo
    figures attnviz/figures.py                 core, plotly, IPython.display (no ipywidgets, no anywidget)
    widgets attnviz/widgets/                   everything above, plus ipywidgets and anywidget
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "attnviz"
MODULES = sorted(PACKAGE.rglob("*.py"))

# what each layer may import from inside attnviz
MAY_USE = {
    "core": {"core"},
    "quiz": {"quiz"},
    "toys": {"core", "toys"},
    "zoo": {"core"},
    "check": {"core", "zoo", "check"},
    "figures": {"core", "figures"},
    "widgets": {"core", "toys", "figures", "widgets"},
}
# third-party packages a layer may import (torch, numpy and the standard library are open to all)
DISPLAY = {"plotly", "ipywidgets", "anywidget", "IPython", "jupyterquiz", "traitlets", "ipykernel"}
MAY_DISPLAY = {
    "core": set(), "toys": set(), "zoo": set(), "check": set(),
    "quiz": {"IPython", "jupyterquiz"},
    "figures": {"plotly", "IPython"},
    "widgets": DISPLAY,
}


def layer_of(parts: tuple) -> str:
    """Layer of a module named by its dotted parts inside attnviz, e.g. ('toys', 'heads')."""
    if not parts:
        return "core"                                   # attnviz/__init__.py
    head = parts[0]
    if head in ("toys", "check", "widgets"):
        return "figures" if parts[:2] == ("widgets", "figures") else head
    if head in ("zoo", "figures"):
        return head
    if head in ("quiz", "quiz_bank"):
        return "quiz"
    return "core"


def _module_parts(path: Path) -> tuple:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def imports_of(source: str, here: tuple, is_package: bool):
    """Yield ``("attnviz", parts)`` for imports of attnviz modules and ``("external", top)`` otherwise.

    ``here``: the importing module's dotted parts inside attnviz; ``is_package``: it is an __init__.py.
    """
    package = here if is_package else here[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top, *rest = alias.name.split(".")
                yield ("attnviz", tuple(rest)) if top == "attnviz" else ("external", top)
        elif isinstance(node, ast.ImportFrom):
            named = tuple(node.module.split(".")) if node.module else ()
            if node.level == 0:
                if named[0] != "attnviz":
                    yield "external", named[0]
                    continue
                base = named[1:]
            else:
                base = package[: len(package) - (node.level - 1)] + named
            if node.module is None:                     # from . import zoo
                for alias in node.names:
                    yield "attnviz", base + (alias.name,)
            else:
                yield "attnviz", base


def violations(source: str, here: tuple, is_package: bool = False) -> list[str]:
    """Every import in ``source`` that the layer of module ``here`` may not make, in words."""
    layer, found = layer_of(here), []
    for kind, target in imports_of(source, here, is_package):
        if kind == "external":
            if target in DISPLAY and target not in MAY_DISPLAY[layer]:
                allowed = sorted(k for k, v in MAY_DISPLAY.items() if target in v)
                found.append(f"layer {layer} imports {target}, which only {allowed} may import")
        elif layer_of(target) not in MAY_USE[layer]:
            found.append(f"layer {layer} imports attnviz.{'.'.join(target)} (layer {layer_of(target)}); "
                         f"it may use only {sorted(MAY_USE[layer])}")
    return found


def test_the_package_is_found():
    assert (PACKAGE / "core.py").exists() and len(MODULES) > 10


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_only_what_its_layer_may(path):
    found = violations(path.read_text(), _module_parts(path), path.name == "__init__.py")
    assert not found, f"{path.relative_to(PACKAGE)}: " + "; ".join(found)


def test_the_scanner_catches_a_break():
    """Relative, absolute and function-level imports are all seen, so the test above can fail."""
    toy = """
from ..core import causal_mask          # fine: toys use the core
from .. import zoo                      # not fine: toys do not use the zoo
def plot():
    import plotly.graph_objects as go   # not fine: toys draw nothing
    from attnviz.widgets import figures # not fine either
"""
    found = violations(toy, ("toys", "fake"))
    assert len(found) == 3, found
    assert any("attnviz.zoo" in f for f in found) and any("plotly" in f for f in found)
    assert violations("from . import _verdict\nfrom ..core import x", ("check", "fake")) == []
    assert violations("import ipywidgets", ("figures",)) != []
    assert violations("import plotly", ("figures",)) == []
