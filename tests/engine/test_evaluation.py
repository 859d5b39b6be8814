"""Personalised evaluation: each client's model on the test examples of its classes."""
import dataclasses

import numpy as np
import pytest

from tff_idp import models
from tff_idp.engine.evaluation import PersonalEvaluation, client_test_sets, evaluate
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
    got = PersonalEvaluation(model, split, x, y, sets)(w, store)
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
        generic = PersonalEvaluation(model, dataclasses.replace(split, head=False), x, y, sets)
        assert generic(w, store)["personal_test_accuracy"] == got["personal_test_accuracy"]
