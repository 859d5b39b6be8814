"""A TFF user's script: GDPFed+ (three privacy groups, budgets 0.5 / 1.5 / 3) as a stock
tff.learning LearningProcess on made-up data. Run: python examples/group_dp_fed_avg.py"""
import collections

import numpy as np
import tensorflow as tf

from tff_idp import learning
from tff_idp.runtime import import_tff

tff = import_tff()
SPEC = collections.OrderedDict(x=tf.TensorSpec([None, 4], tf.float32),
                               y=tf.TensorSpec([None], tf.int32))


def model_fn():
    keras = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
    return tff.learning.models.from_keras_model(
        keras, loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        input_spec=SPEC)


groups = np.repeat([0, 1, 2], 30)                 # each client's privacy group
plan = learning.plan_from_budgets("gdpfed_plus", budgets=[0.5, 1.5, 3.0],
                                  group_sizes=[30, 30, 30], rounds=5, expected_rate=0.2)
process = learning.build_group_dp_fed_avg(model_fn, tff.learning.optimizers.build_sgdm(0.1),
                                          plan=plan)
rng = np.random.default_rng(0)


def client_data(client):
    x = rng.normal(size=(16, 4)).astype(np.float32)
    data = collections.OrderedDict(x=x, y=(x[:, 0] > 0).astype(np.int32))
    return learning.with_group(tf.data.Dataset.from_tensor_slices(data).batch(8),
                               int(groups[client]), plan)


state = process.initialize()
for round_num in range(5):
    cohort = learning.sample_cohort(rng, groups, plan)   # Poisson, q_m per group
    state = process.next(state, [client_data(c) for c in cohort]).state
print("sigma_m:", [round(z, 3) for z in plan.noise_multipliers])
print("epsilon per group:", {g: round(e, 3) for g, e in plan.epsilons().items()})
