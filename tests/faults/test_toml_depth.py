"""Every reader of TOML (tff_idp.toml_text): a file nested deeper than the parse can go is
one line, and no garbage collection runs while the parse is that deep (a collection there
runs other libraries' callbacks at the recursion limit, where they fail and print a
traceback: jax's once TFF is imported, seen once in the config fault matrix)."""
import gc
import tomllib

import pytest

from tff_idp import config, toml_text
from tff_idp.errors import ConfigError
from tff_idp.report import status

DEEP = "[" * 3000 + "1" + "]" * 3000


@pytest.fixture
def parse_collections(monkeypatch):
    """Counts the garbage collections that start inside ``tomllib.loads`` (wrapped to mark
    its calls), with collection as frequent as it can be (a threshold of 1)."""
    inside, started = [False], [0]
    parse = tomllib.loads

    def marked(text):
        inside[0] = True
        try:
            return parse(text)
        finally:
            inside[0] = False

    def callback(phase, info):
        if inside[0] and phase == "start":
            started[0] += 1

    monkeypatch.setattr(tomllib, "loads", marked)
    old = gc.get_threshold()
    gc.callbacks.append(callback)
    gc.set_threshold(1, 1, 1)
    try:
        yield started
    finally:
        gc.set_threshold(*old)
        gc.callbacks.remove(callback)


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_no_collection_runs_inside_a_deep_parse(tmp_path, parse_collections):
    started = parse_collections
    path = tmp_path / "deep.toml"
    path.write_text(f"rounds = {DEEP}\n")
    with pytest.raises(ConfigError, match=r"^config=.*nested too deeply"):
        config.read_toml(str(path))
    with pytest.raises(RecursionError):
        toml_text.loads(f"v = {DEEP}")
    assert toml_text.loads("a = [[1]]") == {"a": [[1]]}
    assert started[0] == 0 and gc.isenabled()


# the failure the readers avoid, reproduced: with jax imported (other tests import TFF) its
# callback fails at the limit and pytest reports it as unraisable
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_collections_do_run_inside_a_bare_deep_parse(parse_collections):
    """The check above can fail: tomllib alone, at the same threshold, collects inside the
    parse."""
    started = parse_collections
    with pytest.raises(RecursionError):
        tomllib.loads(f"v = {DEEP}")
    assert started[0] > 0


def test_a_deep_status_file_is_one_line(tmp_path):
    path = tmp_path / "status.toml"
    path.write_text(f"row = {DEEP}\n")
    with pytest.raises(ConfigError) as e:
        status.load_rows(path)
    assert "\n" not in str(e.value) and "nested too deeply" in str(e.value)
