"""scripts/random_classifier.py: a linear model of pure noise is at chance on balanced
classes, and its accuracy does not depend on the noise's scale (argmax of x W)."""
import importlib.util
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "random_classifier.py"
spec = importlib.util.spec_from_file_location("random_classifier", SCRIPT)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)


def test_pure_noise_models_sit_at_chance_on_balanced_classes():
    rng = np.random.default_rng(1)
    centres = rng.uniform(0, 1, (10, 50))
    y = np.repeat(np.arange(10), 100)
    x = (centres[y] + 0.3 * rng.standard_normal((1000, 50))).astype(np.float32)
    acc = mod.noise_accuracies(x, y, draws=400, seed=0)
    assert abs(acc.mean() - 10.0) < 1.0
    assert acc.std() > 1.0                    # clustered classes: whole classes flip together


def test_the_accuracy_does_not_depend_on_the_noise_scale():
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 1, (300, 20)).astype(np.float32)
    y = rng.integers(0, 10, 300)
    a = mod.noise_accuracies(x, y, draws=5, seed=3)
    b = mod.noise_accuracies(10.0 * x, y, draws=5, seed=3)   # x W scaled = W scaled
    assert np.array_equal(a, b)
