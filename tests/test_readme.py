"""The README is the five-minute page: what the project is, the two commands, reading the first plan, and
where to go next. The rest lives in docs/ (tests/test_docs.py checks its links, keys, commands and claims;
tests/test_plan_summary.py checks the plan excerpt line by line against `make plan`'s output)."""

import re
from pathlib import Path

from components.model.config import key_paths

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = "\n".join(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))


def test_readme_shows_the_two_commands_and_the_first_plan():
    quickstart = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"^make plan\b", quickstart, flags=re.M) and re.search(r"^make test\b", quickstart, flags=re.M)
    assert "<!-- plan-excerpt:dev -->" in README.split("## Reading a plan", 1)[1]


def test_readme_stays_short_and_points_into_docs():
    # five minutes of reading: the reference material is in docs/
    assert len(README.splitlines()) <= 140
    assert "## Next steps" in README
    for page in ("configuration.md", "reading-a-plan.md", "changing.md", "operating.md", "real-engines.md", "development.md"):
        assert f"](docs/{page}" in README, page


def test_the_sections_the_tools_help_points_to_exist():
    # `python -m infra.offline plan --help` and `diff --help` name a page and a section for their JSON fields
    from infra.offline.__main__ import _JSON_DOCS

    for command in ("plan", "diff"):
        pointers = re.findall(r"([\w/.-]+\.md), '([^']+)'", " ".join(_JSON_DOCS[command].split()))
        assert pointers, command
        for page, section in pointers:
            assert re.search(rf"^#+ {re.escape(section)}$", (ROOT / page).read_text(), flags=re.M), (page, section)


def test_the_docs_show_the_commands_users_run():
    text = README + DOCS
    for cmd in ("make plan", "make test", "make diff", "make render", "make bench", "make e2e", "make toolchain",
                "pulumi preview --policy-pack policies", "python -m infra.offline render", "python -m infra.offline diff",
                "python -m tools.mutation", "python -m tools.bench", "python -m tools.docs"):
        assert cmd in text, cmd


def test_every_config_key_is_in_the_reference():
    reference = (ROOT / "docs" / "configuration.md").read_text()
    missing = [k for k in key_paths() if f"`{k}`" not in reference]
    assert missing == []
