"""Every config under runs/ loads and validates; paper 004's Table I configs carry the
paper's accuracies and run at laptop scale (on TFDS' mock data, offline)."""
from pathlib import Path

import pytest
import tensorflow_datasets as tfds

from tff_idp import experiment_config
from tff_idp.run import summary_rows

RUNS = Path(__file__).resolve().parents[1] / "runs"
CONFIGS = sorted(p for p in RUNS.rglob("*.toml") if "[table]" not in p.read_text()
                 and p != RUNS / "status.toml")         # the README status table's rows


@pytest.mark.parametrize("path", CONFIGS, ids=[str(p.relative_to(RUNS)) for p in CONFIGS])
def test_config_validates(path):
    cfg = experiment_config.load(str(path))
    if path.parent.name == "idp_fedavg":
        assert cfg.rounds == 420 and cfg.local_epochs == 15 and cfg.batch_size == 128
        assert cfg.client_optimizer == "adam_keras" and cfg.delta == 1e-4
        assert round(cfg.expected_rate * cfg.num_clients) == 30
        assert set(cfg.reference) == set(cfg.methods)


def test_table1_config_runs_at_laptop_scale(tmp_path):
    from tff_idp.engine.experiment import prepare
    from tff_idp.engine.loop import run_method
    cfg = experiment_config.load(str(RUNS / "idp_fedavg" / "cifar10_pachinko_34-43-23.toml"),
                      ["rounds=2", "local_epochs=1", "num_clients=100", "expected_rate=0.3",
                       f"data_dir=\"{tmp_path}\""])
    with tfds.testing.mock_data(num_examples=400, data_dir=str(tmp_path)):
        exp = prepare(cfg)
    rows, summary, _ = run_method(exp, "idp_fedavg", progress=False)
    assert len(rows) == 2 and summary.privacy["within_budget"]
    table = summary_rows([summary], cfg.reference)
    assert table[0]["paper_%"] == "26.50"
    assert float(table[0]["delta"]) == pytest.approx(100 * summary.final_test_accuracy - 26.5,
                                                     abs=0.01)


def test_femnist_95_0_5_runs_on_a_staged_tff_cache(tmp_path):
    """FEMNIST by writer through TFF's loader (a tiny cache in the real sqlite format)."""
    from tff_idp.engine.experiment import prepare
    from tff_idp.engine.loop import run_method
    from tests.data import tff_sqlite
    (tmp_path / "tff").mkdir()
    tff_sqlite.emnist_db(tmp_path / "tff" / "emnist_all.sqlite", clients=20, per_client=3)
    cfg = experiment_config.load(str(RUNS / "idp_fedavg" / "femnist_noniid_95-0-5.toml"),
                      ["rounds=1", "local_epochs=1", "num_clients=20", "expected_rate=0.3",
                       f"data_root=\"{tmp_path}\""])
    exp = prepare(cfg)
    assert [len(m) for m in exp.group_members] == [19, 1]
    for method in cfg.methods:
        rows, summary, _ = run_method(exp, method, progress=False)
        assert summary.privacy["within_budget"]
    assert summary_rows([summary], cfg.reference)[0]["paper_%"] == "86.90"
