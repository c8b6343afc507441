"""The documentation keeps up with the code: every setting the project reads is in the
settings reference, and the README, the front page, links every page of the site.
(`make docs` checks the rest: links, anchors and pages, with mkdocs --strict.)"""

from __future__ import annotations

import re

from jobs.conf import DEFAULTS
from tests.support.paths import ROOT

SETTINGS_PAGE = ROOT / "docs" / "settings.md"
# A setting this project reads from the environment: env.flag("DEBUG", …), env.text(…), …
READ_FROM_ENVIRONMENT = re.compile(r"\benv\.\w+\(\s*\"([A-Z][A-Z0-9_]*)\"")
# … and the engine's settings the environment may override: env.given("number", "JOBS_…", …)
GIVEN_BY_THE_ENVIRONMENT = re.compile(r"\benv\.given\(\s*\"\w+\",([^)]*)\)")


def documented_settings() -> set[str]:
    return set(re.findall(r"`([A-Z][A-Z0-9_]+)`", SETTINGS_PAGE.read_text()))


def test_settings_page__names_every_setting_read_from_the_environment():
    source = (ROOT / "config" / "settings.py").read_text()
    read = set(READ_FROM_ENVIRONMENT.findall(source))
    given = {
        name for names in GIVEN_BY_THE_ENVIRONMENT.findall(source) for name in re.findall(r"\"(\w+)\"", names)
    }
    assert len(read) > 50 and len(given) > 20  # the patterns still find them
    read |= given
    assert sorted(read - documented_settings()) == []


def test_settings_page__names_every_setting_of_the_engine():
    assert sorted(set(DEFAULTS) - documented_settings()) == []


def test_readme__links_every_page_of_the_site():
    nav = set(re.findall(r":\s*([\w./-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), flags=re.MULTILINE))
    assert "index.md" in nav
    linked = set(re.findall(r"\]\(docs/([\w./-]+\.md)(?:#[\w-]*)?\)", (ROOT / "README.md").read_text()))
    assert sorted(nav - linked) == []
