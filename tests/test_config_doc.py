"""docs/config.md documents every config key, as the code declares it (issue 75, item 5:
the pages that pointed to it had no page to point to)."""
import dataclasses
from pathlib import Path

from tff_idp.experiment_config import ExperimentConfig
from tff_idp.config_doc import config_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_the_page_is_the_codes_and_names_every_key():
    page = (ROOT / "docs" / "config.md").read_text()
    assert page == config_markdown(), "run: python scripts/config_doc.py"
    for f in dataclasses.fields(ExperimentConfig):
        assert f"| `{f.name}` |" in page


def test_the_pages_that_point_to_it_find_it():
    for path in ("docs/library.md", "tff_idp/api.py", "tff_idp/learning/plan.py"):
        assert "docs/config.md" in (ROOT / path).read_text()
    assert (ROOT / "docs" / "config.md").is_file()
