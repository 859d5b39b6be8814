"""Write docs/config.md, every config key with its default, doc, choices and range, from
tff_idp/config.py (tests/test_config_doc.py fails when the page differs):
python scripts/config_doc.py"""
from pathlib import Path

from tff_idp.config_doc import config_markdown

if __name__ == "__main__":
    page = Path(__file__).resolve().parents[1] / "docs" / "config.md"
    page.write_text(config_markdown())
    print(page)
