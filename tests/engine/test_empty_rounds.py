"""Issue 33 item 3: every private round releases its noise, empty or not, on both backends
(an un-noised empty round leaks whether the target was sampled:
tests/privacy/test_gaussian_releases.py measures by how much)."""
import numpy as np
import pytest

from tff_idp.engine import loop

from .helpers import capture, experiment


SETTINGS = ("rounds=6", "num_clients=60", "local_steps=2", "test_examples=60")


def _experiment(methods, extra=()):
    return experiment(methods, SETTINGS, extra)


def _empty_round_delta(exp, method, backend):
    """The change of the global model in one round with no client at all."""
    runner, spec, w0 = loop.make_runner(exp, method, backend)
    runner.step([[] for _ in spec.program.phases], [], 0, [])
    return [a - b for a, b in zip(runner.weights, w0)]


@pytest.mark.parametrize("method", ["dp_fedavg", "gdpfed"])
def test_an_empty_round_releases_the_groups_noise_on_both_backends(method):
    """The server update of a round with an empty cohort is sum_m w_m N(0, s_m^2) / r_m per
    coordinate: its std over the model's coordinates matches, and both backends draw the
    same noise (same seeds)."""
    exp = _experiment(method)
    plan = exp.plans[method]
    s, r, w = (np.asarray(v) for v in (plan.noise_stddevs, plan.expected_cohorts, plan.weights))
    expected = np.sqrt(np.sum((w * s / r) ** 2))
    assert expected > 0
    deltas = {b: _empty_round_delta(exp, method, b) for b in ("fast", "tff")}
    flat = np.concatenate([d.ravel() for d in deltas["fast"]])
    assert flat.size > 500 and np.std(flat) == pytest.approx(expected, rel=0.1)
    assert abs(np.mean(flat)) < 4 * expected / np.sqrt(flat.size)
    for a, b in zip(deltas["fast"], deltas["tff"]):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_a_non_private_empty_round_keeps_the_model():
    for d in _empty_round_delta(_experiment("p_fedavg"), "p_fedavg", "fast"):
        np.testing.assert_array_equal(d, 0.0)


def test_runs_with_empty_rounds_and_empty_groups_agree_on_both_backends(monkeypatch):
    """GDPFed+ at a low rate: some rounds have an empty group or no client at all; the
    backends end on the same model, and an empty round moves the model by noise."""
    exp = _experiment("gdpfed_plus", ["expected_rate=0.03", "rounds=6",
                                      "simulation_diagnostics=true"])
    finals, rows = {}, {}
    for backend in ("fast", "tff"):
        seen, after = {}, []
        capture(monkeypatch, backend, seen)
        rows[backend], _, _ = loop.run_method(
            exp, "gdpfed_plus", progress=False, backend=backend,
            on_round=lambda r: after.append(seen["runner"].weights))
        finals[backend] = seen["runner"].weights
        if backend == "fast":
            groups = [r["cohort_per_group"].split("/") for r in rows[backend]]
            assert any("0" in g for g in groups)            # an empty group was released
            empty = [i for i, r in enumerate(rows[backend]) if r["cohort"] == 0]
            assert empty, [r["cohort"] for r in rows[backend]]
            i = empty[0]
            before = after[i - 1] if i else loop.initial_weights(exp, loop.build_model_fn(exp))
            assert any(np.any(a != b) for a, b in zip(before, after[i]))
            assert np.isnan(rows[backend][i]["sim_train_loss"])
    for a, b in zip(finals["fast"], finals["tff"]):
        np.testing.assert_allclose(a, b, atol=1e-5)
