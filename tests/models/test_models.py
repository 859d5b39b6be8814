"""Every registered model: output shape and parameter count as documented."""
import numpy as np
import pytest

from tff_idp import models

CASES = {  # name: (kwargs, input shape, output shape, parameters)
    "logistic": ({}, (2, 64), (2, 10), 650),
    "logistic_nobias": ({}, (2, 14), (2, 2), 28),
    "logistic_nobias@image": ({"input_shape": (28, 28, 1), "num_classes": 10},
                              (2, 28, 28, 1), (2, 10), 7840),
    "digits_mlp": ({}, (2, 64), (2, 10), 2410),
    "centaur_mlp": ({}, (2, 28, 28, 1), (2, 10), 236090),   # 784*256+256 + 256*128+128 + ...
    "cnn2": ({}, (2, 28, 28, 1), (2, 10), 582026),
    "cnn2_same": ({}, (2, 28, 28, 1), (2, 10), 1663370),     # McMahan et al. 2017's count
    "cnn3": ({}, (2, 32, 32, 3), (2, 10), 620362),
    "simple_cnn": ({}, (2, 32, 32, 3), (2, 10), 27978),
    "char_lstm": ({}, (2, 80), (2, 80), 817872),
    "resnet18": ({}, (2, 32, 32, 3), (2, 10), 11173962),
    "resnet20": ({}, (2, 32, 32, 3), (2, 10), 272474),
}


def test_every_model_is_covered():
    assert {name.split("@")[0] for name in CASES} == set(models.MODELS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_shape_and_parameters(name):
    kwargs, in_shape, out_shape, params = CASES[name]
    model = models.build(name.split("@")[0], **kwargs)
    assert model.count_params() == params
    x = np.zeros(in_shape, np.int32 if name == "char_lstm" else np.float32)
    assert tuple(model(x).shape) == out_shape
    assert not any("batch_norm" in layer.name for layer in model.layers)


def test_unknown_model():
    with pytest.raises(ValueError, match="model='vgg'"):
        models.build("vgg")
