"""scripts/cell_cost.py: a table cell's run under named variants of --set, alternated, its
own timings read from each run's summary, medians and ratios to the first variant."""
import argparse
import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "cell_cost.py"
spec = importlib.util.spec_from_file_location("cell_cost", SCRIPT)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)


def test_a_variant_is_a_name_and_its_settings():
    assert mod.parse_variant("as configured:") == ("as configured", [])
    assert mod.parse_variant('lanes: fast_lanes=2; fast_noise_shares="summed"') == (
        "lanes", ["fast_lanes=2", 'fast_noise_shares="summed"'])
    for bad in ("no colon", ": fast_lanes=2", "x: fast_lanes"):
        with pytest.raises(argparse.ArgumentTypeError, match="--variant"):
            mod.parse_variant(bad)


def test_two_variants_of_a_small_run_are_timed_and_compared(tmp_path, capsys):
    config = tmp_path / "tiny.toml"
    config.write_text('name = "tiny"\nbackend = "fast"\nnum_clients = 40\n'
                      'methods = ["gdpfed"]\n')
    out = tmp_path / "cost.json"
    assert mod.main([str(config), "--method", "gdpfed", "--scale", "", "--rounds", "2",
                     "--repeats", "1", "--variant", "as configured:", "--variant",
                     'summed: fast_noise_shares="summed"', "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    assert list(got["medians"]) == ["as configured", "summed"]
    for name in got["medians"]:
        (run,) = got["runs"][name]
        assert run["backend_mode"] == "cohort" and 0 <= run["final_test_accuracy"] <= 1
        assert got["medians"][name]["seconds_wall"] == run["seconds_wall"] > 0
        assert got["ratios"][name]["seconds_wall"] == pytest.approx(
            run["seconds_wall"] / got["runs"]["as configured"][0]["seconds_wall"])
    assert got["ratios"]["as configured"] == {k: 1.0 for k in mod.MEASURES}
    assert "x 'as configured'" in capsys.readouterr().out
    assert not list(Path(mod.ROOT / "results").glob("tiny*"))       # nothing under results/
