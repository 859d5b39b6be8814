"""Keras model builders, by config name, named as in the papers. Every model outputs logits
and has no batch normalisation (per-example statistics do not mix with client-level DP and
federated averaging); ResNets use GroupNorm. Parameter counts are for the default shapes and
are checked by the tests.
"""
from __future__ import annotations

from typing import Callable, Dict


def _tf():
    import tensorflow as tf
    return tf


def _flat_input(input_dim: int, input_shape):
    """The layers that bring an example to a vector of ``input_dim`` features: the input
    alone for tabular data, the input and a row-major Flatten for images (so the first
    Dense kernel's row j is pixel j, and ``rows:half`` is the image's upper half)."""
    tf = _tf()
    if input_shape is not None and len(tuple(input_shape)) > 1:
        return [tf.keras.Input(tuple(input_shape)), tf.keras.layers.Flatten()]
    return [tf.keras.Input((input_dim,))]


def logistic(input_dim: int = 64, num_classes: int = 10, input_shape=None, **_):
    """Multinomial logistic regression (paper 002's model): input_dim * classes + classes
    parameters (650 on digits; 30 for Adult's 14 features and 2 classes; images flattened)."""
    tf = _tf()
    return tf.keras.Sequential(_flat_input(input_dim, input_shape)
                               + [tf.keras.layers.Dense(num_classes)])


def logistic_nobias(input_dim: int = 14, num_classes: int = 2, input_shape=None, **_):
    """Logistic regression without a bias (paper 002, eqs. 20-21, binary Adult: 2 logits of
    W x, the same function class as ln(1 + exp(-y w.x))): input_dim * classes parameters
    (28 for Adult; 7,840 for 28 x 28 images, flattened, and 10 classes)."""
    tf = _tf()
    return tf.keras.Sequential(_flat_input(input_dim, input_shape)
                               + [tf.keras.layers.Dense(num_classes, use_bias=False)])


def digits_mlp(input_dim: int = 64, num_classes: int = 10, **_):
    """64 -> 32 (ReLU) -> 10 logits: 2,410 parameters."""
    tf = _tf()
    return tf.keras.Sequential([
        tf.keras.Input((input_dim,)), tf.keras.layers.Dense(32, activation="relu"),
        tf.keras.layers.Dense(num_classes)])


def centaur_mlp(input_shape=(28, 28, 1), num_classes: int = 10, **_):
    """CENTAUR's EMNIST model (``models/models.py``, class ``MLP``; paper 001's baselines' code):
    the image flattened, 784 -> 256 -> 128 -> 16 (ReLU after each) -> classes, the last Dense
    the head: 236,090 parameters for 28x28 and 10 classes (head 170)."""
    tf = _tf()
    L = tf.keras.layers
    return tf.keras.Sequential([
        tf.keras.Input(input_shape), L.Flatten(), L.Dense(256, activation="relu"),
        L.Dense(128, activation="relu"), L.Dense(16, activation="relu"), L.Dense(num_classes)])


def cnn2(input_shape=(28, 28, 1), num_classes: int = 10, padding: str = "valid", **_):
    """GDPFed's 2-layer CNN for FMNIST (the paper: "a 2-layer CNN", no sizes): McMahan et
    al. 2017's layers, conv5x5(32) - pool - conv5x5(64) - pool - dense 512 - dense 10, with
    valid padding: 582,026 parameters. ``cnn2_same``: the same layers with same padding,
    McMahan et al.'s stated 1,663,370 parameters (their Sec. 3)."""
    tf = _tf()
    L = tf.keras.layers
    return tf.keras.Sequential([
        tf.keras.Input(input_shape),
        L.Conv2D(32, 5, padding=padding, activation="relu"), L.MaxPool2D(2),
        L.Conv2D(64, 5, padding=padding, activation="relu"), L.MaxPool2D(2),
        L.Flatten(), L.Dense(512, activation="relu"), L.Dense(num_classes)])


def cnn2_same(input_shape=(28, 28, 1), num_classes: int = 10, **_):
    """:func:`cnn2` with same padding (McMahan et al. 2017's 1,663,370 parameters)."""
    return cnn2(input_shape, num_classes, padding="same")


def cnn3(input_shape=(32, 32, 3), num_classes: int = 10, **_):
    """A 3-layer CNN for SVHN (GDPFed; its exact widths are not given): three conv3x3 layers
    (32, 64, 128, same padding) each followed by 2x2 max-pooling, dense 256, dense 10:
    620,362 parameters on 32x32x3."""
    tf = _tf()
    L = tf.keras.layers
    return tf.keras.Sequential([
        tf.keras.Input(input_shape),
        L.Conv2D(32, 3, padding="same", activation="relu"), L.MaxPool2D(2),
        L.Conv2D(64, 3, padding="same", activation="relu"), L.MaxPool2D(2),
        L.Conv2D(128, 3, padding="same", activation="relu"), L.MaxPool2D(2),
        L.Flatten(), L.Dense(256, activation="relu"), L.Dense(num_classes)])


def simple_cnn(input_shape=(32, 32, 3), num_classes: int = 10, **_):
    """Paper 004's small CNN (about 28k parameters on 32x32x3): three blocks of conv3x3 +
    conv3x3 (16, 16 / 24, 24 / 32, 32, same padding) with 2x2 pooling, global average pooling
    and a dense layer: 27,978 parameters. (The paper's figure gives 14 layers without widths;
    these widths match its stated size.)"""
    tf = _tf()
    L = tf.keras.layers
    layers = [tf.keras.Input(input_shape)]
    for width in (16, 24, 32):
        layers += [L.Conv2D(width, 3, padding="same", activation="relu"),
                   L.Conv2D(width, 3, padding="same", activation="relu"), L.MaxPool2D(2)]
    layers += [L.GlobalAveragePooling2D(), L.Dense(num_classes)]
    return tf.keras.Sequential(layers)


def char_lstm(vocab_size: int = 80, seq_len: int = 80, sequence_targets: bool = False, **_):
    """LEAF's Shakespeare model: embedding 8, two LSTM(256), dense over the vocabulary on the
    last step (the next character after 80): 817,872 parameters for LEAF's 80 characters.
    ``sequence_targets`` (a data set with a target at every position, TFF's task): the dense
    layer at every step, the same weights."""
    tf = _tf()
    L = tf.keras.layers
    return tf.keras.Sequential([
        tf.keras.Input((seq_len,), dtype=tf.int32), L.Embedding(vocab_size, 8),
        L.LSTM(256, return_sequences=True), L.LSTM(256, return_sequences=sequence_targets),
        L.Dense(vocab_size)])


def char_lstm_torch(vocab_size: int = 80, seq_len: int = 80, hidden: int = 256,
                    sequence_targets: bool = False, **_):
    """LEAF's Shakespeare model (:func:`char_lstm`'s layers and 817,872 parameters) with
    PyTorch's default initialisers, as its PyTorch ports have it: ``nn.Embedding`` N(0, 1);
    ``nn.LSTM`` every weight U(-1/sqrt(256), 1/sqrt(256)) and its two biases likewise (Keras
    keeps one: the sum of two such draws), no forget-gate offset; ``nn.Linear``
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias. Keras' own initialisers
    (:func:`char_lstm`: embedding U(-0.05, 0.05)) leave the model on the unigram plateau
    under GDPFed's Shakespeare optimiser (SGD, lr 0.1, momentum 0.9, batch 4) for the
    paper's number of steps (docs/gdpfed.md, Shakespeare). ``sequence_targets`` as for
    :func:`char_lstm`."""
    tf = _tf()
    L = tf.keras.layers
    bound = 1.0 / hidden ** 0.5

    # plain functions of TF's global generator: a new draw at every call (an unseeded Keras
    # initializer object returns the same values each time it is called)
    def uniform(shape, dtype=None):
        return tf.random.uniform(shape, -bound, bound, dtype or tf.float32)

    def two_biases(shape, dtype=None):          # b_ih + b_hh
        return uniform(shape, dtype) + uniform(shape, dtype)

    def normal(shape, dtype=None):
        return tf.random.normal(shape, 0.0, 1.0, dtype or tf.float32)

    lstm = dict(kernel_initializer=uniform, recurrent_initializer=uniform,
                bias_initializer=two_biases, unit_forget_bias=False)
    return tf.keras.Sequential([
        tf.keras.Input((seq_len,), dtype=tf.int32),
        L.Embedding(vocab_size, 8, embeddings_initializer=normal),
        L.LSTM(hidden, return_sequences=True, **lstm),
        L.LSTM(hidden, return_sequences=sequence_targets, **lstm),
        L.Dense(vocab_size, kernel_initializer=uniform, bias_initializer=uniform)])


def _group_norm(groups=2):
    return _tf().keras.layers.GroupNormalization(groups=groups)


def _basic_block(x, filters, stride, groups):
    L = _tf().keras.layers
    shortcut = x
    y = L.Conv2D(filters, 3, stride, padding="same", use_bias=False)(x)
    y = L.ReLU()(_group_norm(groups)(y))
    y = L.Conv2D(filters, 3, 1, padding="same", use_bias=False)(y)
    y = _group_norm(groups)(y)
    if stride != 1 or shortcut.shape[-1] != filters:
        shortcut = L.Conv2D(filters, 1, stride, use_bias=False)(shortcut)
        shortcut = _group_norm(groups)(shortcut)
    return L.ReLU()(L.Add()([y, shortcut]))


def resnet18(input_shape=(32, 32, 3), num_classes: int = 10, groups: int = 2, **_):
    """ResNet-18 for 32x32 inputs (GDPFed's CIFAR-10 model; 3x3 stem, no max-pool) with
    GroupNorm(2) in place of BatchNorm: 11,173,962 parameters for 10 classes."""
    tf = _tf()
    L = tf.keras.layers
    inp = tf.keras.Input(input_shape)
    x = L.Conv2D(64, 3, padding="same", use_bias=False)(inp)
    x = L.ReLU()(_group_norm(groups)(x))
    for filters, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        x = _basic_block(x, filters, stride, groups)
        x = _basic_block(x, filters, 1, groups)
    x = L.GlobalAveragePooling2D()(x)
    return tf.keras.Model(inp, L.Dense(num_classes)(x))


def resnet20(input_shape=(32, 32, 3), num_classes: int = 10, groups: int = 2, **_):
    """ResNet-20 (He et al. 2016, CIFAR variant; paper 001) with GroupNorm(2): three stages of
    three basic blocks (16, 32, 64 filters): 272,474 parameters for 10 classes."""
    tf = _tf()
    L = tf.keras.layers
    inp = tf.keras.Input(input_shape)
    x = L.Conv2D(16, 3, padding="same", use_bias=False)(inp)
    x = L.ReLU()(_group_norm(groups)(x))
    for filters, stride in ((16, 1), (32, 2), (64, 2)):
        x = _basic_block(x, filters, stride, groups)
        for _ in range(2):
            x = _basic_block(x, filters, 1, groups)
    x = L.GlobalAveragePooling2D()(x)
    return tf.keras.Model(inp, L.Dense(num_classes)(x))


def with_additive_head(model, name: str = "personal_head"):
    """``model`` (its last layer a Dense head g on features phi) with a second Dense head p
    on the same features, the logits g(phi) + p(phi): PPSGD's additive model (Bietti et al.
    2022; CENTAUR's ``*_PPSGD`` models: a global head and a personal one). The new head is
    built after the model's own layers, so the shared weights start as the plain model's."""
    tf = _tf()
    last = model.layers[-1]
    if type(last).__name__ != "Dense":
        raise ValueError(f"the model's last layer {last.name} is a {type(last).__name__}, "
                         "not a Dense head")
    extra = tf.keras.layers.Dense(last.units, name=name)(last.input)
    return tf.keras.Model(model.inputs, tf.keras.layers.Add()([last.output, extra]),
                          name=f"{model.name}_additive")


def readout(model):
    """The model's linear read-out, when its logits are a sum of Dense layers on one feature
    tensor (a Dense head, or :func:`with_additive_head`'s two): (the feature tensor, the
    Dense layers, per layer the indices of its tensors in ``model.trainable_variables``),
    else None. Features under a read-out depend only on the layers below, so a phase that
    trains the read-out alone (a head's fine-tuning) can compute them once."""
    last = model.layers[-1]
    if type(last).__name__ == "Dense":
        heads = [last]
    elif type(last).__name__ == "Add":
        heads = list(last.inbound_nodes[0].inbound_layers)
        if not all(type(h).__name__ == "Dense" for h in heads):
            return None
    else:
        return None
    inputs = {id(h.input) for h in heads}
    if len(inputs) != 1 or any(h.activation.__name__ != "linear" for h in heads):
        return None
    position = {v.ref(): i for i, v in enumerate(model.trainable_variables)}
    return heads[0].input, heads, [[position[w.ref()] for w in h.trainable_weights]
                                   for h in heads]


MODELS: Dict[str, Callable] = {
    "logistic": logistic, "logistic_nobias": logistic_nobias, "digits_mlp": digits_mlp,
    "centaur_mlp": centaur_mlp, "cnn2": cnn2,
    "cnn2_same": cnn2_same, "cnn3": cnn3,
    "simple_cnn": simple_cnn, "char_lstm": char_lstm, "char_lstm_torch": char_lstm_torch,
    "resnet18": resnet18,
    "resnet20": resnet20,
}


def build(name: str, **kwargs):
    """Model ``name``; its layers are named the same in every build (Keras numbers
    unnamed layers by a process-wide counter, so ``personal = "layers:dense_1"`` would
    otherwise name a different layer, or none, depending on what was built before)."""
    if name not in MODELS:
        raise ValueError(f"model={name!r} is not one of {sorted(MODELS)}")
    _tf().keras.backend.reset_uids()
    return MODELS[name](**kwargs)
