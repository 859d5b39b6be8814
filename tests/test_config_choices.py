"""Keys with a fixed set of values (``config.CHOICES``) or a numeric range (``config.RANGES``):
each set or range is declared by the module acting on the key, and one generic check refuses
anything else with one line."""
import dataclasses
import re

import numpy as np
import pytest

from tff_idp import config, key_ranges
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


def test_every_range_is_a_config_key_and_each_methods_keys_are_checked():
    """Issue 58 item 3: a numeric key's range is declared by its owner (the engine's in
    config, a method's in its module) and checked by one loop."""
    from tff_idp.methods import fedrep, mspafl, pfeddsu
    assert set(config.RANGES) <= set(config.KEYS)
    for owner in (fedrep, mspafl, pfeddsu):
        for key, rng in owner.KEY_RANGES.items():
            assert config.RANGES[key] is rng, key


@pytest.mark.parametrize("rng, inside, outside, rule", [
    (key_ranges.POSITIVE, [1e-12, 5.0], [0.0, -1.0, float("nan")], "must be positive"),
    (key_ranges.AT_LEAST_ONE, [1, 7], [0, -3], "must be >= 1"),
    (key_ranges.NON_NEGATIVE, [0.0, 2.0], [-1e-9], "must be >= 0"),
    (key_ranges.PROBABILITY_OPEN, [1e-9, 0.5], [0.0, 1.0], "must be in (0, 1)"),
    (key_ranges.Range(0, 1, low_open=True, why="the fraction kept"), [1.0, 0.3], [0.0, 1.01],
     "must be in (0, 1]: the fraction kept"),
    (key_ranges.Range(0, 1, high_open=True), [0.0, 0.99], [1.0, -0.1], "must be in [0, 1)"),
])
def test_a_range_holds_inside_refuses_outside_and_says_its_rule(rng, inside, outside, rule):
    assert rng.rule() == rule
    for v in inside:
        key_ranges.check("k", v, rng)
    key_ranges.check("k", None, rng)                       # unset: not checked
    for v in outside:
        with pytest.raises(config.ConfigError) as e:
            key_ranges.check("k", v, rng)
        assert str(e.value) == f"k={v!r}: {rule}"


@pytest.mark.parametrize("key, value, rule", [
    ("dsu_sparsity", 0.0, "must be in (0, 1]: the fraction kept"),
    ("checkin_beta", -1.0, "must be in (0, 1): a fraction of the clients (002 Theorem 2)"),
    ("personal_steps", 0, "must be >= 1"),
    ("momentum", 1.0, "must be in [0, 1)"),
])
def test_validate_refuses_a_key_out_of_its_owners_range(key, value, rule):
    cfg = dataclasses.replace(config.ExperimentConfig(), **{key: value})
    with pytest.raises(config.ConfigError, match=re.escape(f"{key}={value!r}: {rule}")):
        config.validate(cfg)
