"""MS-PAFL's computed figures (kind = "bounds"): every point is the closed form at the
config's settings, the report writes a CSV, a PNG and the total delta, and a bad [bounds]
section is a one-line error."""
from pathlib import Path

import pytest

from tff_idp.config import ConfigError
from tff_idp.harness import bounds
from tff_idp.harness.table import expand, load_table
from tff_idp.privacy import mspafl
from tff_idp.report import write_report

RUNS = Path(__file__).resolve().parents[2] / "runs" / "ms_pafl"


@pytest.mark.parametrize("name", ["figure3a", "figure3b", "figure4", "figure5", "figure6"])
def test_every_figure_config_loads_and_expands(name):
    spec = load_table(str(RUNS / f"{name}.toml"))
    assert spec.kind == "bounds" and spec.bounds is not None
    assert expand(spec, "paper")


def test_figure4_points_are_theorem4_on_corollary1():
    spec = load_table(str(RUNS / "figure4.toml"))
    rows = bounds.compute(spec.bounds, spec.cell_values("Adult", None))
    row = next(r for r in rows if r["curve"] == "p = 0.5" and r["rounds"] == 10)
    e = mspafl.round_epsilon(0.5, 65 / 325, 1.0, 100)
    d = mspafl.round_delta(0.5, 65 / 325, 1e-4, 100)
    assert (row["global_epsilon"], row["total_delta"]) == pytest.approx(
        mspafl.global_epsilon(e, d, 10, 1e-4))
    assert row["total_delta"] == pytest.approx(2.75e-4, rel=2e-3)


def test_figure5_compares_wr_wor_and_the_baseline():
    spec = load_table(str(RUNS / "figure5.toml"))
    rows = bounds.compute(spec.bounds, spec.cell_values("Adult", None))
    at100 = {r["curve"]: r["client_epsilon"] for r in rows if r["rounds"] == 100}
    assert at100["eps_i^T, WR"] / at100["eps_i^T, WOR"] == pytest.approx(0.963, abs=1e-3)
    assert at100["no amplification (baseline)"] == pytest.approx(0.49405 * 10, rel=1e-4)


def test_report_writes_csv_png_and_the_total_delta(tmp_path):
    spec = load_table(str(RUNS / "figure6.toml"))
    md = write_report(spec, "paper", tmp_path)
    text = md.read_text()
    assert "Total delta" in text and "b = 13 (q = 0.2), WR" in text   # the paper's symbols
    assert (tmp_path / "Adult" / "bounds.png").stat().st_size > 10_000
    assert (tmp_path / "Adult" / "bounds.csv").read_text().startswith("curve,rounds,")


@pytest.mark.parametrize("edit,needle", [
    (('quantity = "global_epsilon"', 'quantity = "lambda"'), "bounds.quantity='lambda'"),
    (('x = "rounds"', 'x = "seed"'), "bounds.x='seed'"),
    (("compare = [\"wr\"]", "compare = [\"pld\"]"), "bounds.compare='pld'"),
    (('kind = "bounds"', 'kind = "noise"'), "a [bounds] section goes with kind = 'bounds'"),
])
def test_bad_bounds_sections_are_one_line_errors(tmp_path, edit, needle):
    path = tmp_path / "t.toml"
    path.write_text((RUNS / "figure6.toml").read_text().replace(*edit))
    with pytest.raises(ConfigError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        load_table(str(path))
