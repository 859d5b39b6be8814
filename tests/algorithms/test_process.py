"""The TFF process against a hand-written eager reference: one round, no noise, no clip."""
import collections
import math

import numpy as np
import pytest
import tensorflow as tf

from tff_idp.runtime import import_tff

tff = import_tff()
from tff_idp.aggregators import GroupGaussianFactory  # noqa: E402
from tff_idp.algorithms.client_work import LocalTraining  # noqa: E402
from tff_idp.learning.process import build_group_dp_process  # noqa: E402


def model_fn():
    return tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(3)])


def _reference_delta(w0, x, y, steps, lr, optimizer, momentum):
    model = model_fn()
    model.set_weights(w0)
    slots = [(np.zeros_like(w), np.zeros_like(w)) for w in w0]
    keras_adam = tf.keras.optimizers.Adam(lr)          # paper 004's clients (adam_keras)
    for t in range(steps):
        xb, yb = x[2 * t % len(x):][:2], y[2 * t % len(y):][:2]
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
                yb, model(xb), from_logits=True))
        grads = tape.gradient(loss, model.trainable_variables)
        if optimizer == "adam_keras":
            keras_adam.apply_gradients(zip(grads, model.trainable_variables))
            continue
        for i, (v, g) in enumerate(zip(model.trainable_variables, grads)):
            a, b = slots[i]
            g = g.numpy()
            if optimizer == "sgd":
                a = momentum * a + g
                v.assign_sub(lr * a)
            else:
                a = 0.9 * a + 0.1 * g
                b = 0.999 * b + 0.001 * g * g
                v.assign_sub(lr * (a / (1 - 0.9 ** (t + 1))) /
                             (np.sqrt(b / (1 - 0.999 ** (t + 1))) + 1e-7))
            slots[i] = (a, b)
    return [v - w for v, w in zip(model.get_weights(), w0)]


@pytest.mark.parametrize("optimizer,momentum", [("sgd", 0.5), ("adam", 0.0),
                                                ("adam_keras", 0.0)])
def test_one_round_matches_eager_reference(optimizer, momentum):
    tf.keras.utils.set_random_seed(1)
    w0 = model_fn().get_weights()
    rng = np.random.default_rng(0)
    data = [(rng.normal(size=(4, 4)).astype(np.float32), rng.integers(0, 3, 4).astype(np.int32))
            for _ in range(3)]
    spec = (tf.TensorSpec([2, 4], tf.float32), tf.TensorSpec([2], tf.int32))
    factory = GroupGaussianFactory([math.inf], [0.0], [3.0], weights=[1.0])
    training = LocalTraining(local_lr=0.1, lr_decay=0.9, momentum=momentum, local_steps=3,
                             optimizer=optimizer, server_lr=1.0)
    proc = build_group_dp_process(model_fn, w0, factory, spec, 1, training)
    state = proc.initialize()
    datasets = [tf.data.Dataset.from_tensor_slices(d).repeat().batch(2, drop_remainder=True)
                for d in data]
    info = [collections.OrderedDict(group=np.ones(1, np.float32),
                                    seed=np.array([0, i], np.int32), slot=np.int32(-1))
            for i in range(3)]
    state, metrics = proc.next(state, datasets, info)
    deltas = [_reference_delta(w0, x, y, 3, 0.1, optimizer, momentum) for x, y in data]
    expected = [w + np.mean([d[i] for d in deltas], axis=0) for i, w in enumerate(w0)]
    for got, want in zip(state["weights"], expected):
        np.testing.assert_allclose(got, want, atol=2e-6)
    assert int(state["round"]) == 1
    # the second round runs at lr * decay
    state, _ = proc.next(state, datasets, info)
    assert int(state["round"]) == 2
