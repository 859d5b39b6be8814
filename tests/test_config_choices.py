"""Keys with a fixed set of values (``config.CHOICES``): each set is the one the module acting
on the key accepts, and one generic check refuses anything else with one line."""
import dataclasses

import numpy as np
import pytest

from tff_idp import config
from tff_idp.config import CHOICES, ConfigError, ExperimentConfig


@pytest.mark.parametrize("key", sorted(CHOICES))
def test_every_choice_key_refuses_a_value_outside_its_set(key):
    allowed = CHOICES[key]
    assert key in config.KEYS
    assert getattr(ExperimentConfig(), key) in allowed, "the default must be allowed"
    with pytest.raises(ConfigError) as err:
        config.validate(dataclasses.replace(ExperimentConfig(), **{key: "no-such-value"}))
    line = str(err.value)
    assert line.startswith(f"{key}='no-such-value': must be {allowed[0]!r}"), line
    assert "\n" not in line


def test_backends_are_the_ones_the_engine_has():
    from tff_idp.engine.backends import BACKENDS
    assert set(BACKENDS) == set(config.BACKEND_NAMES)


def test_client_optimizers_are_the_ones_client_work_trains_with():
    from tff_idp.algorithms.client_optimizer import OPTIMIZERS
    from tff_idp.algorithms.client_work import ClientTrainer
    assert set(OPTIMIZERS) == set(config.CLIENT_OPTIMIZERS)
    for name in config.CLIENT_OPTIMIZERS:
        assert ClientTrainer(optimizer=name).optimizer.name == name
    with pytest.raises(ValueError, match="client_optimizer='rmsprop'"):
        ClientTrainer(optimizer="rmsprop")


def test_input_normalizations_are_the_ones_the_engine_applies():
    from tff_idp.data import ArrayData
    from tff_idp.engine.experiment import normalized
    rng = np.random.default_rng(0)
    images = ArrayData(name="tiny", x_train=rng.random((6, 4, 4, 1), dtype=np.float32),
                       y_train=np.zeros(6, np.int64),
                       x_test=rng.random((2, 4, 4, 1), dtype=np.float32),
                       y_test=np.zeros(2, np.int64), num_classes=2)
    for how in config.INPUT_NORMALIZATIONS:
        normalized(images, how)
    with pytest.raises(ValueError, match="input_normalization='z'"):
        normalized(images, "z")


def test_owners_refuse_what_the_config_refuses():
    """The sets are the owners' own: each owner refuses a value outside its set."""
    from tff_idp.privacy.mspafl import subsample_rate
    from tff_idp.sampling import sample_cohort
    for mode in CHOICES["sampling"]:
        sample_cohort(np.random.default_rng(0), [np.arange(10)], [0.5], mode)
    with pytest.raises(ValueError, match="sampling='x'"):
        sample_cohort(np.random.default_rng(0), [np.arange(10)], [0.5], "x")
    for mode in CHOICES["data_sampling"]:
        subsample_rate(100, 2, 5, mode)
    with pytest.raises(ValueError, match="data_sampling='x'"):
        subsample_rate(100, 2, 5, "x")
