"""Methods with personal client state, on both backends.

FedRep-style (a personal head per client, a shared body clipped, noised and averaged): the
TFF backend (personal parts passed in and out of ``next`` CLIENTS-placed, in cohort order)
and the fast backend (stacked rows gathered and scattered per chunk) give the same model and
the same heads after 3 rounds, with noise off and on; clients never sampled keep their
initial head. A plug-in defined here runs through the loop untouched: the runners name no
method."""
import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from tff_idp import methods
from tff_idp.engine import client_data, loop

from .helpers import capture, experiment, run_captured

TOL = 1e-5
ROOT = Path(__file__).resolve().parents[2]


SETTINGS = ("rounds=3", "num_clients=40", "expected_rate=0.3", "local_steps=2",
            "personal_steps=3", "budgets=[2.0]", "group_ratios=[1.0]", 'model="digits_mlp"',
            "momentum=0.5", 'partition="classes"', "partition_param=3")


def _experiment(methods, extra=()):
    return experiment(methods, SETTINGS, extra)


_run = run_captured        # (runner and store, ledger, rows, summary) of one run


@pytest.mark.parametrize("noise", [False, True])
def test_fedrep_gives_the_same_model_and_heads_on_both_backends(noise, monkeypatch):
    exp = _experiment("dp_fedrep")
    if not noise:
        plan = exp.plans["dp_fedrep"]
        exp.plans["dp_fedrep"] = dataclasses.replace(plan, noise_stddevs=[0.0])
    tff, ledger, _, summary = _run(exp, "dp_fedrep", "tff", monkeypatch)
    fast, _, _, _ = _run(exp, "dp_fedrep", "fast", monkeypatch)
    for a, b in zip(tff["runner"].weights, fast["runner"].weights):
        np.testing.assert_allclose(a, b, atol=TOL)
    for a, b in zip(tff["store"].values, fast["store"].values):
        np.testing.assert_allclose(a, b, atol=TOL)
    w0 = loop.initial_weights(exp, loop.build_model_fn(exp))
    for run in (tff, fast):          # noise and updates touch the shared part only
        for i in run["store"].tensors:
            np.testing.assert_array_equal(run["runner"].weights[i], w0[i])
    never = ledger.participation == 0
    assert never.any() and (~never).any()
    for run in (tff, fast):
        for now, start in zip(run["store"].values, run["initial"]):
            np.testing.assert_array_equal(now[never], start[never])      # untouched heads
            assert not np.allclose(now[~never], start[~never])           # trained heads
    assert summary.personal["split"] == "head"
    assert summary.headline_metric == "personal_test_accuracy"


def test_the_tff_backend_returns_personal_parts_in_cohort_order():
    """Distinct values per client; a phase that trains the shared part only must hand every
    client's personal part back exactly, in the order the clients were given."""
    exp = _experiment("fedrep")
    model = loop.build_model_fn(exp)()
    spec = loop.round_spec(exp, "fedrep", model)
    spec = dataclasses.replace(spec, program=dataclasses.replace(
        spec.program, phases=[methods.Phase("shared", 2)]))
    runner, spec, w0 = loop.make_runner(exp, "fedrep", "tff", spec)
    program = spec.program
    clients = [7, 2, 31, 0, 19]
    batches = [[client_data.client_examples(exp, c, 0, program.phases[0]) for c in clients]]
    infos = [dict(group=np.ones(1, np.float32), seed=np.array([0, c], np.int32),
                  slot=np.int32(-1)) for c in clients]
    rows = [np.stack([np.full(w0[i].shape, 10.0 * c + i, np.float32) for c in clients])
            for i in program.personal]
    _, kept = runner.step(batches, infos, 0, rows)
    assert len(kept) == len(rows) == 2
    for a, b in zip(kept, rows):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(runner.weights[0], w0[0])     # the shared part did train


def test_an_empty_cohort_leaves_model_and_heads_as_they_are(monkeypatch):
    exp = _experiment("fedrep", ["expected_rate=0.02", "rounds=6"])
    seen, after = {}, []
    capture(monkeypatch, "fast", seen)
    rows, _, _ = loop.run_method(
        exp, "fedrep", progress=False, backend="fast",
        on_round=lambda row: after.append(seen["runner"].weights + seen["store"].snapshot()))
    sizes = [r["cohort"] for r in rows]
    assert 0 in sizes[1:] and any(sizes), sizes     # this seed has empty and busy rounds
    for prev, now, row in zip(after, after[1:], rows[1:]):
        if row["cohort"] == 0:
            for a, b in zip(prev, now):
                np.testing.assert_array_equal(a, b)
            assert np.isnan(row["train_loss"]) and row["cohort_per_group"] == "0"


class FedPer(methods.Method):
    """A plug-in the engine has never seen: a personal head trained with the body in one
    phase (FedPer, Arivazhagan et al. 2019), FedAvg's aggregation of the body."""
    name = "fedper_test"
    planner = staticmethod(methods.METHODS["p_fedavg"].planner)
    default_split = "head"

    def plan_kwargs(self, cfg):
        return {}


def test_a_new_plug_in_runs_on_both_backends_without_touching_them(monkeypatch):
    monkeypatch.setitem(methods.METHODS, "fedper_test", FedPer())
    exp = _experiment("fedper_test")
    tff, *_ = _run(exp, "fedper_test", "tff", monkeypatch)
    fast, _, rows, summary = _run(exp, "fedper_test", "fast", monkeypatch)
    for a, b in zip(tff["store"].values + tff["runner"].weights,
                    fast["store"].values + fast["runner"].weights):
        np.testing.assert_allclose(a, b, atol=TOL)
    assert summary.plan["rates"] == [0.3] and 0 <= rows[-1]["personal_test_accuracy"] <= 1


def test_the_engine_dispatches_on_no_method_name():
    pattern = re.compile(r"method ?==|\.method in |\"(p_fedavg|dp_fedavg|gdpfed\w*|idp_\w+|pfa|"
                         r"fedrep|dp_fedrep)\"")
    hits = [f"{p.name}:{i}" for p in (ROOT / "tff_idp" / "engine").glob("*.py")
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert hits == []
