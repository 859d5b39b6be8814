"""Conformance of the two backends: with the same cohort, seeds and data, one round of the
fast backend gives the TFF backend's global model (float32 tolerance 1e-5), with noise off and
with noise on (the noise is drawn from the same stateless seeds in both)."""
import dataclasses

import numpy as np
import pytest

from tff_idp.engine import backends, chunks, loop
from tff_idp.engine.backends import UnsupportedByBackend

from .helpers import experiment

TOL = 1e-5


SETTINGS = ("rounds=2", "num_clients=60", "expected_rate=0.3", "local_steps=3",
            "budgets=[1.0, 2.0, 4.0]", 'model="digits_mlp"', "momentum=0.5")


def _experiment(methods, extra=()):
    return experiment(methods, SETTINGS, extra)


def _run(exp, method, backend, mode=None):
    """(the runner's final weights, the rows of metrics.csv) of one run on one backend."""
    captured = {}
    real = loop.BACKENDS[backend]

    class Capture(real):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            captured["runner"] = self

    loop.BACKENDS[backend] = Capture
    try:
        rows, _, _ = loop.run_method(exp, method, progress=False, backend=backend)
    finally:
        loop.BACKENDS[backend] = real
    if mode is not None:
        assert captured["runner"].mode == mode
    if backend == "fast" and max(r["cohort"] for r in rows) < exp.cfg.fast_chunk_size:
        # cohorts in part chunks: traced once whatever their sizes (chunks.any_chunk_size), or,
        # where part chunks pad (pads_part_chunks), once per padded size, at no other size
        runner = captured["runner"]
        parts = [f.experimental_get_tracing_count() for f in runner._part_fns.values()]
        assert (runner._chunk_fn.experimental_get_tracing_count(), set(parts)) in (
            (1, set()), (0, {1}))
    return captured["runner"].weights, rows


def _final_weights(exp, method, backend, mode=None):
    return _run(exp, method, backend, mode)[0]


def _silence(exp, method):
    plan = exp.plans[method]
    exp.plans[method] = dataclasses.replace(plan, noise_stddevs=[0.0] * len(plan.noise_stddevs))


@pytest.mark.parametrize("method,noise,extra", [
    ("p_fedavg", False, ()), ("dp_fedavg", False, ()), ("gdpfed_plus", False, ()),
    ("gdpfed_plus", True, ()), ("idp_fedavg", True, ()), ("pfa", True, ()),
    # paper 004's local work: epochs over each client's own data (short last batch), Adam
    ("idp_fedavg", True, ("local_epochs=2", "client_optimizer=\"adam_keras\"", "local_lr=0.01",
                          "num_clients=70"))])   # 20 or 21 examples: 4 or 5 steps
def test_fast_backend_matches_tff_backend(method, noise, extra):
    """The same model, and the same clip in metrics.csv: IDP-FedAvg's adaptive clip round by
    round (seeded, noise on); the fixed clip of the others reported as no adaptive clip
    (NaN) on both backends (the TFF backend once reported the DP factory's fixed clip)."""
    exp = _experiment(method, extra)
    if not noise:
        _silence(exp, method)
    tff_w, tff_rows = _run(exp, method, "tff")
    fast_w, fast_rows = _run(exp, method, "fast")
    assert len({r["cohort"] for r in fast_rows}) == 2       # two chunk sizes, one trace
    for a, b in zip(tff_w, fast_w):
        np.testing.assert_allclose(a, b, atol=TOL)
    clips = [r["adaptive_clip"] for r in tff_rows]
    if method == "idp_fedavg":
        assert clips == pytest.approx([r["adaptive_clip"] for r in fast_rows], rel=1e-5)
        assert clips[0] != pytest.approx(0.1) and len(set(clips)) == len(clips) == 2
    else:
        assert all(np.isnan(r["adaptive_clip"]) for r in tff_rows + fast_rows), clips
    if method == "p_fedavg":          # a non-private run's clients' train loss, reported
        losses = [r["train_loss"] for r in tff_rows]
        assert np.all(np.isfinite(losses))
        assert losses == pytest.approx([r["train_loss"] for r in fast_rows], rel=1e-5)


@pytest.mark.parametrize("method,extra", [
    ("gdpfed_plus", ('noise_draw="group"',)),     # the server draws each group's noise
    # a convolutional model with its clients' weights side by side (grouped convolutions),
    # its Dense kernels per client (two noised rounds amplify the low-rank form's summation
    # order to 4.5e-5: tests/engine/test_low_rank.py holds that form to TFF over one)
    ("dp_fedavg", ('dataset="synthetic:fashion_mnist"', 'model="cnn2"', "num_clients=30",
                   "budgets=[2.0]", "group_ratios=[1.0]", 'fast_dense_updates="per_client"')),
    # Shakespeare's LSTM (two LSTM(256)) with its recurrence's gradient written out
    # (cohort_model._lstm_recurrence), 3 rounds, momentum 0.9 as in GDPFed's Table I (not
    # GDPFed+: its top-k of noised updates turns float32 differences into other coordinates)
    ("idp_fedavg", ('dataset="synthetic:shakespeare-leaf"', 'model="char_lstm"',
                     "num_clients=8", "expected_rate=0.5", "rounds=3", "local_steps=1",
                     "batch_size=4", "momentum=0.9")),
    # TFF's Shakespeare task: a target at every position, the dense layer at every step
    # (DP-FedAvg's noise at 8 clients saturates the LSTM: last-bit differences grow to 0.1)
    ("idp_fedavg", ('dataset="synthetic:shakespeare-leaf-positions"',
                    'model="char_lstm_torch"', "num_clients=8", "expected_rate=0.5",
                    "rounds=3", "local_steps=2", "batch_size=4", "momentum=0.9")),
])
def test_fast_backend_matches_tff_backend_noise_on(method, extra):
    exp = _experiment(method, extra)
    tff_w = _final_weights(exp, method, "tff")
    fast_w = _final_weights(exp, method, "fast", mode="cohort")
    for a, b in zip(tff_w, fast_w):
        np.testing.assert_allclose(a, b, atol=TOL)


@pytest.mark.parametrize("method,extra,library", [
    ("dp_fedavg", (), True), ("gdpfed_plus", (), True), ("idp_fedavg", (), True),
    ("idp_fedavg", ('client_optimizer="adam"',), True),      # the suite's Adam as TFF's
    ("pfa", (), True),                               # public rows: the slot in the data
    ("p_fedavg", (), True),                          # its train loss: a client-work metric
    ("dp_fedavg", ("simulation_diagnostics=true",), True),   # the same, as a sim_ column
    ("fedrep", (), False),                           # a personal part comes back to clients
    ("dp_fedrep", (), False),
])
def test_the_tff_backend_runs_the_librarys_process_for_fedavg_rounds(method, extra, library):
    """Issue 78 item 1: every method whose round is FedAvg's runs, on the TFF backend, the
    ``tff.learning`` LearningProcess that ``tff_idp.learning`` publishes (the tests above
    hold it to the fast backend); the methods with a personal part the suite's iterative
    process, from the same client round."""
    from tff_idp.runtime import import_tff
    tff = import_tff()
    exp = _experiment(method, extra)
    runner, _, _ = loop.make_runner(exp, method, "tff")
    assert runner.library is library
    assert isinstance(runner.process, tff.learning.templates.LearningProcess) is library


@pytest.mark.parametrize("method", ["gdpfed_plus", "pfa"])     # PFA: public rows, 0 or 1
def test_client_loop_mode_matches_tff_backend(method, monkeypatch):    # a client
    """A model CohortModel cannot batch is trained one client after another, same result."""
    monkeypatch.setattr(backends.CohortModel, "supports", staticmethod(lambda model: False))
    exp = _experiment(method, ("local_epochs=1", "num_clients=70"))
    tff_w = _final_weights(exp, method, "tff")
    fast_w = _final_weights(exp, method, "fast", mode="client-loop")
    for a, b in zip(tff_w, fast_w):
        np.testing.assert_allclose(a, b, atol=TOL)


def test_clipping_is_active_in_the_dp_case():
    exp = _experiment("dp_fedavg", ["clip=0.01", "simulation_diagnostics=true"])
    _silence(exp, "dp_fedavg")
    rows, _, _ = loop.run_method(exp, "dp_fedavg", progress=False, backend="fast")
    assert rows[0]["sim_clipped_fraction"] == pytest.approx(1.0)


def test_unsupported_methods_fail_clearly():
    exp = _experiment("idp_fedavg", ['adaptive_clipping="tff"'])
    with pytest.raises(UnsupportedByBackend, match="backend='tff'"):
        loop.run_method(exp, "idp_fedavg", progress=False, backend="fast")


def test_an_adaptive_plan_with_a_query_that_does_not_adapt_is_refused():
    """A plan that says its clip adapts (IDP-FedAvg) is not run with a query whose clip is
    fixed: the fast backend refuses it rather than training without the adaptation."""
    import dataclasses
    from tff_idp.methods.base import Aggregation, FactoryOptions, Method
    exp = _experiment("idp_fedavg", [])
    spec = loop.round_spec(exp, "idp_fedavg", loop.build_model_fn(exp, "idp_fedavg")())
    assert spec.plan.adaptive_clip and spec.aggregation.query.adaptive is not None
    fixed = Method._group_gaussian_query(spec.plan, exp.cfg, 0, FactoryOptions())
    assert fixed.adaptive is None
    with pytest.raises(UnsupportedByBackend, match="backend='tff'"):
        loop.make_runner(exp, "idp_fedavg", "fast", dataclasses.replace(
            spec, aggregation=Aggregation(fixed, lambda: None)))


def test_a_sequence_of_targets_is_one_example_whose_loss_is_its_positions_mean():
    """client_work.example_losses: [batch] (or [K, batch]) whatever the targets' shape, so
    an example's weight covers its whole sequence, and the mean over examples is the mean
    over every target."""
    import tensorflow as tf
    from tff_idp.algorithms.client_work import example_losses
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 4, 5, 7)).astype(np.float32)       # K, batch, positions, V
    labels = rng.integers(0, 7, (3, 4, 5)).astype(np.int8)
    every = tf.keras.losses.sparse_categorical_crossentropy(
        labels.astype(np.int32), logits, from_logits=True).numpy()
    np.testing.assert_allclose(example_losses(labels, logits, batch_dims=2), every.mean(-1),
                               rtol=1e-6)
    np.testing.assert_allclose(example_losses(labels[0], logits[0]), every[0].mean(-1),
                               rtol=1e-6)
    one = example_losses(labels[0, :, -1], logits[0, :, -1])           # one target each
    np.testing.assert_allclose(one, every[0, :, -1], rtol=1e-6)


def test_lanes_cover_a_chunk_in_order_and_none_trains_zero_rows():
    """chunks.lane_rows for every chunk of 1-13 clients in 1-5 lanes: every lane trains
    at least one row, the kept rows are the chunk's clients once each in order, and the
    lanes' sizes differ by at most one."""
    for lanes in range(1, 6):
        for k in range(1, 14):
            rows = [tuple(int(v) for v in r) for r in chunks.lane_rows(k, lanes)]
            assert len(rows) == lanes
            assert all(0 <= lo < hi <= k and 0 <= keep <= hi - lo for lo, hi, keep in rows)
            kept = [i for lo, _, keep in rows for i in range(lo, lo + keep)]
            assert kept == list(range(k))
            sizes = [keep for _, _, keep in rows]
            assert max(sizes) - min(sizes) <= 1
            assert min(sizes) > 0 or k < lanes


def test_fast_chunk_size_and_lanes_do_not_change_the_model():
    """`fast_chunk_size` and `fast_lanes` only place the clients (outside the run
    fingerprint; the Shakespeare cells run one chunk of 128 on a GPU, chunks of 8 in 2 lanes
    on a CPU): the LSTM's model after a round is the same, to float32 summation order, with
    every client in one chunk and with chunks of 5 in 4 lanes (the cohort of about 6 in
    chunks trained in turn, a chunk of 5 split 1 + 1 + 1 + 2: uneven lanes, and a part
    chunk of fewer than 4 has lanes with no client of their own; chunks without lanes were
    a case of their own until the suite outgrew 20 minutes)."""
    extra = ('dataset="synthetic:shakespeare-leaf-positions"', 'model="char_lstm_torch"',
             "num_clients=12", "expected_rate=0.5", "rounds=1", "local_steps=1",
             "batch_size=4", "momentum=0.9")
    one = _final_weights(_experiment("idp_fedavg", extra + ("fast_chunk_size=64",)),
                         "idp_fedavg", "fast", mode="cohort")
    placed = _final_weights(_experiment("idp_fedavg",
                                        extra + ("fast_chunk_size=5", "fast_lanes=4")),
                            "idp_fedavg", "fast", mode="cohort")
    for a, b in zip(one, placed):
        np.testing.assert_allclose(a, b, atol=TOL)
