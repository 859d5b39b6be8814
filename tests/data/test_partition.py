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


def test_dirichlet_per_client_keeps_sizes_and_skews_by_concentration():
    """Hsu et al.'s per-client prior: every client keeps the IID split's size (FMNIST's 10
    examples a client at lambda 0.3, where the per-class prior leaves clients empty), the
    partition is disjoint and complete, and skew grows as the concentration falls."""
    labels = np.repeat(np.arange(10), 600)              # 6,000 examples, 600 clients of 10
    ents = []
    for lam in (0.3, 0.5, 0.9, 100.0):
        parts = data.dirichlet_per_client(labels, 600, lam, seed=0)
        _disjoint(parts, len(labels))
        assert sorted({len(p) for p in parts}) == [10]
        ents.append(_label_entropy_of(labels, parts))
    assert ents == sorted(ents)
    # a client of 10 examples drawn IID from 10 classes has entropy about 1.86 nats
    assert ents[0] < 0.7 * ents[-1] and ents[-1] > 1.7
    again = data.dirichlet_per_client(labels, 600, 0.3, seed=0)
    assert all(np.array_equal(a, b) for a, b in zip(again, data.dirichlet_per_client(
        labels, 600, 0.3, seed=0)))


def _label_entropy_of(labels, parts):
    ent = []
    for p in parts:
        _, counts = np.unique(labels[p], return_counts=True)
        f = counts / counts.sum()
        ent.append(-(f * np.log(f)).sum())
    return float(np.mean(ent))


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
    from tff_idp import config, experiment_config
    from tff_idp.engine.experiment import prepare
    exp = prepare(experiment_config.load(None, overrides + ["methods=[\"p_fedavg\"]"]))
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
    from tff_idp import config, experiment_config
    from tff_idp.engine.experiment import prepare
    with pytest.raises(config.ConfigError, match="partition_param"):
        experiment_config.load(None, ["partition=\"dirichlet\""])
    with pytest.raises(config.ConfigError, match="partition='dirichlet'"):
        prepare(experiment_config.load(None, ["partition=\"dirichlet\"", "partition_param=0.01"]))


def test_dealt_classes_deals_s_slots_per_client_with_centaur_repeats():
    """CENTAUR's dealing (paper 001): N x s class slots, each class s N / C of them, shuffled;
    each class's examples cut into one shard per slot; repeats kept (one draw)."""
    from tff_idp.data.partition import dealt_classes
    labels = np.repeat(np.arange(10), 120)
    parts = dealt_classes(labels, 20, 5, seed=3)
    assert sum(len(p) for p in parts) == len(labels)
    assert len(np.unique(np.concatenate(parts))) == len(labels)        # disjoint, complete
    assert {len(p) for p in parts} == {5 * 12}                          # 120 / 10 shards
    distinct = [len(np.unique(labels[p])) for p in parts]
    assert max(distinct) <= 5 and min(distinct) >= 1
    assert any(d < 5 for d in distinct)          # a repeated class (67.5% of clients in 001)
    assert len({tuple(np.unique(labels[p])) for p in parts}) > 2      # not round-robin's 2
    again = dealt_classes(labels, 20, 5, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))
    # C does not divide N s: the first classes of a shuffled order take one slot more
    odd = dealt_classes(labels, 7, 3, seed=0)
    assert sum(len(p) for p in odd) == len(labels)
    with pytest.raises(ValueError, match="classes per client 11"):
        dealt_classes(labels, 20, 11, seed=0)


def test_dealt_classes_mean_distinct_classes_matches_the_spec_simulation():
    """Spec 4.1 (200 draws): CIFAR-10 s = 10, N = 20 gives 6.63 distinct classes per client
    on average; EMNIST-digits s = 5, 4.15."""
    from tff_idp.data.partition import dealt_classes
    labels = np.repeat(np.arange(10), 40)
    for s, expect in ((10, 6.63), (5, 4.15)):
        means = [np.mean([len(np.unique(labels[p])) for p in dealt_classes(labels, 20, s, seed)])
                 for seed in range(200)]
        assert np.mean(means) == pytest.approx(expect, abs=0.08)


def test_validation_split_holds_out_a_seeded_tenth_of_each_client():
    from tff_idp.data.partition import validation_split
    parts = [np.arange(0, 100), np.arange(100, 105), np.arange(105, 106)]
    train, val = validation_split(parts, 0.1, seed=1)
    assert [len(v) for v in val] == [10, 1, 0]
    for p, t, v in zip(parts, train, val):
        assert np.array_equal(np.sort(np.concatenate([t, v])), p) and not set(t) & set(v)
    again = validation_split(parts, 0.1, seed=1)[1]
    assert all(np.array_equal(a, b) for a, b in zip(val, again))
