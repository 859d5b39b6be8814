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
    "char_lstm_torch": ({}, (2, 80), (2, 80), 817872),
    # TFF's task: the dense layer at every position, the same weights
    "char_lstm@positions": ({"sequence_targets": True}, (2, 80), (2, 80, 80), 817872),
    "char_lstm_torch@positions": ({"sequence_targets": True}, (2, 80), (2, 80, 80), 817872),
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
    x = np.zeros(in_shape, np.int32 if name.startswith("char_lstm") else np.float32)
    assert tuple(model(x).shape) == out_shape
    assert not any("batch_norm" in layer.name for layer in model.layers)


def test_unknown_model():
    with pytest.raises(ValueError, match="model='vgg'"):
        models.build("vgg")


def test_char_lstm_torch_draws_as_pytorch_initialises_leafs_model():
    """nn.Embedding N(0, 1); nn.LSTM U(+-1/16) weights, b_ih + b_hh in (-1/8, 1/8) with no
    forget-gate offset; nn.Linear U(+-1/sqrt(256)); Keras' char_lstm draws its embedding
    from U(+-0.05) and sets the forget gate's bias to 1."""
    import tensorflow as tf
    tf.keras.utils.set_random_seed(0)
    emb, k1, r1, b1, k2, r2, b2, w, b = [v.numpy() for v in
                                         models.build("char_lstm_torch").weights]
    assert abs(emb.std() - 1.0) < 0.1 and abs(emb.mean()) < 0.1
    for kernel in (k1, r1, k2, r2, w, b):
        assert np.abs(kernel).max() <= 1 / 16 and np.abs(kernel).max() > 0.06
    for bias in (b1, b2):
        assert np.abs(bias).max() <= 1 / 8 and np.abs(bias).max() > 0.1
        assert abs(bias[256:512].mean()) < 0.02          # the forget gate: no offset
        assert abs(bias.std() - (2 / 3) ** 0.5 / 16) < 0.005   # the sum of two U(+-1/16)
    assert not np.allclose(k2[:8], k1) and not np.allclose(r1, r2)   # every draw its own
    keras = models.build("char_lstm").weights
    assert np.abs(keras[0].numpy()).max() <= 0.05
    assert np.allclose(keras[3].numpy()[256:512], 1.0)
