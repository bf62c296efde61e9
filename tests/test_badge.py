"""The README's Binder badge can never be published dead.

* When the repository has a GitHub ``origin`` remote (https or ssh), the badge must launch that
  repository; the failure message gives the exact line to put in the README.
* Without a remote, or with one that is not on GitHub (a clone of a local folder, as CI's fresh
  clone is, has ``origin`` pointing at a filesystem path), the course is not published yet, and the
  ``OWNER/REPO`` placeholder is allowed.
* Either way the badge's ``urlpath`` opens a notebook that exists, and binder/ exists. The badge
  opens the learner's edition, ``student/``, which is not committed: binder/postBuild builds it
  from ``notebooks/``, so a ``student/`` target must exist in ``notebooks/`` and postBuild must
  build it.

Each case is tested on a temporary git repository.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BADGE = re.compile(r"\[!\[Launch on Binder\]\(https://mybinder\.org/badge_logo\.svg\)\]"
                   r"\((https://mybinder\.org/v2/gh/([^/\s]+)/([^/\s]+)/([^?\s)]+)(?:\?urlpath=([^)\s]*))?)\)")
GITHUB = re.compile(r"^(?:https?://(?:[^@/]+@)?github\.com/|git@github\.com:|ssh://git@github\.com/)"
                    r"([^/]+)/([^/]+?)(?:\.git)?/?$")
FIRST_NOTEBOOK = "student/00_start_here.ipynb"   # the learner's edition, built by binder/postBuild
BUILDS_LEARNERS_EDITION = "tools/make_student.py notebooks student"


def badge_line(owner: str, repo: str) -> str:
    return (f"[![Launch on Binder](https://mybinder.org/badge_logo.svg)]"
            f"(https://mybinder.org/v2/gh/{owner}/{repo}/HEAD?urlpath=lab/tree/{FIRST_NOTEBOOK})")


def github_remote(root: Path) -> tuple[str, str] | None:
    """(owner, repo) of ``origin`` when it is on GitHub; None without git, a remote, or when elsewhere."""
    if shutil.which("git") is None:
        return None
    done = subprocess.run(["git", "remote", "get-url", "origin"], cwd=root, capture_output=True, text=True)
    match = GITHUB.match(done.stdout.strip()) if done.returncode == 0 else None
    return (match.group(1), match.group(2)) if match else None


def badge_problems(root: Path) -> list[str]:
    """What is wrong with the README's Binder badge in the repository at ``root`` (empty: nothing)."""
    readme = (root / "README.md").read_text(encoding="utf-8")
    found = BADGE.findall(readme)
    remote = github_remote(root)
    fix = badge_line(*remote) if remote else badge_line("OWNER", "REPO")
    if len(found) != 1:
        return [f"README.md should have exactly one Binder badge, found {len(found)}. The line:\n{fix}"]
    _, owner, repo, ref, urlpath = found[0]
    problems = []
    if remote and (owner.lower(), repo.lower()) != (remote[0].lower(), remote[1].lower()):
        problems.append(
            f"README.md's Binder badge launches {owner}/{repo}, but this repository is published as "
            f"{remote[0]}/{remote[1]} (git remote get-url origin). Put this line in README.md:\n{fix}\n"
            f"(Binder builds from binder/ in that repository: binder/requirements.txt, binder/runtime.txt, "
            f"binder/postBuild.)")
    target = re.sub(r"^(?:lab/tree/|tree/)", "", urlpath or "")
    if target.startswith("student/"):         # built at image build time from the teacher's edition
        post_build = root / "binder" / "postBuild"
        if not post_build.is_file() or BUILDS_LEARNERS_EDITION not in post_build.read_text():
            problems.append(f"README.md's Binder badge opens {target}, but binder/postBuild does not build "
                            f"the learner's edition (it should run: python {BUILDS_LEARNERS_EDITION}).")
        target = "notebooks/" + target.removeprefix("student/")
    if not urlpath or not target.endswith(".ipynb") or not (root / target).is_file():
        problems.append(f"README.md's Binder badge opens urlpath={urlpath!r}, which is not a notebook in "
                        f"this repository; use urlpath=lab/tree/{FIRST_NOTEBOOK}:\n{fix}")
    if not (root / "binder").is_dir():
        problems.append("binder/ is missing: Binder would build without the course's pinned environment.")
    return problems


def test_the_readme_badge_is_not_dead():
    problems = badge_problems(ROOT)
    assert not problems, "\n\n".join(problems)


# ---- the check itself, on temporary repositories ---------------------------------------------

def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


def _repo(path: Path, badge: str, remote: str | None = None) -> Path:
    path.mkdir()
    (path / "README.md").write_text(f"# Course\n\n{badge}\n")
    (path / "notebooks").mkdir()
    (path / "notebooks" / "00_start_here.ipynb").write_text("{}")
    (path / "binder").mkdir()
    (path / "binder" / "requirements.txt").write_text("torch\n")
    (path / "binder" / "postBuild").write_text(f"python {BUILDS_LEARNERS_EDITION}\n")
    _git(path, "init", "-q")
    if remote:
        _git(path, "remote", "add", "origin", remote)
    return path


PLACEHOLDER = badge_line("OWNER", "REPO")

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.mark.parametrize("url, expected", [
    ("https://github.com/ada/attention-course.git", ("ada", "attention-course")),
    ("https://github.com/ada/attention-course", ("ada", "attention-course")),
    ("https://token@github.com/ada/attention-course/", ("ada", "attention-course")),
    ("git@github.com:ada/attention-course.git", ("ada", "attention-course")),
    ("ssh://git@github.com/ada/attention-course.git", ("ada", "attention-course")),
    ("/srv/git/attention-course", None),
    ("file:///srv/git/attention-course", None),
    ("https://gitlab.com/ada/attention-course.git", None),
])
def test_remote_urls(tmp_path, url, expected):
    assert github_remote(_repo(tmp_path / "r", PLACEHOLDER, url)) == expected


def test_no_remote_allows_the_placeholder(tmp_path):
    assert badge_problems(_repo(tmp_path / "r", PLACEHOLDER)) == []


def test_a_clone_of_a_local_folder_is_not_published(tmp_path):
    source = _repo(tmp_path / "source", PLACEHOLDER)
    _git(source, "add", "-A")
    _git(source, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "init")
    _git(tmp_path, "clone", "-q", str(source), "clone")
    clone = tmp_path / "clone"
    url = subprocess.run(["git", "remote", "get-url", "origin"], cwd=clone, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert Path(url) == source                       # CI's clone has an origin: a filesystem path
    assert badge_problems(clone) == []


@pytest.mark.parametrize("remote", ["https://github.com/ada/attention-course.git",
                                    "git@github.com:ada/attention-course.git"])
def test_a_github_remote_with_the_placeholder_fails_with_the_fix(tmp_path, remote):
    problems = badge_problems(_repo(tmp_path / "r", PLACEHOLDER, remote))
    assert len(problems) == 1
    assert badge_line("ada", "attention-course") in problems[0]
    assert "OWNER/REPO" in problems[0] and "ada/attention-course" in problems[0]


def test_a_matching_badge_passes(tmp_path):
    repo = _repo(tmp_path / "r", badge_line("Ada", "Attention-Course"),
                 "git@github.com:ada/attention-course.git")
    assert badge_problems(repo) == []


def test_a_badge_for_another_repository_fails(tmp_path):
    repo = _repo(tmp_path / "r", badge_line("bob", "fork"), "https://github.com/ada/attention-course")
    assert "launches bob/fork" in badge_problems(repo)[0]


def test_a_badge_opening_a_missing_notebook_fails(tmp_path):
    badge = PLACEHOLDER.replace("00_start_here", "00_gone")
    problems = badge_problems(_repo(tmp_path / "r", badge))
    assert len(problems) == 1 and "00_gone" in problems[0] and PLACEHOLDER in problems[0]


def test_a_badge_opening_the_learners_edition_needs_postbuild_to_build_it(tmp_path):
    repo = _repo(tmp_path / "r", PLACEHOLDER)
    (repo / "binder" / "postBuild").write_text("echo nothing\n")
    problems = badge_problems(repo)
    assert len(problems) == 1 and "does not build the learner's edition" in problems[0]


def test_no_badge_or_two_badges_fail(tmp_path):
    assert "found 0" in badge_problems(_repo(tmp_path / "a", "no badge"))[0]
    assert "found 2" in badge_problems(_repo(tmp_path / "b", PLACEHOLDER + "\n" + PLACEHOLDER))[0]
