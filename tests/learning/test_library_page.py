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


def test_the_example_script_runs(capfd):
    import runpy
    runpy.run_path(str(PAGE.parents[1] / "examples" / "group_dp_fed_avg.py"),
                   run_name="__main__")
    assert "epsilon per group" in capfd.readouterr().out
