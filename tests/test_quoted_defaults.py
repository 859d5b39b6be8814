"""The digits numbers that README.md and docs/gdpfed.md quote are what the runs print today
(issue 59: no number without a source). Each config is run on the fast backend, which the
README says prints the TFF backend's table to the last digit; the test reads the accuracies
the run prints and looks for the sentences that quote them."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRINTED = re.compile(r"^(\w+): test accuracy (\d+\.\d\d)% after", re.M)


def _accuracies(tmp_path: Path, config: str, *sets: str) -> dict:
    """{method: "xx.xx"} as ``python -m tff_idp.run CONFIG --backend fast`` prints them."""
    args = [arg for s in sets for arg in ("--set", s)]
    out = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
    done = subprocess.run([sys.executable, "-m", "tff_idp.run", config, "--backend", "fast",
                           "--quiet", "--output-dir", str(out), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(PRINTED.findall(done.stdout + done.stderr))


def _text(path: str) -> str:
    return " ".join((ROOT / path).read_text().split())


@pytest.fixture(scope="module")
def default_runs(tmp_path_factory) -> tuple:
    tmp = tmp_path_factory.mktemp("default")
    return (_accuracies(tmp, "runs/digits/default.toml"),
            _accuracies(tmp, "runs/digits/default.toml", "seed=1"))


@pytest.mark.parametrize("doc", ["README.md", "docs/gdpfed.md"])
def test_the_defaults_table_quotes_both_seeds(default_runs, doc):
    seed0, seed1 = default_runs
    names = {"p_fedavg": "P-FedAvg", "dp_fedavg": "DP-FedAvg", "gdpfed": "GDPFed",
             "gdpfed_plus": "GDPFed+"}
    assert set(seed0) == set(names)
    text = _text(doc)
    for method, name in names.items():
        row = f"| {name} | {seed0[method]} ({seed1[method]}) |"
        assert row in text, f"{doc}: expected the row {row!r}"


def test_the_idp_and_pfa_baselines_paragraph_quotes_the_run(tmp_path):
    acc = _accuracies(tmp_path, "runs/digits/idp-baselines.toml")
    per_row = _accuracies(tmp_path, "runs/digits/idp-baselines.toml", 'methods=["pfa"]',
                          'pfa_accounting="per-row"')
    text = _text("docs/gdpfed.md")
    assert (f"DP-FedAvg {acc['dp_fedavg']}, IDP SAMPLE {acc['idp_sample']}, IDP SCALE "
            f"{acc['idp_scale']}, IDP-FedAvg with adaptive clipping (paper 004's form) "
            f"{acc['idp_fedavg']}, PFA {acc['pfa']}, GDPFed+ {acc['gdpfed_plus']}") in text
    assert f"PFA reaches {per_row['pfa']}." in text


def test_the_equal_groups_sentence_quotes_the_run(tmp_path):
    acc = _accuracies(tmp_path, "runs/digits/equal-groups.toml")
    assert (f"seed 0: DP-FedAvg {acc['dp_fedavg']}, GDPFed {acc['gdpfed']}, GDPFed-opc "
            f"{acc['gdpfed_opc']}, GDPFed+ {acc['gdpfed_plus']})") in _text("docs/gdpfed.md")
