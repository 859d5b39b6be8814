"""A finished run whose files no longer vouch for it (issue 76): a config.json edited after
the run (its stored fingerprint still the unit's, its content another config's) or a
metrics.csv whose last accuracy is NaN is not counted complete by ``report`` and is trained
again by ``run``."""
import csv
import json

import pytest

from tff_idp import report, run
from tff_idp.harness.table import expand, load_table, unit_complete

from .conftest import tiny_table


def _edit_config(folder):
    path = folder / "config.json"
    made = json.loads(path.read_text())
    made["clip"] = made["clip"] * 2                 # another computation, same stamp
    path.write_text(json.dumps(made))


def _nan_accuracy(folder):
    path = folder / "metrics.csv"
    rows = list(csv.DictReader(open(path, newline="")))
    rows[-1]["test_accuracy"] = "nan"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


@pytest.mark.parametrize("damage", [_edit_config, _nan_accuracy])
def test_a_run_that_no_longer_vouches_for_itself_is_missing_and_retrained(tmp_path, capfd,
                                                                          damage):
    path = tiny_table(tmp_path, methods='["p_fedavg"]', seeds=1)
    assert run.main([str(path), "--scale", "smoke", "--no-report"]) == 0
    units = expand(load_table(str(path)), "smoke")
    assert all(unit_complete(u) for u in units)
    victim = units[0]
    damage(victim.folder)
    assert not unit_complete(victim)
    capfd.readouterr()
    report.main([str(path), "--scale", "smoke"])
    out = capfd.readouterr().out + capfd.readouterr().err
    assert f"{len(units) - 1} of {len(units)} runs complete" in out, out
    assert run.main([str(path), "--scale", "smoke", "--no-report"]) == 0
    assert unit_complete(victim)                     # trained again
