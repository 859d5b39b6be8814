"""docs/architecture.md's "Adding a method", followed by a test (issue 78, items 2 and 4): a
method defined in one new module outside the package, registered through the
``tff_idp.methods`` entry-point group of its own (here a made-up) distribution, appears in
``--list`` and ``--help`` with its own config key (checked against its range) and runs on
both backends; a registration that is not a method is one line."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# the whole method: DP-FedAvg's plan and noise, the server taking half the aggregate's step,
# the clients as many local steps as the method's own config key says
PLUGIN = '''
from tff_idp.config_keys import ConfigKey
from tff_idp.key_ranges import AT_LEAST_ONE
from tff_idp.methods.base import Phase
from tff_idp.methods.gdpfed import DPFedAvg


class HalfStep(DPFedAvg):
    name = "dp_fedavg_halfstep"
    summary = "DP-FedAvg whose server takes half the noised mean's step (a plug-in test)"
    printed_name = "DP-FedAvg (half step)"
    config_keys = (ConfigKey("halfstep_local_steps", "int", 2, "dp_fedavg_halfstep: its "
                             "clients' local steps", range=AT_LEAST_ONE, limit=1000),)

    def phases(self, cfg):
        return [Phase("all", cfg.halfstep_local_steps, None)]

    @staticmethod
    def server_update(weights, aggregate, server_lr, masks):
        return [w + 0.5 * server_lr * u for w, u in zip(weights, aggregate)]


class CoreKey(HalfStep):              # a registration that redeclares a core key
    name = "core_key"
    config_keys = (ConfigKey("rounds", "int", 3, "taken"),)
'''


def _distribution(tmp_path: Path, entry: str) -> Path:
    """A folder holding the plug-in module and an installed distribution's metadata that
    registers ``entry`` in the tff_idp.methods group (what ``pip install`` of a package
    with ``[project.entry-points."tff_idp.methods"]`` leaves)."""
    site = tmp_path / "site"
    (site / "toy_methods-0.1.dist-info").mkdir(parents=True)
    (site / "toy_methods.py").write_text(PLUGIN)
    (site / "toy_methods-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: toy-methods\nVersion: 0.1\n")
    (site / "toy_methods-0.1.dist-info" / "entry_points.txt").write_text(
        f"[tff_idp.methods]\n{entry}\n")
    return site


def _run(args, site: Path, cwd: Path, timeout=900):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
    return subprocess.run([sys.executable, "-m", "tff_idp.run", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_a_registered_method_is_listed_documented_and_runs_on_both_backends(tmp_path):
    site = _distribution(tmp_path, "dp_fedavg_halfstep = toy_methods:HalfStep")
    listed = _run(["--list"], site, tmp_path, timeout=300)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "dp_fedavg_halfstep" in listed.stdout and "half the noised mean" in listed.stdout
    helped = _run(["--help"], site, tmp_path, timeout=300)
    assert "dp_fedavg_halfstep" in helped.stdout
    # its own config key joins the flat TOML: documented, checked against its range
    assert "halfstep_local_steps" in helped.stdout and "its clients' local steps" in \
        " ".join(helped.stdout.split())
    refused = _run(["--set", "halfstep_local_steps=0", "--set", 'output_dir="bad"'], site,
                   tmp_path, timeout=300)
    assert refused.returncode == 2 and refused.stderr.strip() == \
        "error: halfstep_local_steps=0: must be >= 1", refused.stderr[-2000:]
    assert not (tmp_path / "bad").exists()
    finals = {}
    for backend in ("fast", "tff"):
        args = ["--set", 'methods=["dp_fedavg_halfstep", "dp_fedavg"]', "--set", "rounds=2",
                "--set", "num_clients=40", "--set", "expected_rate=0.25", "--set",
                "local_steps=2", "--set", f'backend="{backend}"', "--set",
                f'output_dir="out-{backend}"', "--set", 'name="plugin"', "--quiet"]
        proc = _run(args, site, tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
        for method in ("dp_fedavg_halfstep", "dp_fedavg"):
            folder = tmp_path / f"out-{backend}" / "plugin" / f"{method}-seed0"
            summary = json.loads((folder / "summary.json").read_text())
            assert summary["privacy"]["within_budget"]
            assert summary["method"] == method
            finals[backend, method] = summary["final_test_loss"]
    # the plug-in's own server step changes the run (2.405 against DP-FedAvg's 2.472 here);
    # the two backends agree on it
    assert abs(finals["fast", "dp_fedavg_halfstep"] - finals["fast", "dp_fedavg"]) > 1e-3
    assert finals["fast", "dp_fedavg_halfstep"] == pytest.approx(
        finals["tff", "dp_fedavg_halfstep"], rel=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("entry,needle", [
    ("not_a_method = json:dumps", "is not a tff_idp.methods.Method"),
    ("other_name = toy_methods:HalfStep", "must be the entry point's"),
    ("dp_fedavg = toy_methods:HalfStep", "must be the entry point's"),
    ("broken = toy_methods:Missing", "AttributeError"),
    ("core_key = toy_methods:CoreKey", "config key 'rounds' of method 'core_key' is a core key"),
])
def test_a_bad_registration_stops_only_the_configs_that_name_it(tmp_path, entry, needle):
    """``--list`` still works and says what is wrong; a run naming it is refused in one
    line, exit 2, before any work; the suite's own methods still run."""
    site = _distribution(tmp_path, entry)
    listed = _run(["--list"], site, tmp_path, timeout=300)
    assert listed.returncode == 0, listed.stderr[-2000:]
    name = entry.split(" = ")[0]
    assert "broken, not run" in listed.stdout and needle in " ".join(listed.stdout.split())
    named = _run(["--set", f'methods=["{name}"]', "--set", 'output_dir="out"', "--set",
                  "rounds=1", "--quiet"], site, tmp_path, timeout=300)
    if name == "dp_fedavg":                    # the suite's own keeps its name
        assert named.returncode == 0, named.stderr[-2000:]
        return
    lines = [l for l in named.stderr.splitlines() if l.strip()]
    assert named.returncode == 2 and len(lines) == 1, named.stderr[-2000:]
    assert needle in lines[0] and "tff_idp.methods entry point" in lines[0]
    assert not (tmp_path / "out").exists()
