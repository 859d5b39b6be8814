"""docs/library.md's code blocks run as written (issue 57: the library's snippets tested)."""
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "library.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_the_pages_code_runs(index, capfd):
    exec(compile(BLOCKS[index], f"docs/library.md block {index}", "exec"), {})
    assert capfd.readouterr().out.strip()
