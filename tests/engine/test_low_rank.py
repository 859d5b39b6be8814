"""The fast backend's low-rank Dense updates (``tff_idp.engine.low_rank``, issue 79) are the
per-client computation in another summation order: a client's trained kernel, its update's
norm and a group's clipped sum from the factors match the materialised per-client
training (float32), with momentum, padded steps and a kernel on the raw inputs without
bias; a whole round matches the per-client path and the TFF backend with clipping, noise,
GDPFed+'s top-k and PFA's projection (its updates formed whole at the end); the path is
taken only where it is exact."""
import numpy as np
import pytest
import tensorflow as tf

from tff_idp import config
from tff_idp.algorithms.client_work import ALL, ClientTrainer, CohortData, PhaseBatches
from tff_idp.algorithms.round_parts import Phase, client_output, server_update
from tff_idp.algorithms.client_work import ClientProgram
from tff_idp.engine import low_rank
from tff_idp.engine.cohort_model import CohortModel
from tff_idp.models.split import split_model

from .test_backends import _experiment, _run, _silence

L = tf.keras.layers


def _conv_model():
    tf.keras.utils.set_random_seed(1)
    return tf.keras.Sequential([
        L.Input((6, 6, 1)), L.Conv2D(3, 3, activation="relu"), L.Flatten(),
        L.Dense(20, activation="relu"), L.Dense(4)])


def _sequence_model():
    """A Dense kernel on the raw inputs, at every position, without bias (its outputs
    depend on nothing the tape watches but through the factors)."""
    tf.keras.utils.set_random_seed(2)
    return tf.keras.Sequential([
        L.Input((3, 7)), L.Dense(9, use_bias=False, activation="tanh"), L.Flatten(),
        L.Dense(4)])


def _materialised(trainer, cm, weights, data, lr):
    k = data.xs.shape[0]
    start = [tf.repeat(w[None], k, axis=0) for w in weights]
    final, loss = trainer.train_cohort_phases(cm, start, [PhaseBatches(data, ALL)], lr)
    return [f - s for f, s in zip(final, start)], loss


@pytest.mark.parametrize("make,momentum,padded", [
    (_conv_model, 0.9, True), (_conv_model, 0.0, True), (_sequence_model, 0.5, True),
    # no padding weights (a phase of steps: the backend's case), every step real
    (_conv_model, 0.9, False)])
def test_factored_training_is_the_per_client_training(make, momentum, padded):
    model = make()
    cm = CohortModel(model)
    rng = np.random.default_rng(0)
    k, steps, batch = 5, 4, 3
    xs = tf.constant(rng.normal(size=(k, steps, batch) + model.input_shape[1:]), tf.float32)
    ys = tf.constant(rng.integers(0, 4, size=(k, steps, batch)))
    ws = np.ones((k, steps, batch), np.float32)
    ws[1, 2] = 0.0                 # a step of padding alone: no update, no momentum step
    ws[3, :, 1:] = 0.0             # short batches
    data = CohortData(xs, ys, tf.constant(ws) if padded else None)
    weights = [tf.constant(w) for w in model.get_weights()]
    trainer = ClientTrainer("sgd", momentum)
    program = ClientProgram([Phase("all", steps, None)], split_model(model, "none"),
                            client_output, server_update)
    kernels = [idx for _, idx in cm.dense_kernels()]
    lr = tf.constant(0.3)
    want, want_loss = tf.function(lambda: _materialised(trainer, cm, weights, data, lr))()
    got, factors, loss = tf.function(lambda: low_rank.train_factored(
        trainer, cm, program, weights, kernels, data[:3], lr, ALL))()
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5)
    for i, (w, g) in enumerate(zip(want, got)):
        if i in kernels:
            assert g.shape == (k,) and not np.any(g)       # a zero in the kernel's place
        else:
            np.testing.assert_allclose(g, w, atol=1e-6)
    for idx, f in zip(kernels, factors):
        delta = np.einsum("kri,kro->kio", f.xs.numpy(), f.ds.numpy())
        scale = np.abs(want[idx].numpy()).max()
        assert scale > 1e-3                                # the kernel did move
        np.testing.assert_allclose(delta, want[idx], atol=1e-6 * max(1.0, scale))
        np.testing.assert_allclose(f.sq_norms(), np.sum(want[idx].numpy() ** 2, axis=(1, 2)),
                                   rtol=1e-4)
        groups = tf.one_hot([0, 2, 0, 1, 2], 3)
        clip = tf.constant(rng.uniform(0.2, 1.0, k), tf.float32)
        np.testing.assert_allclose(
            f.group_sums(groups, clip),
            np.einsum("km,k,kio->mio", groups.numpy(), clip.numpy(), want[idx].numpy()),
            atol=1e-6 * max(1.0, scale))


def _factored_runner(method, mode, extra):
    exp = _experiment(method, extra + (f'fast_dense_updates="{mode}"',))
    weights, rows = _run(exp, method, "fast", mode="cohort")
    return exp, weights, rows


CNN = ('dataset="synthetic:fashion_mnist"', 'model="cnn2"', "num_clients=30", "rounds=1")


@pytest.mark.parametrize("method,extra", [
    # GDPFed+: three groups, top-k of the group sums, clipping active, momentum 0.9
    ("gdpfed_plus", ("momentum=0.9", "clip=0.05")),
    # IDP-FedAvg: adaptive clipping's bits from the factors' norms; chunks of 4, the first
    # full (a graph of known sizes) and a part chunk after it
    ("idp_fedavg", ("fast_chunk_size=4",)),
    # PFA: its server reads the public clients' updates, formed whole from the factors at
    # the end of local training (low_rank.materialised), and projects the private ones
    ("pfa", ("momentum=0.5",)),
])
def test_a_round_with_factored_kernels_is_the_per_client_round(method, extra):
    _, per_client, rows = _factored_runner(method, "per_client", CNN + extra)
    exp, factored, rows_lr = _factored_runner(method, "low_rank", CNN + extra)
    for a, b in zip(per_client, factored):
        np.testing.assert_allclose(a, b, atol=2e-6 * max(1.0, np.abs(a).max()))
    assert rows_lr[0]["test_accuracy"] == pytest.approx(rows[0]["test_accuracy"], abs=2e-3)


@pytest.mark.parametrize("mode", ["per_client", "low_rank"])
def test_lanes_with_no_client_of_their_own_do_not_change_a_cnn_round(mode):
    """Chunks of 3 clients in 4 lanes (a lane of none in every chunk; the cohort's last
    chunk may hold 1): the CNN's round is the round of one chunk in one lane. A sub-cohort
    of 0 clients reached the grouped convolution as a filter of 0 elements and ended a
    paper-scale run (2026-12-03, a Poisson cohort of 97 in chunks of 32 in 2 lanes);
    test_backends' lane test runs the LSTM, which takes empty batches."""
    extra = CNN + ("momentum=0.5", f'fast_dense_updates="{mode}"')
    exp = _experiment("dp_fedavg", extra + ("fast_chunk_size=64",))
    one, rows = _run(exp, "dp_fedavg", "fast", mode="cohort")
    assert rows[0]["cohort"] > 3                     # more than one chunk of 3 or fewer
    placed, _ = _run(_experiment("dp_fedavg", extra + ("fast_chunk_size=3", "fast_lanes=4")),
                     "dp_fedavg", "fast", mode="cohort")
    for a, b in zip(one, placed):
        np.testing.assert_allclose(a, b, atol=2e-6 * max(1.0, np.abs(a).max()))


def test_a_part_chunk_trains_at_a_padded_known_size(monkeypatch):
    """A part chunk (a Poisson cohort smaller than the chunk) trains at its size rounded up
    to PART_CHUNK_ROWS clients a lane, copies of its last client in the extra rows, which
    are cut off before the clip: with the kernels as factors and with per-client kernels
    (the cohort path) the round is the round of one full chunk of the cohort's size, which
    pads nothing."""
    from tff_idp.engine import backends, chunks
    seen = []
    spy_on = backends.FastBackend._part_chunk_fn

    def spy(self, rows, args):
        seen.append((rows, len(args[3][0]), int(args[2][0][0].shape[0])))
        return spy_on(self, rows, args)

    monkeypatch.setattr(backends.FastBackend, "_part_chunk_fn", spy)
    extra = CNN + ("momentum=0.5", "clip=0.05", "fast_lanes=2")
    step = chunks.PART_CHUNK_ROWS * 2
    padded = {}
    for mode in ("low_rank", "per_client"):
        seen.clear()
        padded[mode], rows = _run(_experiment("dp_fedavg", extra + (
            f'fast_dense_updates="{mode}"', "fast_chunk_size=64")), "dp_fedavg", "fast",
            mode="cohort")
        k = rows[0]["cohort"]
        assert seen == [(-(-k // step) * step, k, -(-k // step) * step)], mode
        assert seen[0][0] > k                      # this cohort was padded
    seen.clear()
    full, _ = _run(_experiment("dp_fedavg", extra + ('fast_dense_updates="per_client"',
                                                     f"fast_chunk_size={k}")),
                   "dp_fedavg", "fast", mode="cohort")
    assert seen == []                              # one full chunk: nothing padded
    for mode, weights in padded.items():
        for a, b in zip(full, weights):
            np.testing.assert_allclose(a, b, atol=2e-6 * max(1.0, np.abs(a).max()),
                                       err_msg=mode)


@pytest.mark.parametrize("left,chunk,lanes,want", [
    (1, 64, 1, 4), (4, 64, 1, 4), (5, 64, 1, 8), (56, 64, 1, 56), (57, 64, 1, 60),
    (63, 64, 1, 64), (25, 32, 2, 32), (17, 32, 2, 24), (1, 3, 4, 3)])
def test_a_part_chunks_rows_are_rounded_up_within_the_chunk(left, chunk, lanes, want):
    from tff_idp.engine.chunks import padded_part_rows
    assert padded_part_rows(left, chunk, lanes) == want


def test_the_factored_round_matches_the_tff_backend():
    """One round of DP-FedAvg on the CNN, noise on: the TFF backend's model to 1e-5 (over
    more rounds the noised model's training amplifies last-bit differences past it:
    test_backends holds the per-client path to TFF over two)."""
    exp = _experiment("dp_fedavg", CNN + ("budgets=[2.0]", "group_ratios=[1.0]",
                                          'fast_dense_updates="low_rank"'))
    tff_w, _ = _run(exp, "dp_fedavg", "tff")
    fast_w, _ = _run(exp, "dp_fedavg", "fast", mode="cohort")
    for a, b in zip(tff_w, fast_w):
        np.testing.assert_allclose(a, b, atol=1e-5)


def _kernels(method, extra):
    from tff_idp.engine import loop
    exp = _experiment(method, ("backend=\"fast\"",) + CNN + extra)
    runner, _, _ = loop.make_runner(exp, method, "fast")
    return runner.factored


@pytest.mark.parametrize("method,extra,want", [
    # auto: the 1024 x 512 kernel (4 R (i + o) = 4 x 30 x 1536 <= 524,288), not 512 x 10
    ("dp_fedavg", (), [4]),
    ("dp_fedavg", ('fast_dense_updates="low_rank"',), [4, 6]),
    ("dp_fedavg", ('fast_dense_updates="per_client"',), []),
    ("dp_fedavg", ('client_optimizer="adam"',), []),            # not linear in gradients
    ("dp_fedavg", ("weight_decay=0.001",), []),                  # a term in W itself
    ("dp_fedavg", ("local_epochs=1",), []),                      # steps vary by client
    ("pfa", (), [4]),                 # its server reads rows: formed once, at the end
    ("fedrep", (), []),                                          # a personal head
])
def test_the_low_rank_path_is_taken_only_where_it_is_exact(method, extra, want):
    assert _kernels(method, extra) == want


def test_the_dense_update_modes_and_noise_shares_are_the_configs():
    from tff_idp.engine.backends import NOISE_SHARES
    assert low_rank.DENSE_UPDATES == config.DENSE_UPDATES
    assert NOISE_SHARES == config.NOISE_SHARES


def test_a_summed_draw_has_the_distribution_of_the_clients_shares():
    """Issue 79 item 2: ``client_noise_sum`` draws group m's sum of shares as
    N(0, sum_k share_k^2) per coordinate; the sums of per-client draws (``client_noise``)
    over the same groups have the same distribution (two-sample KS per group on 40,000
    coordinates, and each group's standard deviation: s_m, since k_m shares of
    s_m^2 / k_m sum to it)."""
    from scipy import stats
    from tff_idp.queries import GroupGaussianQuery
    query = GroupGaussianQuery([1.0] * 3, [0.5, 2.0, 8.0], [3.0, 2.0, 1.0])
    state = query.initial_state_tensors()
    groups = tf.one_hot([0, 0, 0, 1, 1, 2], 3)
    counts = tf.reduce_sum(groups, 0)
    like = [tf.zeros([6, 200, 200])]
    seeds = tf.constant([[7, c] for c in range(6)], tf.int32)
    each = tf.tensordot(groups, query.client_noise(like, groups, seeds, state, counts)[0],
                        axes=[[0], [0]]).numpy().reshape(3, -1)
    summed = query.client_noise_sum([tf.zeros([3, 200, 200])], groups, tf.constant([7, -1]),
                                    state, counts)[0].numpy().reshape(3, -1)
    for m, s in enumerate([0.5, 2.0, 8.0]):
        assert stats.ks_2samp(each[m], summed[m]).pvalue > 1e-3
        assert np.std(summed[m]) == pytest.approx(s, rel=0.02)
        assert np.std(each[m]) == pytest.approx(s, rel=0.02)
    assert not np.allclose(each, summed)          # another random stream


@pytest.mark.parametrize("method,extra,summed", [
    ("dp_fedavg", ('fast_noise_shares="summed"',), True),
    ("gdpfed_plus", ('fast_noise_shares="summed"',), True),
    ("dp_fedavg", (), False),                                     # "each": the default
    # the public rows are read: their shares drawn each, the rest summed (the next test)
    ("pfa", ('fast_noise_shares="summed"',), True),
    ("dp_fedavg", ('fast_noise_shares="summed"', 'noise_draw="group"'), False),
])
def test_the_summed_draw_is_taken_only_where_the_sums_alone_are_read(method, extra, summed):
    from tff_idp.engine import loop
    exp = _experiment(method, ("backend=\"fast\"",) + CNN + extra)
    runner, _, _ = loop.make_runner(exp, method, "fast")
    assert runner.summed_noise is summed


@pytest.mark.parametrize("method", ["gdpfed_plus", "pfa"])
def test_a_summed_draw_leaves_the_clipped_sums_as_they_are(method):
    """With the noise at zero the two draws give the same model (only the noise differs),
    and with it on the run is another random stream of the same mechanism."""
    extra = CNN + ("momentum=0.9",)
    _, each, _ = _factored_runner(method, "auto", extra)
    _, summed, _ = _factored_runner(method, "auto", extra + ('fast_noise_shares="summed"',))
    assert any(not np.allclose(a, b) for a, b in zip(each, summed))
    silent = []
    for draw in ("each", "summed"):
        exp = _experiment(method, extra + (f'fast_noise_shares="{draw}"',))
        _silence(exp, method)
        silent.append(_run(exp, method, "fast")[0])
    for a, b in zip(*silent):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_pfas_public_rows_keep_their_own_shares_and_the_rest_is_summed():
    """PFA with ``fast_noise_shares="summed"``: the public rows the server reads one by one
    are the per-client path's bit for bit (each public client's full noise from its own
    seed), and the other shares reach the group sums as one draw a group, so the server's
    view has the per-client path's distribution: a private group's sum N(0, s_m^2), the
    public group's its rows' noise plus N(0, n s_pub^2) for its n clients without a row.
    Zero updates: what the server sees is the noise alone."""
    from scipy import stats
    from tff_idp.engine import loop
    runners = {}
    for draw in ("each", "summed"):
        exp = _experiment("pfa", ("backend=\"fast\"",) + CNN + (f'fast_noise_shares="{draw}"',))
        runners[draw] = loop.make_runner(exp, "pfa", "fast")[0]
    each, summed = runners["each"], runners["summed"]
    pub = summed.query.public_group
    assert pub == 2 and summed.query.rows > 2
    # two clients in each private group; three public, two with a row and one beyond them
    groups = np.eye(3, dtype=np.float32)[[0, 0, 1, 1, 2, 2, 2]]
    slots = np.array([-1, -1, -1, -1, 0, 1, summed.query.rows], np.int32)
    seeds = np.array([[7, c] for c in range(7)], np.int32)
    counts = tf.constant(groups.sum(0))
    zeros = [tf.zeros([7] + w.shape.as_list()) for w in summed._weights]
    args = (zeros, tf.zeros([7]), tf.constant(groups), tf.constant(seeds), tf.constant(slots))
    sums_e, rows_e, _ = each._aggregate(*args, each.state, counts)
    sums_s, rows_s, _ = summed._aggregate(*args, summed.state, counts)
    assert rows_s[0].numpy().tolist() == [0, 1]                  # the two with a row
    rows_e, rows_s = (summed.query.extra_from_rows(*r) for r in (rows_e, rows_s))
    np.testing.assert_array_equal(rows_s.numpy(), rows_e.numpy())
    assert np.any(rows_s.numpy()[:2]) and not np.any(rows_s.numpy()[2:])
    flat = lambda ts, m: np.concatenate([t.numpy()[m].ravel() for t in ts])  # noqa: E731
    # the chunk's sums hold the public rows' shares alone; step's draw brings the rest
    assert not np.any(flat(sums_s, 0)) and not np.any(flat(sums_s, 1))
    np.testing.assert_allclose(flat(sums_s, pub), rows_s.numpy()[:2].sum(0), atol=1e-5)
    drawn = summed._noise_sum(sums_s, groups, seeds, slots, counts)
    std = summed.state["noise_stddevs"].numpy()
    for m in range(3):
        rest_s = flat(drawn, m)
        rest_e = flat(sums_e, m) - (rows_e.numpy()[:2].sum(0) if m == pub else 0)
        assert np.std(rest_s) == pytest.approx(std[m], rel=0.02)   # s_m; s_pub for one
        assert np.std(rest_e) == pytest.approx(std[m], rel=0.02)
        assert stats.ks_2samp(rest_s[:40000], rest_e[:40000]).pvalue > 1e-3
        assert not np.allclose(rest_s, rest_e)              # another random stream


@pytest.mark.parametrize("mode,want", [("auto", [4]), ("per_client", None)])
def test_a_runs_summary_says_which_kernels_were_low_rank(mode, want, tmp_path):
    """summary.json records the weight tensors the fast backend trained as factors (the run
    folder says how it was computed, not only what; fast_dense_updates is a placement key)."""
    import json
    from tff_idp import run
    sets = [s for kv in ('dataset="synthetic:fashion_mnist"', 'model="cnn2"', "num_clients=30",
                         "rounds=1", 'backend="fast"', 'methods=["dp_fedavg"]',
                         f'fast_dense_updates="{mode}"') for s in ("--set", kv)]
    assert run.main(sets + ["--output-dir", str(tmp_path), "--quiet"]) == 0
    summary, = tmp_path.glob("**/dp_fedavg-seed0/summary.json")
    got = json.loads(summary.read_text())
    assert got.get("low_rank_kernels") == want
    from tff_idp.results.summary import RunSummary
    assert RunSummary.from_dict(got).low_rank_kernels == want


def test_the_bench_times_the_backends_own_training_on_both_paths():
    """``bench --only fast_train`` times ``FastBackend.train_chunks``: the round's local
    training as the backend trains it, chunk by chunk in its lanes, without clip, noise or
    sums. Its output on the factors' path, the kernels formed whole, is the per-client
    path's update of the same clients (the last chunk of 3, in 2 lanes)."""
    from tff_idp import experiment_config, models
    from tff_idp.algorithms.plan import PrivacySetting
    from tff_idp.engine.backends import FastBackend
    from tff_idp.methods import METHODS
    from tff_idp.methods.gdpfed import plan_dp_fedavg
    from tff_idp.aggregators import GroupGaussianFactory
    k, steps, b = 7, 2, 10
    rng = np.random.default_rng(3)
    xs = rng.random((k, steps * b, 28, 28, 1), dtype=np.float32)
    ys = rng.integers(0, 10, (k, steps * b)).astype(np.int32)
    model_fn = lambda: models.build("cnn2", input_shape=(28, 28, 1))
    tf.keras.utils.set_random_seed(0)
    w0 = model_fn().get_weights()
    plan = plan_dp_fedavg(PrivacySetting([1.0], [k], 1e-5, 10, 1.0, 1.0), noise_multiplier=1.0)
    spec = (tf.TensorSpec((b, 28, 28, 1), tf.float32), tf.TensorSpec((b,), tf.int32))
    got = {}
    for mode in ("low_rank", "per_client"):
        cfg = experiment_config.load(None, [f"local_steps={steps}", f"batch_size={b}",
                                            "momentum=0.5", "fast_chunk_size=4",
                                            "fast_lanes=2", f'fast_dense_updates="{mode}"'])
        method = METHODS["dp_fedavg"]
        program = ClientProgram(method.phases(cfg), split_model(model_fn(), "none"),
                                method.client_output, method.server_update)
        runner = FastBackend(cfg, plan, model_fn, w0,
                             GroupGaussianFactory(plan.clips, plan.noise_stddevs,
                                                  [float(k)], [1.0]), spec, program)
        assert bool(runner.factored) == (mode == "low_rank")
        out = runner.train_chunks([[(xs[i], ys[i]) for i in range(k)]])
        if runner.factored:
            sent, factors, _ = out
            got[mode] = low_rank.materialised(sent, runner.factored, factors,
                                              runner._weights)
        else:
            final, _ = out
            start = [tf.repeat(w[None], 3, axis=0) for w in runner._weights]
            got[mode] = program.send(start, [f[:3] for f in final], batched=True)[0]
    for a, b in zip(got["per_client"], got["low_rank"]):
        assert a.shape[0] == 3
        np.testing.assert_allclose(a, b, atol=2e-6 * max(1.0, np.abs(a).max()))


def test_known_few_local_steps_are_written_out_and_equal_the_loop(monkeypatch):
    """A phase of at most UNROLLED_STEPS steps known when traced runs as that many copies
    of the step, with no while loop in the graph (TensorFlow's oneDNN pass walks a loop's
    cycle in an order that varies by process and then leaves a MaxPoolGrad off oneDNN,
    docs/backends.md); with the limit at 0 both training paths keep the loop. The two
    give the same numbers on both paths, and the paths agree with each other."""
    from tff_idp.algorithms import client_work
    tf.keras.utils.set_random_seed(4)
    model = tf.keras.Sequential([L.Input((8, 8, 1)), L.Conv2D(3, 3, activation="relu"),
                                 L.MaxPooling2D(2), L.Flatten(), L.Dense(6), L.Dense(4)])
    cm = CohortModel(model)
    rng = np.random.default_rng(5)
    k, steps, batch = 3, 4, 2
    data = CohortData(tf.constant(rng.normal(size=(k, steps, batch, 8, 8, 1)), tf.float32),
                      tf.constant(rng.integers(0, 4, size=(k, steps, batch))), None)
    weights = [tf.constant(w) for w in model.get_weights()]
    trainer = ClientTrainer("sgd", 0.5)
    program = ClientProgram([Phase("all", steps, None)], split_model(model, "none"),
                            client_output, server_update)
    kernels = [idx for _, idx in cm.dense_kernels()]
    lr = tf.constant(0.2)
    got = {}
    for unrolled in (8, 0):
        monkeypatch.setattr(client_work, "UNROLLED_STEPS", unrolled)
        per_client = tf.function(lambda: _materialised(trainer, cm, weights, data, lr))
        factored = tf.function(lambda: low_rank.train_factored(
            trainer, cm, program, weights, kernels, data[:3], lr, ALL))
        for fn in (per_client, factored):
            ops = {op.type for op in fn.get_concrete_function().graph.get_operations()}
            assert bool(ops & {"While", "StatelessWhile"}) == (unrolled == 0)
            assert ("MaxPoolGrad" in ops) == (unrolled > 0)    # else in the loop's body
        want, want_loss = per_client()
        out, factors, loss = factored()
        got[unrolled] = [t.numpy() for t in [*want, want_loss, *out, loss]
                         + [f.xs for f in factors] + [f.ds for f in factors]]
        for i, w in enumerate(want):
            if i not in kernels:
                np.testing.assert_allclose(out[i], w, atol=1e-6)
        for idx, f in zip(kernels, factors):
            np.testing.assert_allclose(
                np.einsum("kri,kro->kio", f.xs.numpy(), f.ds.numpy()), want[idx], atol=1e-6)
    for a, b in zip(got[8], got[0]):
        np.testing.assert_array_equal(a, b)
