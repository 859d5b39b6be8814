"""Stock FedAvg's second channel (issue 75, item 2): with ``dp_aggregator`` as its model
aggregator, ``build_unweighted_fed_avg`` / ``build_weighted_fed_avg`` still sum every
client's loss, example and batch counts un-noised through their default metrics
aggregator; ``private_metrics_aggregator`` releases none of them. Two cohorts that differ
in one client's size (8 or 1,000 examples) give released measurements that are equal
number for number with it, and different without it (so the test can fail). The model
change is made the same in both cohorts (client learning rate 0, a fixed seed for the
server-drawn noise), so every released number that depends on the clients' data shows."""
import collections

import numpy as np
import pytest
import tensorflow as tf

from tff_idp.runtime import import_tff

tff = import_tff()
from tff_idp import learning  # noqa: E402


def _client(n, seed):
    rng = np.random.default_rng(seed)
    return tf.data.Dataset.from_tensor_slices(collections.OrderedDict(
        x=rng.normal(size=(n, 4)).astype(np.float32),
        y=rng.integers(0, 2, n).astype(np.int32))).batch(4)


def _model_fn():
    keras = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
    return tff.learning.models.from_keras_model(
        keras, loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        input_spec=_client(8, 0).element_spec,
        metrics=[tf.keras.metrics.SparseCategoricalAccuracy()])


def _released(sizes, weighted, metrics_aggregator):
    """Everything the process's ``next`` releases besides the state, flattened."""
    aggregator = learning.dp_aggregator(1.1, clients_per_round=2, clip=0.5,
                                        noise_draw="server", noise_seed=3)
    build = tff.learning.algorithms.build_unweighted_fed_avg
    if weighted:
        aggregator = tff.aggregators.as_weighted_aggregator(aggregator)
        build = tff.learning.algorithms.build_weighted_fed_avg
    kwargs = {} if metrics_aggregator is None else {"metrics_aggregator": metrics_aggregator}
    process = build(_model_fn, client_optimizer_fn=tff.learning.optimizers.build_sgdm(0.0),
                    server_optimizer_fn=tff.learning.optimizers.build_sgdm(1.0),
                    model_aggregator=aggregator, **kwargs)
    out = process.next(process.initialize(),
                       [_client(n, i) for i, n in enumerate(sizes)])
    return out.metrics


def _paths(tree, prefix=""):
    """(path, value) of every leaf of nested mappings."""
    if isinstance(tree, collections.abc.Mapping):
        for k, v in tree.items():
            yield from _paths(v, f"{prefix}{k}/")
    else:
        yield prefix.rstrip("/"), np.asarray(tree).tolist()


def _paths_dict(metrics):
    return dict(_paths(metrics))


@pytest.mark.parametrize("weighted", [False, True])
def test_the_private_metrics_aggregator_releases_no_un_noised_count(weighted):
    small = _paths_dict(_released([8, 8], weighted, learning.private_metrics_aggregator))
    large = _paths_dict(_released([8, 1000], weighted, learning.private_metrics_aggregator))
    assert small == large
    assert not any(k.startswith("client_work/train/") for k in small)
    # the model aggregator's measurements are still released: public parameters
    assert small["aggregator/noise_stddevs"] == [pytest.approx(1.1 * 0.5)]


def test_stock_fedavg_releases_the_clients_counts_without_it():
    small = _paths_dict(_released([8, 8], False, None))
    large = _paths_dict(_released([8, 1000], False, None))
    assert small["client_work/train/num_examples"] == 16
    assert large["client_work/train/num_examples"] == 1008
    assert small != large


def test_bad_finalizers_are_one_line():
    with pytest.raises(TypeError) as e:
        learning.private_metrics_aggregator(3)
    assert "metric_finalizers=3" in str(e.value) and "\n" not in str(e.value)
