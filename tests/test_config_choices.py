"""Keys with a fixed set of values (``experiment_config.CHOICES``) or a numeric range
(``experiment_config.RANGES``): each set or range is declared by the module acting on the key
(a method's own keys in its ``config_keys``), and one generic check refuses anything else with
one line."""
import dataclasses
import re

import numpy as np
import pytest

from tff_idp import config, experiment_config, key_ranges
from tff_idp.config import ConfigError
from tff_idp.experiment_config import CHOICES, ExperimentConfig


@pytest.mark.parametrize("key", sorted(CHOICES))
def test_every_choice_key_refuses_a_value_outside_its_set(key):
    allowed = CHOICES[key]
    assert key in experiment_config.KEYS
    assert getattr(ExperimentConfig(), key) in allowed, "the default must be allowed"
    with pytest.raises(ConfigError) as err:
        experiment_config.validate(dataclasses.replace(ExperimentConfig(),
                                                       **{key: "no-such-value"}))
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
    """Issue 58 item 3, issue 78 item 2: a key's rules are declared by its owner (the core's
    in config, a method's in its ``config_keys``) and checked by one loop; every registered
    method's keys are in the experiment config, none is a core key, and config.py imports
    no method."""
    import ast
    from pathlib import Path
    from tff_idp.methods import METHODS
    assert set(experiment_config.RANGES) <= set(experiment_config.KEYS)
    core = {f.name for f in dataclasses.fields(config.CoreConfig)}
    owned = [k for m in METHODS.values() for k in m.config_keys]
    assert len({k.name for k in owned}) >= 20
    for key in owned:
        assert key.name in experiment_config.KEYS and key.name not in core, key.name
        assert experiment_config.KEYS[key.name].default == key.default
        if key.range is not None:
            assert experiment_config.RANGES[key.name] is key.range, key.name
        if key.choices is not None:
            assert experiment_config.CHOICES[key.name] == key.choices, key.name
    tree = ast.parse(Path(config.__file__).read_text())
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + \
        [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if "methods" in m.split(".")], imported


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
    cfg = dataclasses.replace(experiment_config.ExperimentConfig(), **{key: value})
    with pytest.raises(config.ConfigError, match=re.escape(f"{key}={value!r}: {rule}")):
        experiment_config.validate(cfg)
