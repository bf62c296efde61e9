"""Write a stripped notebook from a list of (kind, source) cells.

Used by the course authors: ``cells = [("md", "# Title"), ("code", "x = 1")]``;
``write(path, cells)``. Cells may carry tags: ``("code", src, ["solution"])``.
"""

from __future__ import annotations

import sys
from textwrap import dedent

import nbformat


def write(path, cells):
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for entry in cells:
        kind, source = entry[0], dedent(entry[1]).strip("\n")
        tags = entry[2] if len(entry) > 2 else None
        cell = nbformat.v4.new_markdown_cell(source) if kind == "md" else nbformat.v4.new_code_cell(source)
        if tags:
            cell.metadata["tags"] = list(tags)
        nb.cells.append(cell)
    # deterministic cell ids, so JupyterLab does not mark a freshly opened notebook as modified
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index:03d}"
    nb.nbformat, nb.nbformat_minor = 4, 5
    nbformat.write(nb, path)


if __name__ == "__main__":
    sys.exit("import this module: from nbbuild import write")
