"""Each partitioner's defining property, on real labels (scikit-learn's digits)."""
import numpy as np
import pytest

from tff_idp import data

LABELS = data.load("digits").y_train     # 1,437 real labels, 10 classes


def _disjoint(parts, total=None):
    flat = np.concatenate(parts)
    assert len(flat) == len(np.unique(flat))
    if total is not None:
        assert len(flat) == total


def test_iid_partition():
    parts = data.iid_partition(len(LABELS), 100, seed=3)
    _disjoint(parts, len(LABELS))
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1
    assert all(np.array_equal(a, b) for a, b in zip(parts, data.iid_partition(len(LABELS), 100, 3)))


def _label_entropy(parts):
    ent = []
    for p in parts:
        counts = np.bincount(LABELS[p], minlength=10) / len(p)
        nz = counts[counts > 0]
        ent.append(-(nz * np.log(nz)).sum())
    return float(np.mean(ent))


def test_dirichlet_skew_grows_as_concentration_falls():
    ents = []
    for lam in (0.3, 0.5, 0.9, 100.0):
        parts = data.dirichlet_label_skew(LABELS, 20, lam, seed=0)
        _disjoint(parts, len(LABELS))
        ents.append(_label_entropy(parts))
    assert ents == sorted(ents)             # more concentration, more mixed labels
    assert ents[-1] > 0.9 * np.log(10) and ents[0] < 0.7 * np.log(10)


@pytest.mark.parametrize("s", [1, 2, 5, 10])
def test_classes_per_client(s):
    parts = data.classes_per_client(LABELS, 20, s, seed=1)
    _disjoint(parts, len(LABELS))
    for p in parts:
        assert len(np.unique(LABELS[p])) == s


def test_pachinko_sizes_and_skew():
    parts = data.pachinko(LABELS, 50, 20, seed=0)            # one level, alpha 0.1
    _disjoint(parts)
    assert all(len(p) == 20 for p in parts)
    assert _label_entropy(parts) < 0.5 * np.log(10)          # strongly skewed
    coarse = {c: c // 5 for c in range(10)}                  # two coarse labels
    two = data.pachinko(LABELS, 50, 20, seed=0, coarse_of=coarse, alpha=100.0, beta=100.0)
    assert _label_entropy(two) > 0.8 * np.log(10)            # flat priors: mixed labels


@pytest.mark.parametrize("ratios", [(1 / 3, 1 / 3, 1 / 3), (1 / 6, 4 / 6, 1 / 6),
                                    (0.34, 0.43, 0.23), (0.54, 0.37, 0.09), (0.95, 0.0, 0.05)])
def test_assign_groups(ratios):
    g = data.assign_groups(600, ratios, seed=2)
    counts = np.bincount(g, minlength=3)
    assert counts.sum() == 600
    assert np.all(np.abs(counts - np.asarray(ratios) * 600) <= 1)
    assert np.array_equal(g, data.assign_groups(600, ratios, seed=2))


@pytest.mark.parametrize("overrides,check", [
    (["partition=\"dirichlet\"", "partition_param=0.3", "num_clients=50"], "skewed"),
    (["partition=\"classes\"", "partition_param=2", "num_clients=50"], 2),
    (["partition=\"pachinko\"", "num_clients=50"], "skewed"),
    (["partition=\"iid\"", "num_clients=50"], "mixed"),
])
def test_configs_choose_the_partition(overrides, check):
    from tff_idp import config
    from tff_idp.engine.experiment import prepare
    exp = prepare(config.load(None, overrides + ["methods=[\"p_fedavg\"]"]))
    parts = exp.client_indices
    assert len(parts) == 50
    _disjoint(parts)
    if isinstance(check, int):
        assert all(len(np.unique(LABELS[p])) == check for p in parts)
    elif check == "skewed":
        assert _label_entropy(parts) < 0.75 * np.log(10)
    else:
        assert _label_entropy(parts) > 0.85 * np.log(10)


def test_partition_errors_are_config_errors():
    from tff_idp import config
    from tff_idp.engine.experiment import prepare
    with pytest.raises(config.ConfigError, match="partition_param"):
        config.load(None, ["partition=\"dirichlet\""])
    with pytest.raises(config.ConfigError, match="partition='dirichlet'"):
        prepare(config.load(None, ["partition=\"dirichlet\"", "partition_param=0.01"]))
