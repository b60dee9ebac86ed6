"""The release number has one place, the file VERSION, and the CHANGELOG describes that
release with what upgrading to it takes (issue 35; docs/decisions.md, "Releases, the version
and the licence")."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELEASE = re.compile(r"^## (\d+\.\d+\.\d+) - (\d{4}-\d{2}-\d{2})$", re.MULTILINE)


def version() -> str:
    return (ROOT / "VERSION").read_text().strip()


def releases() -> list[tuple[str, str]]:
    """(number, text) of each release section of the CHANGELOG, newest first."""
    text = (ROOT / "CHANGELOG.md").read_text()
    starts = list(RELEASE.finditer(text))
    ends = [match.start() for match in starts[1:]] + [len(text)]
    return [(match.group(1), text[match.end():end])
            for match, end in zip(starts, ends, strict=True)]


def test_the_version_file_holds_one_semantic_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+\n", (ROOT / "VERSION").read_text())


def test_the_changelog_opens_with_unreleased_then_the_version_of_the_version_file():
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## .*$", text, re.MULTILINE)
    assert headings[0] == "## Unreleased"
    assert RELEASE.fullmatch(headings[1]) and releases()[0][0] == version()


def test_every_release_says_what_upgrading_to_it_takes():
    for number, text in releases():
        upgrading = re.search(r"^### Upgrading\n(.*?)(?=^### |\Z)", text, re.MULTILINE | re.DOTALL)
        assert upgrading, f"{number} has no Upgrading section"
        assert "Migrations" in upgrading.group(1) and "Settings" in upgrading.group(1)


def test_the_client_package_reads_the_same_file():
    link = ROOT / "python-client" / "VERSION"
    assert link.is_symlink() and link.resolve() == (ROOT / "VERSION").resolve()


def test_the_licence_is_the_eclipse_public_license_2():
    licence = (ROOT / "LICENSE").read_text()
    assert licence.startswith("Eclipse Public License - v 2.0\n")
    assert "Exhibit A - Form of Secondary Licenses Notice" in licence
    assert 'license = "EPL-2.0"' in (ROOT / "python-client" / "pyproject.toml").read_text()
