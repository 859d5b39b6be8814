"""The Python API (tff_idp.api, issue 57 item 4): an experiment from a dict, with the
suite's data or your own arrays or TFF ClientData; a run in memory or into the CLI's run
folder, read back identically; refusals one line naming the key."""
import collections

import numpy as np
import pytest

import tff_idp
from tff_idp.config import ConfigError
from tff_idp.data.own import from_arrays, from_client_data

SMALL = {"methods": ["gdpfed"], "rounds": 2, "num_clients": 60, "backend": "fast"}


def test_a_run_in_memory_and_its_folder_read_back_agree(tmp_path):
    exp = tff_idp.Experiment.from_dict(SMALL)
    assert exp.config.rounds == 2 and len(exp.plans["gdpfed"].noise_multipliers) == 3
    run = exp.run("gdpfed")
    assert len(run.rows) == 2 and run.folder is None
    assert len(run.ledger) == 60 and {"epsilon_model_viewers", "epsilon_server"} <= \
        set(run.ledger[0])
    written = exp.run("gdpfed", folder=tmp_path / "gdpfed-seed0")
    again = tff_idp.read_run(tmp_path / "gdpfed-seed0")
    assert again.method == "gdpfed" and again.folder == tmp_path / "gdpfed-seed0"
    assert again.final_test_accuracy == run.final_test_accuracy == written.final_test_accuracy
    assert [r["test_accuracy"] for r in again.rows] == [r["test_accuracy"] for r in run.rows]
    assert again.ledger[5]["participations"] == run.ledger[5]["participations"]
    assert again.privacy["groups"]["0"]["realised_epsilon"] == pytest.approx(
        run.privacy["groups"]["0"]["realised_epsilon"])


def _arrays(n=400):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 5)).astype(np.float32)
    return x, (x[:, 0] > 0).astype(np.int64)


def test_your_own_arrays_train_and_name_themselves_by_content():
    x, y = _arrays()
    data = from_arrays(x[:300], y[:300], x[300:], y[300:])
    assert data.name.startswith("own:") and data.num_classes == 2
    assert from_arrays(x[:300], y[:300], x[300:], y[300:]).name == data.name
    assert from_arrays(x[:300], 1 - y[:300], x[300:], y[300:]).name != data.name
    exp = tff_idp.Experiment.from_dict({**SMALL, "methods": ["p_fedavg"], "rounds": 5,
                                        "num_clients": 30, "expected_rate": 0.5}, data=data)
    assert exp.run("p_fedavg").final_test_accuracy > 0.8      # a linear rule, learnt


def test_your_own_clients_are_the_natural_partition():
    x, y = _arrays()
    clients = [np.arange(i * 10, i * 10 + 10) for i in range(30)]
    data = from_arrays(x[:300], y[:300], x[300:], y[300:], clients=clients)
    exp = tff_idp.Experiment.from_dict({**SMALL, "partition": "natural", "num_clients": 30},
                                       data=data)
    assert [list(c) for c in exp.prepared.client_indices] == [list(c) for c in clients]


def test_tff_client_data_becomes_clients():
    from tff_idp.runtime import import_tff
    tff = import_tff()
    x, y = _arrays(120)

    def client_data(lo, hi, per):
        return tff.simulation.datasets.TestClientData({
            f"c{i:02d}": collections.OrderedDict(x=x[j:j + per], y=y[j:j + per].astype(np.int32))
            for i, j in enumerate(range(lo, hi, per))})

    data = from_client_data(client_data(0, 90, 3), client_data(90, 120, 5))
    assert len(data.clients) == 30 and len(data.y_test) == 30
    np.testing.assert_array_equal(data.x_train[data.clients[1]], x[3:6])
    with pytest.raises(ValueError, match="x_key='pixels': not a field of client 'c00'"):
        from_client_data(client_data(0, 90, 3), client_data(90, 120, 5), x_key="pixels")


@pytest.mark.parametrize("call,needle", [
    (lambda: tff_idp.Experiment.from_dict({"methodz": ["gdpfed"]}), "methodz"),
    (lambda: tff_idp.Experiment.from_dict({"methods": ["gdpfed+"]}), "methods='gdpfed+'"),
    (lambda: tff_idp.Experiment.from_dict(["gdpfed"]), "values=['gdpfed']: must be a dict"),
    (lambda: tff_idp.Experiment.from_dict({**SMALL, "dataset": "digits"},
                                          data=from_arrays(*_split())),
     "dataset='digits': leave it out with data="),
    (lambda: tff_idp.Experiment.from_dict({**SMALL, "partition": "natural"},
                                          data=from_arrays(*_split())),
     "partition='natural': your data has no clients of its own"),
    (lambda: tff_idp.Experiment.from_dict(SMALL).run("dp_fedavg"),
     "method='dp_fedavg': not among this experiment's methods (gdpfed)"),
    (lambda: tff_idp.Experiment.from_dict(SMALL).run("gdpfed", backend="gpu"),
     "backend='gpu': must be 'tff' or 'fast'"),
])
def test_refusals_are_one_line_naming_the_key(call, needle):
    with pytest.raises(ConfigError) as e:
        call()
    assert needle in str(e.value) and "\n" not in str(e.value)


def _split():
    x, y = _arrays()
    return x[:300], y[:300], x[300:], y[300:]


def test_reading_what_is_not_a_run_folder_is_one_line(tmp_path):
    with pytest.raises(ValueError, match="not a complete run folder") as e:
        tff_idp.read_run(tmp_path)
    assert "\n" not in str(e.value)
