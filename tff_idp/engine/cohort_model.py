"""A Keras model applied to a whole cohort at once, each client with its own weights.

``CohortModel(keras_model)`` reads the model's layers and gives ``apply(params, x)``: logits
``[K, B, classes]`` for inputs ``[K, B, ...]`` and per-client weights ``params`` (one tensor
``[K, ...]`` per trainable variable, in ``model.trainable_variables`` order). The gradient of
the summed per-client losses with respect to ``params`` is then every client's own gradient,
so K clients take one local step in one batched computation (FedJAX's ``for_each_client``
with the client as a batch dimension; STYLE.md 2).

How each layer is batched over clients:
- ``Conv2D``: one grouped convolution with K groups (``feature_group_count``): the clients'
  activations sit side by side in the channel axis, ``[B, H, W, K*C]``, and the filters in
  ``[kh, kw, C, K*O]``, so client k's channels only meet client k's filter. Pooling, ReLU and
  bias work on that layout directly; activations stay in it from one convolution to the next.
- ``Dense``: a batched matrix product ``[K, B, i] x [K, i, o]``; ``Flatten`` moves the client
  axis to the front.
- ``Embedding``: a per-client gather; ``LSTM``: Keras' cell (gates i, f, c, o; tanh and
  sigmoid) with per-client kernels, scanned over time.

- ``GroupNormalization``: client k's G groups are a block of the K*G groups of the
  side-by-side channels, so one group norm with K*G groups; ``Add`` adds in either layout.

``CohortModel.supports(model)`` says whether the model (``Sequential`` or a functional graph
with one input and one output, each layer used once) is built only of ``InputLayer``,
``Conv2D``, ``MaxPooling2D``, ``AveragePooling2D``, ``GlobalAveragePooling2D``, ``Flatten``,
``Dense``, ``ReLU``, ``Activation``, ``Embedding``, ``LSTM`` (Keras' default activations),
``GroupNormalization`` and ``Add``: every model of ``tff_idp.models``. For any other model
the fast backend trains the cohort's clients one after another
(``tests/engine/test_cohort_model.py`` checks that each client gets its own Keras output and
gradient).

Why the layers' forward math is written again here rather than called: a Keras layer holds one
set of weights in its variables, and calling it K times (or under ``tf.vectorized_map``, which
cannot vectorize over variables) runs K small kernels where one grouped convolution or batched
matrix product does the cohort's work (2.55x stock TFF's round, docs/backends.md). The source
of truth stays Keras: this class reads each layer's configuration and weights' order from the
model, the step that trains on its output is the same ``ClientTrainer.step`` as the Keras
path's, and the test above holds the two to 1e-5.
"""
from __future__ import annotations

from typing import List, NamedTuple, Optional

import tensorflow as tf

L = tf.keras.layers

# layout of an activation: "spatial" = [B, H, W, K*C] (clients side by side in channels),
# "clients" = [K, B, ...] (client axis first)
_SPATIAL, _CLIENTS = "spatial", "clients"


def _inputs_of(model, layer) -> list:
    """The layers whose outputs ``layer`` takes (the previous one in a Sequential model)."""
    if isinstance(model, tf.keras.Sequential):
        i = model.layers.index(layer)
        return [model.layers[i - 1]] if i > 0 else []
    return list(tf.nest.flatten(layer.inbound_nodes[0].inbound_layers))


def _unsupported_reason(model) -> Optional[str]:
    if not isinstance(model, tf.keras.Model) or len(model.inputs) != 1 \
            or len(model.outputs) != 1:
        return f"{type(model).__name__} is not a one-input, one-output keras model"
    if model.outputs[0]._keras_history.layer is not model.layers[-1]:
        return "its last layer is not its output"
    owned = []
    for layer in model.layers:
        if len(layer.inbound_nodes) != 1:
            return f"layer {layer.name} is used {len(layer.inbound_nodes)} times"
        name = type(layer).__name__
        if layer.non_trainable_weights:
            return f"layer {layer.name} ({name}) has non-trainable weights"
        if isinstance(layer, L.Embedding) and layer.mask_zero:
            return f"layer {layer.name} (Embedding) masks zeros"
        if isinstance(layer, L.Conv2D):
            if type(layer) is not L.Conv2D or layer.groups != 1 \
                    or layer.data_format != "channels_last":
                return f"layer {layer.name} ({name}) is not a plain channels-last Conv2D"
        elif isinstance(layer, L.LSTM):
            if (layer.activation is not tf.keras.activations.tanh
                    or layer.recurrent_activation is not tf.keras.activations.sigmoid
                    or layer.go_backwards or layer.stateful or not layer.use_bias
                    or layer.dropout or layer.recurrent_dropout):
                return f"layer {layer.name} (LSTM) has non-default settings"
        elif isinstance(layer, (L.MaxPooling2D, L.AveragePooling2D)):
            if layer.data_format != "channels_last":
                return f"layer {layer.name} ({name}) is not channels-last"
        elif isinstance(layer, L.GroupNormalization):
            if layer.axis not in (-1, 3):
                return f"layer {layer.name} (GroupNormalization) is not over the last axis"
        elif isinstance(layer, L.Add):
            pass
        elif not isinstance(layer, (L.InputLayer, L.GlobalAveragePooling2D, L.Flatten, L.Dense,
                                    L.ReLU, L.Activation, L.Embedding)):
            return f"layer {layer.name} ({name}) has no cohort-batched form"
        owned += layer.trainable_weights
    if [v.ref() for v in owned] != [v.ref() for v in model.trainable_variables]:
        return "the layers' weights are not the model's trainable variables in order"
    return None


def _not_converted(fn):
    """Called as written inside a ``tf.function``, not rewritten by AutoGraph: this module's
    control flow is Python's over layers and shapes known when tracing (no tensor decides a
    branch), so AutoGraph's conversion of it (0.6 s of CPU of a run's first trace, the
    layer functions beneath included; docs/backends.md) changes nothing in the graph."""
    return tf.autograph.experimental.do_not_convert(fn)


class CohortModel:
    """``apply(params, x)`` of a supported Keras model for K clients at once (module doc)."""

    def __init__(self, model: tf.keras.Model):
        reason = _unsupported_reason(model)
        if reason is not None:
            raise ValueError(f"model {model.name!r} cannot be batched over clients: {reason}")
        self.model = model
        self._slots = []            # (layer, indices of its weights in trainable_variables)
        index = 0
        for layer in model.layers:
            n = len(layer.trainable_weights)
            self._slots.append((layer, list(range(index, index + n))))
            index += n
        from ..models import readout
        found = readout(model)      # logits = sum of Dense layers on one feature tensor
        self._heads, self.readout_tensors, self._feature_layer = [], None, None
        if found is not None:
            tensor, heads, tensors = found
            self._feature_layer = tensor._keras_history.layer
            self._heads = list(zip(heads, tensors))
            self.readout_tensors = [i for idx in tensors for i in idx]

    def dense_kernels(self) -> list:
        """(layer, index in ``trainable_variables``) of every Dense layer's kernel."""
        return [(layer, idx[0]) for layer, idx in self._slots if isinstance(layer, L.Dense)]

    @staticmethod
    def supports(model) -> bool:
        return _unsupported_reason(model) is None

    @staticmethod
    def why_not(model) -> Optional[str]:
        return _unsupported_reason(model)

    @_not_converted
    def apply(self, params: List, x: tf.Tensor, upto=None, record=None) -> tf.Tensor:
        """Logits [K, B, ...] of every client's model on its own inputs ``x`` [K, B, ...]
        (``upto``: the output of that layer instead, [K, B, ...]). A Dense kernel in
        ``params`` may be a :class:`FactoredKernel`; ``record(rows, outputs)`` is then called
        for each such layer in order with its inputs as rows [K, n, i] and its
        pre-activation outputs [K, n, o] (d loss / d outputs, with the inputs, is the
        kernel's gradient), and its result taken as the outputs (a tape may watch them)."""
        k = tf.shape(x)[0]
        out = {}                                  # layer name -> (activation, layout)
        for layer, idx in self._slots:
            w = [params[i] for i in idx]
            if isinstance(layer, L.InputLayer):
                out[layer.name] = (x, _CLIENTS)
                continue
            ins = [out[p.name] for p in _inputs_of(self.model, layer)]
            if not ins:                           # a Sequential model's first layer
                ins = [(x, _CLIENTS)]
            out[layer.name] = _apply_layer(layer, ins, w, k, record)
            if layer is upto:
                break
        h, layout = out[(upto or self.model.layers[-1]).name]
        return _to_clients(h, layout, k)

    @_not_converted
    def features(self, params: List[tf.Tensor], x: tf.Tensor, chunk: int = 256,
                 images: int = 2048) -> tf.Tensor:
        """The read-out's input features [K, n, f] of every client's examples ``x``
        [K, n, ...], at most ``chunk`` examples per client and ``images`` in all (K clients
        x the examples each) at a time, never more than a client has: the forward pass's
        activations are held for that many examples only (memory; a piece padded to 256
        examples a client was 15,360 images for 60 clients with 45 examples each)."""
        if self._feature_layer is None:
            raise ValueError(f"model {self.model.name!r} has no linear read-out")
        k, n = tf.shape(x)[0], tf.shape(x)[1]
        if isinstance(self._feature_layer, L.InputLayer):     # a read-out on the inputs
            return tf.reshape(x, [k, n, -1])
        chunk = tf.maximum(1, tf.minimum(tf.minimum(chunk, n), images // k))
        pad = (-n) % chunk
        x = tf.pad(x, [[0, 0], [0, pad]] + [[0, 0]] * (len(x.shape) - 2))
        pieces = tf.reshape(x, tf.concat([[k, (n + pad) // chunk, chunk], tf.shape(x)[2:]], 0))
        pieces = tf.transpose(pieces, tf.concat([[1, 0], tf.range(2, tf.rank(pieces))], 0))
        feats = tf.map_fn(_not_converted(
            lambda xb: self.apply(params, xb, upto=self._feature_layer)), pieces,
            fn_output_signature=tf.float32)                               # [c, K, chunk, f]
        feats = tf.transpose(feats, [1, 0, 2, 3])
        return tf.reshape(feats, [k, n + pad, -1])[:, :n]

    @_not_converted
    def apply_readout(self, params: List[tf.Tensor], feats: tf.Tensor) -> tf.Tensor:
        """Logits [K, B, classes] from features [K, B, f] and the read-out's tensors
        (``readout_tensors`` order): the sum of its Dense layers."""
        out, pos = None, 0
        for layer, idx in self._heads:
            w = params[pos:pos + len(idx)]
            pos += len(idx)
            y = _dense(feats, w, layer.use_bias)
            out = y if out is None else out + y
        return out


def _apply_layer(layer, ins, w, k, record=None):
    """One layer for K clients: (output, layout) from its inputs' (activation, layout)."""
    h, layout = ins[0]
    if isinstance(layer, L.Add):
        if all(lay == layout for _, lay in ins):
            return tf.add_n([t for t, _ in ins]), layout
        return tf.add_n([_to_clients(t, lay, k) for t, lay in ins]), _CLIENTS
    if isinstance(layer, L.Conv2D):
        return layer.activation(_conv(layer, _to_spatial(h, layout, k), w, k)), _SPATIAL
    if isinstance(layer, (L.MaxPooling2D, L.AveragePooling2D)):
        pool = tf.nn.max_pool2d if isinstance(layer, L.MaxPooling2D) else tf.nn.avg_pool2d
        return pool(_to_spatial(h, layout, k), layer.pool_size, layer.strides,
                    layer.padding.upper()), _SPATIAL
    if isinstance(layer, L.GroupNormalization):
        return _group_norm(layer, _to_spatial(h, layout, k), w, k), _SPATIAL
    if isinstance(layer, L.GlobalAveragePooling2D):
        h = _to_clients(h, layout, k)
        return tf.reduce_mean(h, axis=[2, 3], keepdims=layer.keepdims), _CLIENTS
    if isinstance(layer, L.Flatten):
        h = _to_clients(h, layout, k)
        return tf.reshape(h, [k, tf.shape(h)[1], -1]), _CLIENTS
    if isinstance(layer, L.Dense):
        z = _dense(_to_clients(h, layout, k), w, layer.use_bias, record)
        return layer.activation(z), _CLIENTS
    if isinstance(layer, (L.ReLU, L.Activation)):
        return layer(h), layout                   # elementwise: any layout
    if isinstance(layer, L.Embedding):
        return tf.gather(w[0], _to_clients(h, layout, k), batch_dims=1), _CLIENTS
    if isinstance(layer, L.LSTM):
        return _lstm(layer, _to_clients(h, layout, k), w), _CLIENTS
    raise ValueError(f"layer {layer.name} has no cohort-batched form")


def _to_spatial(h, layout, k):
    """[K, B, H, W, C] -> [B, H, W, K*C]."""
    if layout == _SPATIAL:
        return h
    s = tf.shape(h)
    h = tf.transpose(h, [1, 2, 3, 0, 4])
    return tf.reshape(h, [s[1], s[2], s[3], k * s[4]])


def _to_clients(h, layout, k):
    """[B, H, W, K*C] -> [K, B, H, W, C]."""
    if layout == _CLIENTS:
        return h
    s = tf.shape(h)
    h = tf.reshape(h, [s[0], s[1], s[2], k, s[3] // k])
    return tf.transpose(h, [3, 0, 1, 2, 4])


def _conv(layer, h, w, k):
    """Conv2D of K clients as one convolution with K groups: filters [K, kh, kw, C, O] ->
    [kh, kw, C, K*O]; output channel block k is client k's."""
    kernel = w[0]
    s = tf.shape(kernel)
    f = tf.reshape(tf.transpose(kernel, [1, 2, 3, 0, 4]), [s[1], s[2], s[3], k * s[4]])
    y = tf.nn.conv2d(h, f, strides=layer.strides, padding=layer.padding.upper(),
                     dilations=layer.dilation_rate)
    if layer.use_bias:
        y = y + tf.reshape(w[1], [-1])           # [K, O] -> [K*O], client-major like y
    return y


def _group_norm(layer, h, w, k):
    """GroupNormalization (Wu & He 2018; Keras' layer) of K clients in the [B, H, W, K*C]
    layout: client k's G groups are channel blocks K*G in all, so it is one group norm with
    K*G groups, and gamma/beta [K, C] line up with the channels as [K*C]."""
    s = tf.shape(h)
    groups = k * layer.groups
    g = tf.reshape(h, [s[0], s[1], s[2], groups, s[3] // groups])
    mean, var = tf.nn.moments(g, axes=[1, 2, 4], keepdims=True)
    weights = iter(w)
    gamma = tf.reshape(next(weights), [1, 1, 1, groups, -1]) if layer.scale else None
    beta = tf.reshape(next(weights), [1, 1, 1, groups, -1]) if layer.center else None
    out = tf.nn.batch_normalization(g, mean, var, beta, gamma, layer.epsilon)
    return tf.reshape(out, s)


class FactoredKernel(NamedTuple):
    """K clients' Dense kernels as one shared matrix plus a low-rank change each,
    ``W_k = shared + xs[k]^T ds[k]`` (shared [i, o], xs [K, R, i], ds [K, R, o]): what SGD
    with momentum leaves after a few local steps (``tff_idp.engine.low_rank``), applied
    without forming any client's [i, o] matrix."""
    shared: tf.Tensor
    xs: tf.Tensor
    ds: tf.Tensor

    def times(self, rows):
        """rows [K, n, i] times each client's kernel: rows W0 + (rows xs^T) ds, [K, n, o]
        (issue 79's forward; its gradient to the rows, dy W0^T + (dy ds^T) xs, is
        TensorFlow's of this expression)."""
        s = tf.shape(rows)
        common = tf.matmul(tf.reshape(rows, [-1, s[2]]), self.shared)
        common = tf.reshape(common, tf.stack([s[0], s[1], tf.shape(self.shared)[1]]))
        return common + tf.matmul(tf.matmul(rows, self.xs, transpose_b=True), self.ds)


def _dense(h, w, use_bias, record=None):
    """[K, B, ..., i] x [K, i, o] (+ [K, o]); a :class:`FactoredKernel` in the low-rank
    form (its rows and outputs passed through ``record``, :meth:`CohortModel.apply`)."""
    shape = tf.shape(h)
    flat = tf.reshape(h, [shape[0], -1, shape[-1]])
    factored = isinstance(w[0], FactoredKernel)
    y = w[0].times(flat) if factored else tf.matmul(flat, w[0])
    if use_bias:
        y = y + w[1][:, None, :]
    if factored and record is not None:
        y = record(flat, y)
    out_dim = tf.shape(w[0].shared if factored else w[0])[-1:]
    return tf.reshape(y, tf.concat([shape[:-1], out_dim], 0))


def _lstm(layer, h, w):
    """Keras' LSTM (gates i, f, c, o; c' = f c + i tanh(z_c), h' = o tanh(c')) per client:
    inputs [K, B, T, i], kernels [K, i, 4u] and [K, u, 4u], bias [K, 4u]. The input
    projection of every step is one batched product before the recurrence (and its gradient
    two after it); the recurrence is :func:`_lstm_recurrence`, time-major. The products are
    ``tf.matmul`` on [K, B*T, .] with explicit transposes rather than ``tf.einsum``, whose
    own transposes cost more than the products on a CPU (docs/backends.md, "Lanes")."""
    kernel, recurrent, bias = w
    shape = tf.shape(h)
    k, b, t = shape[0], shape[1], shape[2]
    xz = tf.matmul(tf.reshape(h, [k, b * t, shape[3]]), kernel) + bias[:, None, :]
    xz = tf.transpose(tf.reshape(xz, [k, b, t, -1]), [2, 0, 1, 3])       # time-major
    hs = _lstm_recurrence(xz, recurrent)
    if layer.return_sequences:
        return tf.transpose(hs, [1, 2, 0, 3])
    return hs[-1]


@tf.custom_gradient
def _lstm_recurrence(xz, recurrent):
    """Hidden states hs [T, K, B, u] of the LSTM recurrence z_t = xz_t + h_{t-1} U from
    h_0 = c_0 = 0, with xz [T, K, B, 4u] (each step's input projection) and per-client U
    [K, u, 4u], and its gradient by backpropagation through time written out.

    Why by hand: differentiating a scan makes TensorFlow add each step's
    ``h_{t-1}^T dz_t`` to U's gradient inside the backward loop, a read and write of all K
    clients' [u, 4u] matrices per step (80 per sequence) for a rank-B update. Here the
    backward scan carries only dh and dc, stores dz_t, and U's gradient is one product
    summed over steps and sequences after it: sum_t h_{t-1}^T dz_t. Same arithmetic, terms
    summed in another order (tests/engine/test_cohort_model.py checks it against Keras).

    Per step, with a = (i, f, g, o) = (sigmoid, sigmoid, tanh, sigmoid)(z), c = f c_prev +
    i g, h = o tanh(c), and dh = (dh from above) + dz_{t+1} U^T:
    dc = dc_{t+1} f_{t+1} + dh o (1 - tanh^2 c); dz = (dc g i(1-i), dc c_prev f(1-f),
    dc i (1-g^2), dh tanh(c) o(1-o))."""
    k, b = tf.shape(xz)[1], tf.shape(xz)[2]
    zeros = tf.zeros(tf.stack([k, b, tf.shape(recurrent)[1]]), xz.dtype)

    def cell(carry, z_x):
        h_prev, c_prev, _ = carry
        z = z_x + tf.matmul(h_prev, recurrent)
        i, f, g, o = tf.split(z, 4, axis=-1)
        i, f, g, o = tf.sigmoid(i), tf.sigmoid(f), tf.tanh(g), tf.sigmoid(o)
        c = f * c_prev + i * g
        return o * tf.tanh(c), c, tf.concat([i, f, g, o], -1)

    hs, cs, acts = tf.scan(cell, xz, initializer=(zeros, zeros, tf.zeros_like(xz[0])))

    def grad(dhs):
        recurrent_t = tf.transpose(recurrent, [0, 2, 1])
        c_prev = tf.concat([zeros[None], cs[:-1]], 0)

        def back(carry, step):
            dh_next, dc_next, _ = carry          # dh from step t+1's z; dc_{t+1} f_{t+1}
            dh_out, a, c, cp = step
            i, f, g, o = tf.split(a, 4, axis=-1)
            dh = dh_out + dh_next
            tc = tf.tanh(c)
            dc = dc_next + dh * o * (1.0 - tc * tc)
            dz = tf.concat([dc * g * i * (1.0 - i), dc * cp * f * (1.0 - f),
                            dc * i * (1.0 - g * g), dh * tc * o * (1.0 - o)], -1)
            return tf.matmul(dz, recurrent_t), dc * f, dz

        _, _, dz = tf.scan(back, (dhs, acts, cs, c_prev), reverse=True,
                           initializer=(zeros, zeros, tf.zeros_like(xz[0])))
        h_prev = tf.concat([zeros[None], hs[:-1]], 0)
        u = tf.shape(recurrent)[1]              # sum over t and b of h_{t-1}^T dz_t
        h_k = tf.reshape(tf.transpose(h_prev, [1, 0, 2, 3]), [k, -1, u])
        dz_k = tf.reshape(tf.transpose(dz, [1, 0, 2, 3]), [k, -1, 4 * u])
        return dz, tf.matmul(h_k, dz_k, transpose_a=True)

    return hs, grad
