"""Every relative link and anchor in the README, the CHANGELOG and docs/ resolves (issue 35): a
link names a file or folder of this repository, and an anchor a heading (GitHub's slugs) or an
`id` of the page it points into."""
import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *ROOT.glob("docs/**/*.md"),
                *ROOT.glob("python-client/**/*.md")])
# [text](target) and [text](target "title"); images too. Targets with a scheme are not ours.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)
FENCE = re.compile(r"^ {0,3}(```|~~~)")
HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$")
HTML_ID = re.compile(r"""<[a-z]+[^>]*\s(?:id|name)=["']([^"']+)["']""", re.IGNORECASE)


def _prose(page: Path, *, code_spans: bool = False) -> list[tuple[int, str]]:
    """The page's lines outside fenced code blocks, numbered; inline code spans blanked unless
    `code_spans` (a heading's slug keeps their text)."""
    lines, fenced = [], False
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line if code_spans else re.sub(r"`[^`]*`", "``", line)))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text lower-cased, markup and punctuation dropped
    (hyphens and underscores kept), spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    seen: Counter[str] = Counter()
    found = set()
    for _, line in _prose(page, code_spans=True):
        heading = HEADING.match(line)
        if heading:
            base = slug(heading.group(1))
            found.add(base if not seen[base] else f"{base}-{seen[base]}")
            seen[base] += 1
        found.update(HTML_ID.findall(line))
    return frozenset(found)


def links(page: Path) -> list[tuple[int, str]]:
    return [(number, target) for number, line in _prose(page)
            for target in LINK.findall(line) if not SCHEME.match(target)]


def broken(page: Path, target: str) -> str | None:
    path, _, anchor = target.partition("#")
    destination = (page.parent / path).resolve() if path else page
    if not destination.is_relative_to(ROOT):
        return "points outside the repository"
    if not destination.exists():
        return "no such file"
    if anchor and destination.suffix == ".md" and anchor not in anchors(destination):
        return f"no heading or id #{anchor} in {destination.relative_to(ROOT)}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    problems = [f"{page.relative_to(ROOT)}:{number}: {target}: {problem}"
                for number, target in links(page)
                if (problem := broken(page, target)) is not None]
    assert problems == []


def test_the_pages_have_relative_links_to_check():
    assert len(PAGES) > 20
    assert sum(len(links(page)) for page in PAGES) > 100


@pytest.mark.parametrize("heading, anchor", [
    ("Quick start", "quick-start"),
    ("`make test` and `PYTEST_ARGS`", "make-test-and-pytest_args"),
    ("Secure production setup", "secure-production-setup"),
    ("A bulk import is applied consumer by consumer (issue 34, goal 3, 2026-11-29)",
     "a-bulk-import-is-applied-consumer-by-consumer-issue-34-goal-3-2026-11-29"),
    ("[Unreleased]", "unreleased"),
    ("Blacklist (`BLACKLIST_FILTER`)", "blacklist-blacklist_filter"),
])
def test_anchors_are_github_slugs(heading, anchor):
    assert slug(heading) == anchor


def test_a_broken_link_and_a_broken_anchor_are_found():
    page = ROOT / "docs" / "index.md"
    assert broken(page, "no-such-page.md") == "no such file"
    assert broken(page, "operations.md#no-such-heading") is not None
    assert broken(page, "operations.md#upgrades") is None
    assert broken(page, "#every-page") is None
    assert broken(page, "../../outside.md") == "points outside the repository"
