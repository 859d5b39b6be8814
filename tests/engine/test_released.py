"""What a private run sends from the clients (issue 56): the noised group sums and what
``tff_idp.privacy.threat_model.RELEASED`` lists, never a client's un-noised train loss,
pre-clip norm or clipping (``CLIENT_DIAGNOSTICS``), on both backends; the simulator measures
those only with ``simulation_diagnostics = true``, as ``sim_`` columns. Checked on the TFF
computation itself: every federated_sum / federated_mean of a CLIENTS value in its building
blocks."""
import numpy as np
import pytest

from tff_idp import experiment_config
from tff_idp.engine import loop
from tff_idp.engine.experiment import prepare

from .helpers import run_captured

SMALL = ["num_clients=60", "rounds=2", "expected_rate=0.2", "local_steps=2"]


def _from_clients(process):
    """(intrinsic, type) of every sum or mean over CLIENTS values in ``process.next``."""
    from tensorflow_federated.python.core.impl.compiler import building_blocks
    found = []

    def visit(comp):
        if isinstance(comp, building_blocks.Call) and isinstance(
                comp.function, building_blocks.Intrinsic) and comp.function.uri.startswith(
                ("federated_sum", "federated_mean", "federated_weighted_mean",
                 "federated_secure")):
            found.append((comp.function.uri, str(comp.argument.type_signature)))
        for child in comp.children():
            visit(child)
    visit(process.next.to_building_block())
    return found


def _runner(method, *sets):
    exp = prepare(experiment_config.load(None, [f'methods=["{method}"]', *SMALL, *sets]))
    return loop.make_runner(exp, method, backend="tff")[0]


@pytest.mark.parametrize("method,sets", [("dp_fedavg", []), ("gdpfed_plus", []),
                                         ("idp_fedavg", ['adaptive_clipping="ours"'])])
def test_a_private_round_sends_only_noised_sums(method, sets):
    sent = _from_clients(_runner(method, *sets).process)
    kinds = {uri for uri, _ in sent}
    assert kinds == {"federated_sum"}, sent            # no federated_mean: no train loss
    text = " ".join(t for _, t in sent)
    assert "norm=" not in text and "clipped=" not in text, sent
    # the group one-hot counts, the [M, ...] group sums, the extra slot; adaptive: the bit
    assert len(sent) == (4 if sets else 3), sent


def test_simulation_diagnostics_are_sent_only_when_asked():
    sent = _from_clients(_runner("dp_fedavg", "simulation_diagnostics=true").process)
    text = " ".join(t for _, t in sent)
    assert "norm=" in text and "clipped=" in text
    assert any(uri == "federated_mean" for uri, _ in sent)


@pytest.mark.parametrize("backend", ["tff", "fast"])
def test_the_rows_of_a_private_run_hold_no_client_statistic(backend, monkeypatch):
    exp = prepare(experiment_config.load(None, ['methods=["dp_fedavg"]', *SMALL]))
    _, _, rows, _ = run_captured(exp, "dp_fedavg", backend, monkeypatch)
    for name in ("train_loss", "clipped_fraction", "mean_update_norm"):
        assert all(name not in r and "sim_" + name not in r for r in rows)


def test_simulation_diagnostics_are_sim_columns_equal_on_both_backends(monkeypatch):
    exp = prepare(experiment_config.load(None, ['methods=["dp_fedavg"]', *SMALL,
                                     "simulation_diagnostics=true"]))
    rows = {b: run_captured(exp, "dp_fedavg", b, monkeypatch)[2] for b in ("tff", "fast")}
    for name in ("sim_train_loss", "sim_clipped_fraction", "sim_mean_update_norm"):
        np.testing.assert_allclose([r[name] for r in rows["tff"]],
                                   [r[name] for r in rows["fast"]], rtol=1e-5)
        assert "train_loss" not in rows["fast"][0]


def test_measuring_them_does_not_change_the_training(monkeypatch):
    """A diagnostic run (runs/gdpfed/ablations/fmnist-standardize-diagnostics-seed0.toml)
    trains as the run without it: the same accuracy and loss in every round."""
    rows = {}
    for sim in ("false", "true"):
        exp = prepare(experiment_config.load(None, ['methods=["dp_fedavg"]', *SMALL,
                                         f"simulation_diagnostics={sim}"]))
        rows[sim] = run_captured(exp, "dp_fedavg", "fast", monkeypatch)[2]
    for name in ("test_accuracy", "test_loss"):
        assert [r[name] for r in rows["false"]] == [r[name] for r in rows["true"]]
    assert "sim_mean_update_norm" in rows["true"][0]


def test_a_run_that_is_not_private_releases_them_under_plain_names(monkeypatch):
    exp = prepare(experiment_config.load(None, ['methods=["p_fedavg"]', *SMALL]))
    rows = run_captured(exp, "p_fedavg", "fast", monkeypatch)[2]
    assert np.isfinite(rows[0]["train_loss"]) and "sim_train_loss" not in rows[0]
