"""``input_normalization``: the training set's per-channel statistics, applied to train and
test alike, checked against numpy; refused (one line) where it would be ignored."""
import numpy as np
import pytest

from tff_idp import experiment_config
from tff_idp.config import ConfigError
from tff_idp.data.types import ArrayData
from tff_idp.engine.experiment import normalized, prepare


def test_standardize_uses_the_training_sets_channel_statistics():
    rng = np.random.default_rng(0)
    x_tr = rng.uniform(0, 1, (50, 4, 4, 3)).astype(np.float32) * np.array([1, 0.5, 0.2],
                                                                          np.float32)
    x_te = rng.uniform(0, 1, (20, 4, 4, 3)).astype(np.float32)
    d = ArrayData("imgs", x_tr, np.zeros(50, np.int32), x_te, np.zeros(20, np.int32), 2)
    assert normalized(d, "unit") is d
    out = normalized(d, "standardize")
    flat = out.x_train.reshape(-1, 3)
    np.testing.assert_allclose(flat.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(flat.std(0), 1, atol=1e-4)
    mean, std = x_tr.reshape(-1, 3).mean(0), x_tr.reshape(-1, 3).std(0)
    np.testing.assert_allclose(out.x_test, (x_te - mean) / std, rtol=1e-5, atol=1e-5)
    assert out.x_train.dtype == np.float32 and d.x_train is x_tr      # the input untouched


def test_standardize_is_refused_for_non_image_data_and_bad_values():
    with pytest.raises(ConfigError, match="input_normalization='standardize': for image"):
        prepare(experiment_config.load(None, ['input_normalization="standardize"']))   # digits: flat
    with pytest.raises(ConfigError, match="input_normalization='z'"):
        experiment_config.load(None, ['input_normalization="z"'])
