"""The package's layers hold as docs/ARCHITECTURE.md draws them: each module imports only what its layer may.

The layers, where they live and what each may import are the table "The layers of attnviz" in
docs/ARCHITECTURE.md; MAY_USE and MAY_DISPLAY below say the same, and a test holds the two to each
other. Imports are read statically from the source (every import, including those inside
functions), so a layer break fails here even if no test happens to call the offending function.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "attnviz"
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
MODULES = sorted(PACKAGE.rglob("*.py"))

# what each layer may import from inside attnviz
MAY_USE = {
    "math": {"math"},
    "toys": {"math", "toys"},
    "zoo": {"math"},
    "checkers": {"math", "zoo", "checkers"},
    "quiz": {"quiz"},
    "figures": {"math", "figures"},
    "explorers": {"math", "toys", "explorers"},
}
# allowed above while the work that removes it is under way, though docs/ARCHITECTURE.md forbids it
BEING_REMOVED = {"checkers": {"zoo"}}
# third-party packages a layer may import (torch, numpy and the standard library are open to all)
DISPLAY = {"plotly", "ipywidgets", "anywidget", "IPython", "jupyterquiz", "traitlets", "ipykernel"}
MAY_DISPLAY = {
    "math": set(), "toys": set(), "zoo": set(), "checkers": set(),
    "quiz": {"IPython", "jupyterquiz"},
    "figures": {"plotly", "IPython"},
    "explorers": {"ipywidgets", "anywidget", "traitlets"},
}
FOLDERS = {"toys": "toys", "check": "checkers", "widgets": "explorers"}
FILES = {"zoo": "zoo", "figures": "figures", "quiz": "quiz", "quiz_bank": "quiz"}


def layer_of(parts: tuple) -> str:
    """Layer of a module named by its dotted parts inside attnviz, e.g. ('toys', 'heads')."""
    if not parts:
        return "math"                                   # attnviz/__init__.py
    return FOLDERS.get(parts[0]) or FILES.get(parts[0]) or "math"


def _module_parts(path: Path) -> tuple:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def imports_of(source: str, here: tuple, is_package: bool):
    """Yield ``("attnviz", parts, names)`` for imports of attnviz modules and ``("external", top, ())``
    otherwise; ``names``: what a ``from ... import`` takes from the module.

    ``here``: the importing module's dotted parts inside attnviz; ``is_package``: it is an __init__.py.
    """
    package = here if is_package else here[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top, *rest = alias.name.split(".")
                yield ("attnviz", tuple(rest), ()) if top == "attnviz" else ("external", top, ())
        elif isinstance(node, ast.ImportFrom):
            named = tuple(node.module.split(".")) if node.module else ()
            if node.level == 0:
                if named[0] != "attnviz":
                    yield "external", named[0], ()
                    continue
                base = named[1:]
            else:
                base = package[: len(package) - (node.level - 1)] + named
            if node.module is None:                     # from . import zoo
                for alias in node.names:
                    yield "attnviz", base + (alias.name,), ()
            else:
                yield "attnviz", base, tuple(alias.name for alias in node.names)


def violations(source: str, here: tuple, is_package: bool = False) -> list[str]:
    """Every import in ``source`` that the layer of module ``here`` may not make, in words."""
    layer, found = layer_of(here), []
    for kind, target, _names in imports_of(source, here, is_package):
        if kind == "external":
            if target in DISPLAY and target not in MAY_DISPLAY[layer]:
                allowed = sorted(k for k, v in MAY_DISPLAY.items() if target in v)
                found.append(f"layer {layer} imports {target}, which only {allowed} may import")
        elif layer_of(target) not in MAY_USE[layer]:
            found.append(f"layer {layer} imports attnviz.{'.'.join(target)} (layer {layer_of(target)}); "
                         f"it may use only {sorted(MAY_USE[layer])}")
    return found


def private_imports(source: str, here: tuple, is_package: bool = False) -> list[str]:
    """Every ``from <attnviz module> import _name`` in ``source`` (a private module is fine: its
    public names are its package's to share; a private name is its own module's)."""
    return [f"imports {name} from attnviz.{'.'.join(target)}"
            for kind, target, names in imports_of(source, here, is_package) if kind == "attnviz"
            for name in names if name.startswith("_") and not name.startswith("__")]


# private names a module still imports while the work that removes it is under way (attnviz/check)
PRIVATE_BEING_REMOVED = {"check/decoding.py": {"imports _exception from attnviz.check._run"}}


def architecture_table() -> dict[str, dict]:
    """The layers table of docs/ARCHITECTURE.md: layer -> {"where", "layers", "libraries"}."""
    lines = ARCHITECTURE.read_text().splitlines()
    start = lines.index("| layer | where | what it is | may import |")
    table = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        layer, where, _what, may = (cell.strip() for cell in line.strip("|").split("|"))
        layers, _semicolon, libraries = may.partition(";")
        table[layer] = {"where": where,
                        "layers": set(re.findall(r"\b(" + "|".join(MAY_USE) + r")\b", layers)),
                        "libraries": set(re.findall(r"`([A-Za-z_]+)`", libraries))}
    return table


def test_the_package_is_found():
    assert (PACKAGE / "core.py").exists() and len(MODULES) > 10


def test_the_layers_are_those_the_architecture_page_draws():
    table = architecture_table()
    assert set(table) == set(MAY_USE)
    for layer, row in table.items():
        assert row["layers"] == MAY_USE[layer] - BEING_REMOVED.get(layer, set()), layer
        assert row["libraries"] == MAY_DISPLAY[layer], layer


def test_the_architecture_page_names_every_module_of_the_math_layer():
    listed = set(re.findall(r"`(\w+)`", architecture_table()["math"]["where"].split(":", 1)[1]))
    found = {path.stem for path in PACKAGE.glob("*.py")
             if path.stem != "__init__" and layer_of((path.stem,)) == "math"}
    assert listed == found


def test_the_architecture_page_says_where_each_other_layer_lives():
    table = architecture_table()
    for folder, layer in FOLDERS.items():
        assert f"`attnviz/{folder}/`" in table[layer]["where"], layer
    for file, layer in FILES.items():
        assert f"{file}.py`" in table[layer]["where"], layer


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_only_what_its_layer_may(path):
    found = violations(path.read_text(), _module_parts(path), path.name == "__init__.py")
    assert not found, f"{path.relative_to(PACKAGE)}: " + "; ".join(found)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_another_modules_private_name(path):
    name = str(path.relative_to(PACKAGE))
    found = set(private_imports(path.read_text(), _module_parts(path), path.name == "__init__.py"))
    assert not found - PRIVATE_BEING_REMOVED.get(name, set()), f"{name}: " + "; ".join(sorted(found))


def test_the_scanner_catches_a_break():
    """Relative, absolute and function-level imports are all seen, so the tests above can fail."""
    toy = """
from ..core import causal_mask          # fine: toys use the math
from .. import zoo                      # not fine: toys do not use the zoo
def plot():
    import plotly.graph_objects as go   # not fine: toys draw nothing
    from attnviz.widgets import canvas  # not fine either
"""
    found = violations(toy, ("toys", "fake"))
    assert len(found) == 3, found
    assert any("attnviz.zoo" in f for f in found) and any("plotly" in f for f in found)
    assert violations("from . import _verdict\nfrom ..core import x", ("check", "fake")) == []
    assert violations("import ipywidgets", ("figures",)) != []
    assert violations("import plotly", ("figures",)) == []
    assert violations("import plotly", ("widgets", "fake")) != []
    assert private_imports("from ..explore import _KEY_ANGLES_DEG, LOOKUP_WORDS", ("widgets", "x")) == [
        "imports _KEY_ANGLES_DEG from attnviz.explore"]
    assert private_imports("from . import _ahead\nfrom ._ahead import StepAhead", ("widgets", "x")) == []
