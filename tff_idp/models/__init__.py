"""Keras model builders, by config name. Models output logits; no batch norm (DP + FedAvg)."""
from __future__ import annotations

from typing import Callable, Dict


def digits_mlp(input_dim: int = 64, num_classes: int = 10):
    """64 -> 32 (ReLU) -> 10 logits: 2,410 parameters."""
    import tensorflow as tf
    return tf.keras.Sequential([
        tf.keras.layers.InputLayer(input_shape=(input_dim,)),
        tf.keras.layers.Dense(32, activation="relu"),
        tf.keras.layers.Dense(num_classes)])


def logistic(input_dim: int = 64, num_classes: int = 10):
    """Multinomial logistic regression: input_dim * classes + classes parameters (650)."""
    import tensorflow as tf
    return tf.keras.Sequential([
        tf.keras.layers.InputLayer(input_shape=(input_dim,)),
        tf.keras.layers.Dense(num_classes)])


MODELS: Dict[str, Callable] = {"digits_mlp": digits_mlp, "logistic": logistic}


def build(name: str, **kwargs):
    if name not in MODELS:
        raise ValueError(f"model={name!r} is not one of {sorted(MODELS)}")
    return MODELS[name](**kwargs)
