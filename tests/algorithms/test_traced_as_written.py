"""The suite's own training code is traced as written (every ``tf.function`` with
``autograph=False``, docs/backends.md "No AutoGraph at all"), while a model, the user's
code, may still branch on a tensor as it may under a stock TFF client's ``tf.function``."""
import numpy as np
import tensorflow as tf

from tff_idp.algorithms.client_work import ClientTrainer


class _Branchy(tf.keras.Model):
    """A subclassed model whose forward pass takes a branch a tensor decides."""

    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(3)

    def call(self, x, training=False):
        h = self.dense(x)
        if tf.reduce_sum(x) > 0:
            h = h * 2.0
        return h


def test_a_model_that_branches_on_a_tensor_trains_in_the_fast_client_loop():
    model = _Branchy()
    model(tf.zeros([1, 4]))
    weights = [np.full(v.shape, 0.1, np.float32) * np.arange(1, v.shape[-1] + 1,
                                                             dtype=np.float32)
               for v in model.trainable_variables]
    # two steps of 5 examples, one batch of positive sum and one of negative
    xs = tf.constant(np.stack([np.full([5, 4], 0.5), np.full([5, 4], -0.5)]), tf.float32)
    ys = tf.constant([[0, 1, 2, 0, 1], [2, 2, 1, 0, 0]])

    def train():
        return ClientTrainer().train_on_batches(model, weights, xs, ys, 0.1)
    traced = tf.function(train, autograph=False)()          # as the fast backend traces it
    tf.config.run_functions_eagerly(True)
    try:
        eager = tf.function(train)()
    finally:
        tf.config.run_functions_eagerly(False)
    for a, b in zip(traced[0], eager[0]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(traced[1], eager[1], rtol=1e-6)
    # the branch was taken on the first step only: the result is not the unbranched one's
    model.call = lambda x, training=False: model.dense(x)
    plain = tf.function(train, autograph=False)()
    assert not np.allclose(plain[1], traced[1])
