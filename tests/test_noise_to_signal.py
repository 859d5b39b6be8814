"""scripts/noise_to_signal.py: the per-round noise norm and the largest update norm of a
plan, against the formula worked by hand, and its table for Shakespeare's DP-FedAvg."""
import importlib.util
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "noise_to_signal.py"
spec = importlib.util.spec_from_file_location("noise_to_signal", SCRIPT)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)


def test_one_group_is_sigma_c_over_the_cohort_per_coordinate():
    plan = SimpleNamespace(weights=[1.0], noise_stddevs=[3.0 * 1.5], expected_cohorts=[120.0],
                           keep_fractions=[1.0], clips=[1.5])
    noise, signal = mod.noise_and_signal(plan, 10_000)
    assert noise == pytest.approx(3.0 * 1.5 / 120 * 100)
    assert signal == 1.5


def test_groups_add_their_weighted_variances_on_the_kept_coordinates():
    plan = SimpleNamespace(weights=[0.2, 0.8], noise_stddevs=[4.0, 1.0],
                           expected_cohorts=[10.0, 40.0], keep_fractions=[0.5, 1.0],
                           clips=[1.0, 2.0])
    noise, signal = mod.noise_and_signal(plan, 400)
    per_coordinate = (0.2 * 4.0 / 10) ** 2 * 0.5 + (0.8 * 1.0 / 40) ** 2
    assert noise == pytest.approx(math.sqrt(400 * per_coordinate))
    assert signal == pytest.approx(0.2 * 1.0 + 0.8 * 2.0)


def test_shakespeare_dp_fedavg_row(capsys):
    table = SCRIPT.parents[1] / "runs" / "gdpfed" / "ablations" / "shakespeare-table2-seed0.toml"
    assert mod.main([str(table)]) == 0
    rows = {line.split("|")[2].strip(): line.split("|")[3:-1]
            for line in capsys.readouterr().out.splitlines()[2:]}
    assert "p_fedavg" not in rows                       # not private: no row
    sigma, noise, signal, ratio = rows["dp_fedavg"]
    # Table 5's sigma^2 = 17.14 on the mean of q n = 0.1 * 712 clients, C = 1, 817,872 weights
    expected = math.sqrt(17.14) / 71.2 * math.sqrt(817_872)
    assert float(noise) == pytest.approx(expected, rel=0.01) and float(signal) == 1.0
    assert "17.14" in sigma and float(ratio) == pytest.approx(expected, abs=0.051)


def test_paper_004_table1_notes_quote_the_scripts_ratios(capsys):
    """The Table I report's notes (runs/idp_fedavg/fmnist-table1.toml) quote this script's
    ratios for SAMPLE and SCALE at each realistic distribution, and IDP-FedAvg's at its
    initial clip."""
    import tomllib
    table = SCRIPT.parents[1] / "runs" / "idp_fedavg" / "fmnist-table1.toml"
    assert mod.main([str(table)]) == 0
    rows = {tuple(c.strip() for c in line.split("|")[1:3]): line.split("|")[-2].strip()
            for line in capsys.readouterr().out.splitlines()[2:]}
    notes = " ".join(tomllib.loads(table.read_text())["table"]["notes"].split())
    for column in ("34-43-23", "54-37-9"):
        sample, scale = rows[(f"FMNIST / {column}", "idp_sample")], \
            rows[(f"FMNIST / {column}", "idp_scale")]
        own = rows[(f"FMNIST / {column}", "idp_fedavg (at the initial clip)")]
        assert f"{sample} (SAMPLE) and {scale} (SCALE) at {column}" in notes or \
            f"{sample} and {scale} at {column}" in notes
        assert f"{own} at {column}" in notes
