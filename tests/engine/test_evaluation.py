"""Personalised evaluation: each client's model on the test examples of its classes."""
import numpy as np
import pytest

from tff_idp import models
from tff_idp.engine.evaluation import (ClientExamples, PersonalEvaluation, client_test_sets,
                                     evaluate)
from tff_idp.engine.personal_state import PersonalStore
from tff_idp.models.split import split_model


def test_a_clients_test_set_is_every_test_example_of_its_training_classes():
    y_train = np.array([0, 0, 1, 2, 2, 3])
    y_test = np.array([3, 0, 1, 1, 2, 0])
    sets = client_test_sets(y_train, [np.array([0, 1]), np.array([2, 5]), np.array([3])],
                            y_test)
    assert [s.tolist() for s in sets] == [[1, 5], [0, 2, 3], [4]]


@pytest.mark.parametrize("model_name,spec", [("digits_mlp", "head"), ("logistic", "rows:0-9")])
def test_features_once_equals_each_clients_full_model(model_name, spec):
    """The head shortcut (features computed once, each client's head on its rows) gives what
    evaluating every client's whole model gives; a rows split runs the whole-model path."""
    rng = np.random.default_rng(0)
    model = models.build(model_name, input_dim=16, num_classes=4)
    split = split_model(model, spec)
    w = [rng.normal(size=v.shape).astype(np.float32) for v in model.get_weights()]
    store = PersonalStore(w, split, num_clients=5)
    store.values = [v + rng.normal(size=v.shape).astype(np.float32) *
                    (1.0 - split.masks[i]) for v, i in zip(store.values, split.personal_tensors)]
    x = rng.normal(size=(60, 16)).astype(np.float32)
    y = rng.integers(0, 4, 60)
    sets = [np.flatnonzero(y == c % 4) for c in range(5)]
    got = PersonalEvaluation(model, split, ClientExamples(x, y, sets))(w, store)
    expect = []
    for c, ids in enumerate(sets):
        own = list(w)
        for j, i in enumerate(split.personal_tensors):
            own[i] = w[i] * split.masks[i] + store.values[j][c]
        model.set_weights(own)
        expect.append(evaluate(model, x[ids], y[ids]))
    assert got["personal_test_accuracy"] == pytest.approx(np.mean([a for _, a in expect]))
    assert got["personal_test_loss"] == pytest.approx(np.mean([l for l, _ in expect]), rel=1e-5)
    assert got["personal_test_accuracy_std"] == pytest.approx(np.std([a for _, a in expect]))
    assert got["personal_test_clients"] == 5
    if split.head:    # the generic path agrees too
        generic = PersonalEvaluation(model, split, ClientExamples(x, y, sets),
                                     shortcut=False)
        assert generic.readout is None
        assert generic(w, store)["personal_test_accuracy"] == got["personal_test_accuracy"]


def test_read_out_fine_tuning_on_features_equals_training_the_head_of_the_full_model():
    """DP-FedAvg-fb's evaluation copy: each client's head fine-tuned on features computed
    once gives the head that the same steps through the whole model (body frozen) give."""
    import tensorflow as tf
    from tff_idp.algorithms.client_work import (ClientTrainer, CohortData, PhaseBatches,
                                               PhaseSpec)
    from tff_idp.engine.cohort_model import CohortModel
    from tff_idp.engine.evaluation import ReadoutFineTune
    rng = np.random.default_rng(3)
    model = models.build("digits_mlp", input_dim=12, num_classes=4)
    w = model.get_weights()
    x = rng.normal(size=(90, 12)).astype(np.float32)
    y = rng.integers(0, 4, 90).astype(np.int32)
    sets = [np.arange(0, 25), np.arange(25, 60), np.arange(60, 90)]
    trainer = ClientTrainer("sgd", 0.9, 1e-3)
    tune = ReadoutFineTune(CohortModel(model), trainer,
                           ReadoutFineTune.Schedule(epochs=2, lr=0.05, lr_decay=1.0,
                                                    batch_size=8, seed=5),
                           ClientExamples(x, y, sets))
    evaluation = PersonalEvaluation(model, split_model(model, "none"), ClientExamples(x, y, sets))
    readout = CohortModel(model).readout_tensors
    heads = {i: np.repeat(w[i][None], 3, axis=0) for i in readout}
    got = tune(4, evaluation._features, w, heads, [0, 1, 2])
    frozen = [np.float32(0.0) if i not in readout else None for i in range(len(w))]
    for c, ids in enumerate(sets):
        gen = np.random.default_rng([5, 4, c, ReadoutFineTune.STREAM])
        order = np.concatenate([gen.permutation(len(ids)) for _ in range(2)])
        steps = -(-len(order) // 8)
        xs = np.zeros((steps * 8, 12), np.float32)
        ys = np.zeros(steps * 8, np.int32)
        ws = np.zeros(steps * 8, np.float32)
        xs[:len(order)], ys[:len(order)], ws[:len(order)] = x[ids][order], y[ids][order], 1.0
        final, _ = trainer.train_on_batches_phases(
            model, [tf.constant(v) for v in w],
            [PhaseBatches(CohortData(tf.constant(xs.reshape(steps, 8, 12)),
                                     tf.constant(ys.reshape(steps, 8)),
                                     tf.constant(ws.reshape(steps, 8))),
                          PhaseSpec(trainable=frozen))],
            tf.constant(0.05))
        for i in readout:
            np.testing.assert_allclose(got[i][c], final[i].numpy(), atol=1e-5)
        model.set_weights(w)


def test_curve_rounds_evaluate_a_seeded_subset_and_the_last_round_the_whole_test_set(
        monkeypatch):
    """curve_test_examples: rounds before the last see the same seeded subset, the last round
    every test example; the summary says both counts."""
    from tff_idp import experiment_config
    from tff_idp.engine import loop
    from tff_idp.engine.experiment import prepare
    exp = prepare(experiment_config.load(None, ['methods=["dp_fedavg"]', "rounds=3", "num_clients=30",
                                     "local_steps=1", "curve_test_examples=37"]), persist=False)
    seen = []

    def recording(model, x, y, **kw):
        seen.append(np.asarray(y).copy())
        return evaluate(model, x, y, **kw)
    monkeypatch.setattr(loop, "evaluate", recording)
    rows, summary, _ = loop.run_method(exp, "dp_fedavg", progress=False, backend="fast")
    n = len(exp.data.y_test)
    assert [len(y) for y in seen] == [37, 37, n] and n > 37
    assert np.array_equal(seen[0], seen[1])
    x_sub, y_sub = loop.curve_test_set(exp.data.x_test, exp.data.y_test, 37, exp.cfg.seed)
    assert np.array_equal(y_sub, seen[0])
    again = loop.curve_test_set(exp.data.x_test, exp.data.y_test, 37, exp.cfg.seed)
    assert np.array_equal(again[0], x_sub)
    assert summary.test_examples == n and summary.curve_test_examples == 37


def test_evaluate_in_pieces_is_the_whole_sets_loss_and_accuracy(monkeypatch):
    """evaluate() holds the logits of EVAL_PIECE examples at a time (TFF's Shakespeare task:
    80 x 80 logits a window); pieces, a short last one, and targets per position give the
    numbers of one pass over everything."""
    import tensorflow as tf
    from tff_idp import models
    from tff_idp.engine import evaluation
    rng = np.random.default_rng(3)
    model = models.build("char_lstm", vocab_size=7, seq_len=5, sequence_targets=True)
    x = rng.integers(0, 7, (23, 5)).astype(np.int8)
    y = rng.integers(0, 7, (23, 5)).astype(np.int8)
    logits = model(x.astype(np.int32)).numpy()
    loss = float(tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
        y.astype(np.int32), logits, from_logits=True)))
    acc = float(np.mean(logits.argmax(-1) == y))
    monkeypatch.setattr(evaluation, "EVAL_PIECE", 10)
    got = evaluation.evaluate(model, x, y, batch=4)
    np.testing.assert_allclose(got, (loss, acc), rtol=1e-5)


@pytest.mark.parametrize("n", [3, 16, 19])
def test_evaluation_in_lanes_gives_the_same_numbers(n):
    """Several batches at once (``lanes``: a tuple of independent forward passes, which one
    thread per operation computes on several cores) give each batch's logits exactly, with
    fewer batches left than lanes computed one by one (3 examples: one short batch; 16:
    four full; 19: five, the last short), and each call is traced once per count."""
    from tff_idp.engine.evaluation import _logits
    rng = np.random.default_rng(2)
    model = models.build("digits_mlp", input_dim=16, num_classes=4)
    x = rng.normal(size=(n, 16)).astype(np.float32)
    y = rng.integers(0, 4, n)
    one = _logits(model, x, batch=4)
    assert one.shape == (n, 4)
    for lanes in (2, 3):
        assert np.array_equal(_logits(model, x, batch=4, lanes=lanes), one), lanes
        assert evaluate(model, x, y, batch=4, lanes=lanes) == evaluate(model, x, y, batch=4)
    if n >= 12:
        assert model._tff_idp_forward_3.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("extra,lanes", [(("fast_lanes=2",), 2), (("fast_lanes=1",), 1),
                                         (("fast_lanes=2", 'device="gpu"'), 1)])
def test_the_round_loop_evaluates_in_the_runs_lanes(monkeypatch, extra, lanes):
    """A fast run in lanes off a GPU (one thread per operation) evaluates that many batches
    at once; without lanes, or on a GPU, one at a time."""
    from tff_idp.engine import loop
    from tests.engine.helpers import experiment
    seen = []
    real = loop.evaluate

    def spy(*a, **k):
        seen.append(k.get("lanes", 1))
        return real(*a, **k)
    monkeypatch.setattr(loop, "evaluate", spy)
    exp = experiment("p_fedavg", ['backend="fast"', "rounds=2", "num_clients=20"], extra)
    from tff_idp.runtime import in_lanes_on_cpu
    assert in_lanes_on_cpu(exp.cfg) == (lanes > 1)
    if 'device="gpu"' in extra:             # no GPU here: the predicate alone
        return
    loop.run_method(exp, "p_fedavg", progress=False)
    assert seen and set(seen) == {lanes}


def test_a_personal_evaluation_in_lanes_gives_the_same_numbers(monkeypatch):
    """Each client's own model (the whole-model path and the read-out shortcut) evaluated
    ``lanes`` batches at a time: the same numbers; a personal run in lanes evaluates so."""
    rng = np.random.default_rng(3)
    model = models.build("digits_mlp", input_dim=16, num_classes=4)
    x = rng.normal(size=(70, 16)).astype(np.float32)
    y = rng.integers(0, 4, 70)
    sets = [np.flatnonzero(y == c % 4) for c in range(5)]
    w = [rng.normal(size=v.shape).astype(np.float32) for v in model.get_weights()]
    for spec in ("head", "rows:0-9"):
        split = split_model(model, spec)
        store = PersonalStore(w, split, num_clients=5)
        results = [PersonalEvaluation(model, split, ClientExamples(x, y, sets), lanes=lanes)(
            w, store) for lanes in (1, 3)]
        assert results[0] == results[1], spec

    from tff_idp.engine import loop
    from tests.engine.helpers import experiment
    made = []

    class Recording(loop.PersonalEvaluation):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self.lanes)
    monkeypatch.setattr(loop, "PersonalEvaluation", Recording)
    exp = experiment("dp_fedrep", ['backend="fast"', 'model="digits_mlp"', "rounds=1",
                                   "num_clients=20", "fast_lanes=2"])
    loop.run_method(exp, "dp_fedrep", progress=False)
    assert made == [2]
