"""The README and docs/ stay true to the code: the README is the user's page (short, every link
and anchor resolving), and docs/ lists every id and every top-level JSON key the code produces.

Anchors are computed as GitHub renders them (lower case, punctuation other than ``-`` and ``_``
dropped, spaces to ``-``), which is the rule
https://github.com/gjtorikian/html-pipeline/blob/main/lib/html/pipeline/toc_filter.rb documents.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_magic.engines.check import FINDING_IDS
from cudnn_magic.engines.diagnose import CATALOGUE

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
MAX_README_LINES = 300

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    out: set[str] = set()
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            out.add(_anchor(line.lstrip("#")))
    return out


def _section(page: Path, title: str) -> str:
    text = page.read_text(encoding="utf-8")
    start = text.index(title)
    end = text.find("\n## ", start + len(title))
    return text[start:] if end < 0 else text[start:end]


def _ids_in_table(section: str) -> set[str]:
    return {i for row in section.splitlines() if row.startswith("| `")
            for i in re.findall(r"`([a-z][a-z0-9-]+)`", row.split("|")[1])}


def test_the_readme_is_a_page_a_user_reads():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move detail into docs/"
    text = "\n".join(lines)
    # the user's install and the two set-up commands come before the reference material
    assert text.index("## Install") < text.index("## Magics") < text.index("## Command line")
    assert "bash scripts/demo.sh" in text and "bash scripts/test.sh" in text
    for script in ("scripts/demo.sh", "scripts/test.sh"):
        assert (REPO / script).is_file()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_link_and_picture_resolves(page):
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)  # links in code blocks are not links
    for target in IMAGE.findall(text):
        assert (page.parent / target).is_file(), f"{page.name}: picture {target} is missing"
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: link {target} points at nothing"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest), f"{page.name}: link {target}: no heading with that anchor"


def test_the_ids_page_lists_every_finding_id():
    assert _ids_in_table(_section(DOCS / "ids.md", "## Finding ids")) == set(FINDING_IDS)


def test_the_ids_page_lists_every_diagnosis_id():
    assert _ids_in_table(_section(DOCS / "ids.md", "## Diagnosis ids")) == set(CATALOGUE)


def _documented_keys(contract: str) -> set[str]:
    return set(re.findall(r'"([a-z_]+)"', contract))


def test_the_json_page_names_every_top_level_key_of_check_and_explain():
    doc = (DOCS / "json.md").read_text(encoding="utf-8")
    check_item = doc[doc.index("- `cudnn-magic check --json`"):doc.index("- `cudnn-magic explain --json`")]
    explain_item = doc[doc.index("- `cudnn-magic explain --json`"):doc.index("- `cudnn-magic check --what-if")]
    env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": ""}
    run = subprocess.run([sys.executable, "-m", "cudnn_magic", "check", "--json"], capture_output=True,
                         text=True, timeout=120, env=env, cwd=REPO)
    keys = set(json.loads(run.stdout))
    assert keys <= _documented_keys(check_item), keys - _documented_keys(check_item)
    run = subprocess.run([sys.executable, "-m", "cudnn_magic", "explain", "--json", "-"], capture_output=True,
                         text=True, timeout=120, env=env, cwd=REPO,
                         input="Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n")
    data = json.loads(run.stdout)
    assert set(data) <= _documented_keys(explain_item)
    assert set(data["diagnoses"][0]) <= _documented_keys(explain_item)


# The repository stands on its own: nothing it ships or tests points at design notes kept outside it.
OUTSIDE = re.compile(r"\.\./shared|/work/(shared|main|wt-)|shared/(corpus|spec|research)|FACTS\.md|DESIGN\.md|STYLE\.md|"
                     r"spec/diagnoses|(?<!\w)research/|lab[ -]notes")
SHIPPED = ("cudnn_magic", "tests", "scripts", "benchmarks", "docs", "notebooks", "README.md", "pyproject.toml", ".ci")


def _tracked_text_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", *SHIPPED], capture_output=True, text=True, cwd=REPO).stdout.split()
    if not out:  # not a git checkout (an unpacked sdist): walk the same folders
        out = [str(p.relative_to(REPO)) for top in SHIPPED for p in (REPO / top).rglob("*") if p.is_file()]
    return [REPO / f for f in out if f.endswith((".py", ".c", ".md", ".sh", ".toml", ".ipynb", ".jsonl", "run"))]


def test_nothing_points_outside_the_repository():
    offenders = []
    for path in _tracked_text_files():
        if path == Path(__file__).resolve():
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()[:100]}")
    assert not offenders, "\n".join(offenders)


# Code, tests and docs say what they guard, never which ticket asked for it. Links to other projects'
# trackers (https://github.com/<owner>/<repo>/issues/N) are sources and stay; tests/fixtures/ holds
# upstream files byte for byte (PyTorch's own comments cite its issues).
TICKET = re.compile(r"\b[Ii]ssues? #?[0-9]|\([Ii]ssue\b")


def test_no_ticket_numbers_in_code_tests_or_docs():
    offenders = []
    for path in _tracked_text_files():
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith("tests/fixtures/") or path == Path(__file__).resolve():
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if TICKET.search(re.sub(r"https?://\S+", "", line)) and not re.search(r"\b(PyTorch|glibc|pip|CPython) issues? ", line):
                offenders.append(f"{rel}:{n}: {line.strip()[:100]}")
    assert not offenders, "\n".join(offenders)


def test_every_citation_of_the_facts_page_names_one_of_its_sections():
    headings = {h.lstrip("#").strip() for h in (DOCS / "facts.md").read_text(encoding="utf-8").splitlines()
                if h.startswith("## ")}
    cited = set()
    for path in _tracked_text_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        # a citation may wrap onto the next line, behind a comment marker
        text = re.sub(r'\n\s*(#|\*|//)?\s*', " ", text)
        cited |= {(path.name, c) for c in re.findall(r'docs/facts\.md,? "([^"]+)"', text)}
    assert cited, "no citation found: the check would prove nothing"
    unknown = sorted(f"{name}: {title}" for name, title in cited if title not in headings)
    assert not unknown, unknown
