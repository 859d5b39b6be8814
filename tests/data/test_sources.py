"""Real-data loaders exercised offline: TFDS' own mocking stands in for the prepared files."""
import numpy as np
import pytest
import tensorflow_datasets as tfds

from tff_idp import experiment_config, data


@pytest.mark.parametrize("name,shape,classes", [("fashion_mnist", (28, 28, 1), 10),
                                                ("svhn_cropped", (32, 32, 3), 10),
                                                ("cifar10", (32, 32, 3), 10),
                                                ("cifar100", (32, 32, 3), 100)])
def test_tfds_loader_shapes_and_scaling(tmp_path, name, shape, classes):
    with tfds.testing.mock_data(num_examples=40, data_dir=str(tmp_path)):
        d = data.load(name, data_dir=str(tmp_path))
    assert d.x_train.shape == (40,) + shape and d.x_test.shape == (40,) + shape
    assert d.x_train.dtype == np.float32 and 0 <= d.x_train.min() and d.x_train.max() <= 1
    assert d.y_train.dtype == np.int32 and d.y_train.max() < classes == d.num_classes


def test_missing_tfds_data_is_a_clear_error(tmp_path):
    with pytest.raises(data.DataUnavailableError, match="dataset='cifar10': not prepared"):
        data.load("cifar10", data_dir=str(tmp_path / "none"))


def test_a_config_can_train_a_round_on_a_tfds_set_with_a_paper_model(tmp_path):
    from tff_idp.engine.experiment import prepare
    from tff_idp.engine.loop import run_method
    cfg = experiment_config.load(None, ["dataset=\"fashion_mnist\"", "model=\"cnn2\"", "num_clients=30",
                             "rounds=1", "expected_rate=0.3", "local_steps=1",
                             "budgets=[2.0, 4.0, 8.0]", f"data_dir=\"{tmp_path}\"",
                             "methods=[\"gdpfed_plus\"]"])
    with tfds.testing.mock_data(num_examples=90, data_dir=str(tmp_path)):
        exp = prepare(cfg)
    rows, summary, ledger = run_method(exp, "gdpfed_plus", progress=False)
    assert len(rows) == 1 and 0 <= summary.final_test_accuracy <= 1
    assert summary.privacy["within_budget"]
