"""Every document the code, tests and README refer to is in the repository.

References into the documentation are written ``docs/<page>.md §N.M``; a bare ``§N.M`` refers to the page named
last before it in the same file. Each must name an existing page and a heading of that page numbered N.M
(``## N.`` / ``### N.M ...``). No file may point at a specification outside the repository.
"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Written so that this file does not match itself.
FORBIDDEN = [re.compile(p) for p in (r"spec [a-z_0-9]*\.md", "CONTRACT" r"\.md", r"\.\./" "shared", r"\bdesign" r"\.md", "shared" "/spec")]
PAGE = re.compile(r"docs/((?:[a-z0-9_]+/)*[a-z0-9_]+\.md)")
SECTION = re.compile(r"§\s?(\d+[a-z]?(?:\.\d+)*)")
CITATION = re.compile(r"[\w.-]+/[\w.-]+:\s*$")
HEADING = re.compile(r"^#{1,6} (\d+[a-z]?(?:\.\d+)*)\.? ", re.M)


def _tracked():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (the installed package carries no docs)")
    # Tracked files and untracked ones git does not ignore (a new file not yet added is checked too); a virtual
    # environment made in the checkout is never ours, even under a name .gitignore does not list.
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split("\0")
    venvs = _venv_dirs(out)
    files = []
    for name in out:
        if not name or any(name.startswith(v) for v in venvs):
            continue
        path = ROOT / name
        if path.suffix in (".py", ".md", ".toml", ".yml", ".json", ".cfg", ".txt") and path.is_file() \
                and not name.startswith("docs/"):
            files.append(path)
        elif name == ".ci/run":
            files.append(path)
    return files


def _venv_dirs(names):
    """Folders (as "dir/" prefixes) of the listed files that hold a virtual environment (a pyvenv.cfg)."""
    return sorted({n[: -len("pyvenv.cfg")] for n in names if n.endswith("/pyvenv.cfg")})


def _sections(root, page, cache={}):
    """The section numbers of docs/<page> under ``root`` (None: no such page)."""
    key = (root, page)
    if key not in cache:
        path = root / "docs" / page
        cache[key] = set(HEADING.findall(path.read_text())) if path.is_file() else None
    return cache[key]


def _cited(text, pos):
    """A ``docs/...`` path inside a public-source citation (``owner/repo: docs/x.md``) is not one of ours."""
    line_start = text.rfind("\n", 0, pos) + 1
    return CITATION.search(text, line_start, pos) is not None


def _problems(path, root=ROOT):
    text = path.read_text(errors="replace")
    rel = path.relative_to(root)
    problems = []
    for pat in FORBIDDEN:
        for m in pat.finditer(text):
            problems.append(f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: points outside the repository: {m.group(0)!r}")
    events = sorted([(m.start(), "page", m.group(1)) for m in PAGE.finditer(text) if not _cited(text, m.start())]
                    + [(m.start(), "section", m.group(1)) for m in SECTION.finditer(text)])
    page = None
    for pos, kind, value in events:
        line = text.count("\n", 0, pos) + 1
        if kind == "page":
            page = value
            if _sections(root, page) is None:
                problems.append(f"{rel}:{line}: docs/{page} does not exist")
        elif page is None:
            problems.append(f"{rel}:{line}: §{value} names no page (write docs/<page>.md §{value})")
        elif _sections(root, page) is not None and value not in _sections(root, page):
            problems.append(f"{rel}:{line}: docs/{page} has no section {value}")
    return problems


def test_references_resolve():
    problems = [p for path in _tracked() if path != Path(__file__).resolve() for p in _problems(path)]
    assert not problems, f"{len(problems)} unresolved reference(s):\n" + "\n".join(problems[:60])


def test_checker_catches_what_it_should(tmp_path):
    (tmp_path / "docs" / "ops").mkdir(parents=True)
    (tmp_path / "docs" / "ops" / "x.md").write_text("# X\n\n## 1. One\n\n### 1.2 Two\n")
    good = tmp_path / "good.py"
    good.write_text("# docs/ops/x.md §1, §1.2\n# again §1.2\n")
    assert _problems(good, tmp_path) == []
    bad = tmp_path / "bad.py"
    bad.write_text("# §1 first\n# docs/ops/x.md §1.3\n# docs/ops/y.md\n# " + "spec" + " x.md §1\n")
    got = _problems(bad, tmp_path)
    assert len(got) == 4, got
    assert any("names no page" in p for p in got) and any("no section 1.3" in p for p in got)
    assert any("does not exist" in p for p in got) and any("outside the repository" in p for p in got)


def test_a_venv_in_the_checkout_is_not_scanned():
    """README's quick start makes .venv in the repository root: git ignores it, and a venv under another name
    (pyvenv.cfg in its folder) is skipped too, so third-party files never reach the checker."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    for name in (".venv/lib/python3.11/site-packages/pygments/lexers/qvt.py", "venv/bin/activate"):
        done = subprocess.run(["git", "check-ignore", "-q", "--no-index", name], cwd=ROOT)
        assert done.returncode == 0, f"{name} is not ignored by .gitignore"
    names = ["README.md", "myenv/pyvenv.cfg", "myenv/lib/x.py", "tests/a.py", "pyvenv.cfg"]
    assert _venv_dirs(names) == ["myenv/"]
