"""tools/install.py refuses, in plain words, a .venv whose Python is older than the pinned packages need."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import install  # noqa: E402


def _fake_python(tmp_path, version):
    """An executable that answers the version question as a Python of ``version`` would."""
    fake = tmp_path / f"python{version.replace(' ', '.')}"
    fake.write_text(f"#!/bin/sh\necho {version}\n")
    fake.chmod(0o755)
    return str(fake)


def test_a_python_older_than_3_11_is_refused_with_what_to_do(tmp_path, capsys):
    old = _fake_python(tmp_path, "3 10")
    said = install.too_old(old)
    assert "needs Python 3.11 or newer" in said and "made with Python 3.10" in said and "delete .venv" in said
    assert install.main([old, "-r", "requirements.txt"]) == 1
    assert "needs Python 3.11" in capsys.readouterr().err


def test_this_python_and_newer_ones_pass(tmp_path):
    assert install.too_old(sys.executable) is None
    assert install.too_old(_fake_python(tmp_path, "3 13")) is None
