"""TFF's federated sets through TFF's own loaders on pre-staged tiny caches, Adult and its
stand-in, the label-shard partition, the data store, and natural-client configs."""
import numpy as np
import pytest

from tff_idp import config, experiment_config, data
from tff_idp.data import adult, shakespeare, tff_sets
from tff_idp.data.store import DataStore, pack_clients, unpack_clients
from tff_idp.engine.experiment import partition_clients, prepare

from . import tff_sqlite


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    r = tmp_path_factory.mktemp("datasets")
    (r / "tff").mkdir()
    tff_sqlite.emnist_db(r / "tff" / "emnist_all.sqlite")
    tff_sqlite.shakespeare_db(r / "tff" / "shakespeare.sqlite")
    tff_sqlite.cifar100_db(r / "tff" / "cifar100.sqlite")
    lines = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind\n"
    shakespeare.write_store([{"client": f"hamlet/{who}", "train": lines * 3, "test": lines * 2}
                             for who in ("HAMLET", "OPHELIA")], r / shakespeare.STORE, {})
    return r


@pytest.mark.parametrize("name,shape,clients,train", [
    ("femnist", (28, 28, 1), 4, 20), ("femnist62", (28, 28, 1), 4, 20),
    ("tff_cifar100", (32, 32, 3), 3, 12)])
def test_tff_image_sets_keep_their_clients(root, name, shape, clients, train):
    d = data.load(name, root=str(root))
    assert d.x_train.shape == (train,) + shape and d.x_train.dtype == np.float32
    assert 0 <= d.x_train.min() and d.x_train.max() <= 1 and d.x_train.max() > 0.9
    assert len(d.clients) == clients
    ids = np.concatenate(d.clients)
    assert sorted(ids.tolist()) == list(range(train))          # disjoint and covering
    assert d.y_train.max() < d.num_classes == tff_sets.TFF_SETS[name]["classes"]


def test_tff_shakespeare_becomes_leaf_windows(root):
    d = data.load("tff_shakespeare", root=str(root))
    assert d.x_train.shape[1] == shakespeare.SEQ_LEN and d.num_classes == 80
    assert len(d.clients) == 2
    # MIRANDA's text (clients are sorted by id) starts with her first snippet
    first = "".join(shakespeare.LEAF_VOCAB[i] for i in d.x_train[d.clients[0][0]])
    assert first.startswith("If by your art")
    # no window crosses into the next client's text
    last = d.clients[0][-1]
    assert last + shakespeare.SEQ_LEN < d.clients[1][0] + 1


def test_tff_set_is_converted_once(root, monkeypatch):
    data.load("femnist", root=str(root))
    monkeypatch.setattr(tff_sets, "_convert", lambda *a: pytest.fail("rebuilt a stored set"))
    assert len(data.load("femnist", root=str(root)).clients) == 4


def test_missing_tff_cache_names_url_and_place(tmp_path):
    with pytest.raises(data.DataUnavailableError) as e:
        data.load("femnist", root=str(tmp_path))
    msg = str(e.value)
    assert "\n" not in msg and "emnist_all.sqlite.lzma" in msg and str(tmp_path / "tff") in msg


def test_store_never_reads_a_half_written_entry(tmp_path):
    store = DataStore(str(tmp_path))
    path = store.path("x", seed=1)
    partial = path.with_name(path.name + ".partial")
    partial.mkdir(parents=True)
    np.savez(partial / "arrays.npz", a=np.ones(3))          # killed before meta.json/rename
    assert store.read(path) is None
    built = store.get_or_build(path, lambda: {"a": np.arange(4)})
    assert store.read(path)["a"].tolist() == [0, 1, 2, 3] == built["a"].tolist()
    assert not partial.exists()


def test_pack_unpack_clients_roundtrip():
    parts = [np.array([3, 1]), np.array([], int), np.array([7])]
    assert [p.tolist() for p in unpack_clients(**pack_clients(parts))] == [[3, 1], [], [7]]


def test_partitions_are_stored_and_reused(tmp_path, monkeypatch):
    cfg = experiment_config.load(None, [f"data_root=\"{tmp_path}\"", "partition=\"dirichlet\"",
                             "partition_param=0.5", "num_clients=20"])
    d = data.load("digits")
    first = partition_clients(cfg, d)
    assert list((tmp_path / "built" / "digits").iterdir())
    import tff_idp.engine.experiment as ex
    monkeypatch.setattr(ex, "dirichlet_label_skew", lambda *a, **k: pytest.fail("recomputed"))
    again = partition_clients(cfg, d)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))


def test_label_shards_equal_sizes_and_few_labels():
    y = np.repeat([0, 1], [760, 240])                       # Adult-like imbalance
    parts = data.label_shards(y, 100, 1, seed=3)
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == 1000
    assert sorted(np.concatenate(parts).tolist()) == list(range(1000))
    labels = [len(np.unique(y[p])) for p in parts]
    assert max(labels) <= 2 and labels.count(2) <= 1
    y10 = np.repeat(np.arange(10), 50)
    parts = data.label_shards(y10, 20, 2, seed=0)
    assert max(len(np.unique(y10[p])) for p in parts) <= 4
    assert parts[0].tolist() == data.label_shards(y10, 20, 2, seed=0)[0].tolist()


ADULT_ROWS = [
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, "
    "Male, 2174, 0, 40, United-States, <=50K",
    "50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, "
    "White, Male, 0, 0, 13, United-States, >50K",
    "38, Private, 215646, HS-grad, 9, Divorced, Handlers-cleaners, Not-in-family, White, Male, "
    "0, 0, 40, ?, <=50K"]


def test_adult_reads_the_uci_format(tmp_path):
    folder = tmp_path / "raw" / "adult"
    folder.mkdir(parents=True)
    (folder / "adult.data").write_text("\n".join(ADULT_ROWS) + "\n\n")
    (folder / "adult.test").write_text("|1x3 Cross validator\n" +
                                       "\n".join(r + "." for r in ADULT_ROWS[:2]) + "\n")
    (tr, y_tr), (te, y_te) = (adult.read_rows(folder / "adult.data"),
                              adult.read_rows(folder / "adult.test"))
    x_tr, x_te = adult.encode(tr, te)
    assert x_tr.shape == (3, 14) and x_te.shape == (2, 14)
    assert y_tr.tolist() == [0, 1, 0] and y_te.tolist() == [0, 1]
    assert 0 <= x_tr.min() and x_tr.max() <= 1
    assert x_tr[1, 0] == 1.0 and x_tr[2, 0] == 0.0     # age min-max scaled
    # the loader reads only the UCI release's files (size and md5): these are refused
    with pytest.raises(data.DataUnavailableError, match="is not the UCI file") as e:
        data.load("adult", root=str(tmp_path))
    assert "\n" not in str(e.value)


def test_adult_missing_offline_points_to_the_standin(tmp_path):
    with pytest.raises(data.DataUnavailableError, match="adult-standin"):
        data.load("adult", root=str(tmp_path))
    d = data.load("adult-standin")
    assert d.note == adult.STANDIN_NOTE and d.num_classes == 2 and d.x_train.shape[1] == 30


def test_natural_partition_needs_a_federated_set():
    with pytest.raises(config.ConfigError, match="partition='natural'"):
        experiment_config.load(None, ["partition=\"natural\""])


def test_natural_partition_picks_a_seeded_subset(root):
    cfg = experiment_config.load(None, ["dataset=\"femnist\"", "partition=\"natural\"", "num_clients=3",
                             f"data_root=\"{root}\"", "model=\"cnn2\"", "budgets=[2.0, 4.0, 8.0]"])
    exp = prepare(cfg)
    assert len(exp.client_indices) == 3
    too_many = experiment_config.load(None, ["dataset=\"femnist\"", "partition=\"natural\"",
                                  "num_clients=9", f"data_root=\"{root}\""])
    with pytest.raises(config.ConfigError, match="num_clients=9: femnist has 4 clients"):
        prepare(too_many)


def test_test_examples_subsamples_the_test_set():
    cfg = experiment_config.load(None, ["test_examples=50", "methods=[\"p_fedavg\"]"])
    assert len(prepare(cfg).data.y_test) == 50


@pytest.mark.parametrize("dataset,model,extra", [
    ("femnist", "cnn2", ["partition=\"natural\"", "num_clients=4"]),
    ("tff_shakespeare", "char_lstm", ["partition=\"natural\"", "num_clients=2"]),
    # TFF's task on the LEAF build: int8 targets of a text view, on the TFF backend
    ("shakespeare-leaf-positions", "char_lstm_torch", ["partition=\"natural\"",
                                                       "num_clients=2"]),
    ("adult-standin", "logistic", ["partition=\"shards\"", "num_clients=40"])])
def test_a_round_runs_on_each_new_source(root, dataset, model, extra):
    from tff_idp.engine.loop import run_method
    cfg = experiment_config.load(None, [f"dataset=\"{dataset}\"", f"model=\"{model}\"", "rounds=1",
                             "expected_rate=0.5", "local_steps=1", "batch_size=2",
                             "budgets=[4.0, 8.0]", "group_ratios=[0.5, 0.5]",
                             f"data_root=\"{root}\"", "keep_fractions=[0.8, 0.9]",
                             "methods=[\"gdpfed_plus\"]", *extra])
    exp = prepare(cfg)
    rows, summary, _ = run_method(exp, "gdpfed_plus", progress=False)
    assert len(rows) == 1 and 0 <= summary.final_test_accuracy <= 1
    assert (summary.data_note is not None) == (dataset == "adult-standin")


def test_two_writers_of_one_store_entry_both_succeed(tmp_path):
    """--jobs N: two processes may build the same partition at once; the first rename wins,
    the second drops its copy (same key, same content) instead of failing."""
    from tff_idp.atomic import AtomicFolder
    path = tmp_path / "built" / "x" / "k=1"
    first, second = AtomicFolder(path, shared=True), AtomicFolder(path, shared=True)
    second.partial = path.with_name(path.name + ".partial-999999999")   # another live writer
    a, b = first.__enter__(), second.__enter__()
    (a / "meta.json").write_text("{}")
    (b / "meta.json").write_text("{}")
    first.__exit__(None, None, None)
    second.__exit__(None, None, None)
    assert (path / "meta.json").is_file()
    assert sorted(p.name for p in path.parent.iterdir()) == ["k=1"]


def test_a_killed_writers_partial_folder_is_removed(tmp_path):
    import subprocess
    import sys
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    store = DataStore(str(tmp_path))
    path = store.path("x", seed=2)
    stale = path.with_name(f"{path.name}.partial-{dead}")
    stale.mkdir(parents=True)
    store.get_or_build(path, lambda: {"a": np.arange(2)})
    assert not stale.exists() and store.read(path)["a"].tolist() == [0, 1]
