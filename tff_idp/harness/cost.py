"""What a table costs: example-steps and FLOPs of every unit, and GPU hours at paper scale.

Method of estimation (stated in every report):
* FLOPs of one example's forward pass counted from the Keras model's layers (Dense:
  2 in out; Conv2D: 2 k_h k_w c_in c_out H_out W_out; LSTM: 8 (in + units) units per step;
  normalisation, pooling and activations ignored, a few % at most); a training step costs
  3x the forward pass (forward + backward for activations and weights).
* Per unit: rounds x expected cohort (q n) x local example-steps of each of the method's
  phases (tau x batch, or epochs x the client's examples, less a validation split) training;
  a phase that fine-tunes a read-out on features computed once (paper 001) costs one
  forward pass of the client's examples (its steps on the read-out are negligible); plus
  rounds / eval_every evaluations of the test set, and of every client's training examples
  when the evaluation fine-tunes a read-out copy per client (DP-FedAvg-fb, PMTL-FT, PPSGD).
* The fast backend trains a chunk of min(cohort, ``fast_chunk_size``) clients per local
  step, their weights a batch dimension (``tff_idp.engine.cohort_model``), so a round is
  ceil(cohort / chunk) x tau chunk-steps. GPU time per chunk-step = max(its FLOPs / (peak x
  utilisation x cohort efficiency), a fixed step latency): small models are bound by
  kernel-launch latency, not arithmetic. Default: an RTX A6000 (the GDPFed authors' GPU,
  38.7 fp32 TFLOP/s peak) at 25% utilisation, 3 ms per chunk-step (an assumption, not a
  measurement: there is no GPU here) and a cohort efficiency of 0.65 (grouped convolutions
  and per-client weights against one dense batch: on this CPU the cohort training of the
  bench's CNN ran at 0.68 of the dense ceiling; assumed the same on a GPU; 1 for chunks of
  one client); per-client clip and noise are a few passes over the weights, ignored.
  Evaluation at the same throughput in batches of 1,000. The report also gives the FLOP rate
  this machine's CPU achieved on the smoke runs, as a check on the FLOP counts.
"""
from __future__ import annotations

from typing import Dict

import numpy as np

GPU_NAME = "NVIDIA RTX A6000"         # the device the estimates assume
GPU_PEAK_FLOPS = 38.7e12          # its fp32 peak
GPU_UTILISATION = 0.25
GPU_STEP_LATENCY = 0.003          # seconds per chunk-step of the fast backend (assumed)
COHORT_EFFICIENCY = 0.65          # cohort-batched training against one dense batch (assumed)

# training examples of the real sets (for local epochs) and test-set sizes
TRAIN_SIZES = {"fashion_mnist": 60000, "svhn_cropped": 73257, "cifar10": 50000,
               "cifar100": 50000, "emnist_digits": 240000, "emnist": 697932,
               "femnist": 341873, "femnist62": 671585, "tff_cifar100": 50000,
               "shakespeare-leaf": 2982449, "tff_shakespeare": 2982449,
               "shakespeare-leaf-positions": 2982449, "shakespeare-leaf-chunks": 36461,
               "shakespeare-leaf-rules": 3070237, "shakespeare-leaf-rules-positions": 3070237,
               "shakespeare-leaf-rules-chunks": 37532, "adult": 32561,
               "digits": 1437, "adult-standin": 455}
TEST_SIZES = {"fashion_mnist": 10000, "svhn_cropped": 26032, "cifar10": 10000,
              "cifar100": 10000, "emnist_digits": 40000, "emnist": 116323, "femnist": 40832,
              "femnist62": 77483, "tff_cifar100": 10000, "shakespeare-leaf": 672236,
              "shakespeare-leaf-positions": 672236, "shakespeare-leaf-chunks": 672236,
              "shakespeare-leaf-rules": 690565, "shakespeare-leaf-rules-positions": 690565,
              "shakespeare-leaf-rules-chunks": 690565, "tff_shakespeare": 672236, "adult": 16281, "digits": 360, "adult-standin": 114}

# forward FLOPs of the (model, data set) pairs the committed tables run, as forward_flops
# counts them on the built model (tests/harness/test_cost.py builds every one again and
# checks that every table's pair is here), so that a report drawn from finished runs
# needs no TensorFlow; any other pair is counted on its model
KNOWN_FLOPS = {
    ("centaur_mlp", "fashion_mnist"): 471360.0,
    ("char_lstm", "shakespeare-leaf"): 127180800.0,
    ("char_lstm", "shakespeare-leaf-positions"): 130416640.0,
    ("char_lstm_torch", "shakespeare-leaf"): 127180800.0,
    ("char_lstm_torch", "shakespeare-leaf-chunks"): 130416640.0,
    ("char_lstm_torch", "shakespeare-leaf-positions"): 130416640.0,
    ("cnn2", "fashion_mnist"): 8534016.0,
    ("cnn2_same", "fashion_mnist"): 24546304.0,
    ("cnn3", "svhn_cropped"): 21697536.0,
    ("logistic", "digits"): 1280.0,
    ("logistic_nobias", "adult"): 56.0,
    ("logistic_nobias", "fashion_mnist"): 15680.0,
    ("resnet18", "cifar10"): 1110845440.0,
    ("resnet20", "cifar10"): 81626368.0,
    ("resnet20", "cifar100"): 81637888.0,
    ("resnet20", "emnist_digits"): 62043904.0,
    ("simple_cnn", "cifar10"): 12092032.0,
    ("simple_cnn", "emnist_digits"): 8806528.0,
    ("simple_cnn", "fashion_mnist"): 8806528.0,
    ("simple_cnn", "femnist"): 8806528.0,
    ("simple_cnn", "svhn_cropped"): 12092032.0,
}

_FLOPS_CACHE: Dict[tuple, float] = {}


def forward_flops(model) -> float:
    """Forward FLOPs of one example through a built Keras model (see module docstring)."""
    total = 0.0
    for layer in model.layers:
        kind = type(layer).__name__
        if kind == "Dense":           # at every position of a sequence input
            positions = int(np.prod(layer.input.shape[1:-1]))
            total += 2.0 * int(layer.kernel.shape[0]) * int(layer.kernel.shape[1]) * positions
        elif kind == "Conv2D":
            kh, kw, cin, cout = (int(d) for d in layer.kernel.shape)
            h, w = (int(d) for d in layer.output.shape[1:3])
            total += 2.0 * kh * kw * cin * cout * h * w
        elif kind == "LSTM":
            steps = int(layer.input.shape[1])
            units, inp = int(layer.units), int(layer.input.shape[-1])
            total += 8.0 * (inp + units) * units * steps
        elif hasattr(layer, "layers"):               # nested models
            total += forward_flops(layer)
    return total


def model_flops(model_name: str, dataset: str) -> float:
    """One example's forward FLOPs of ``model_name`` on ``dataset``'s inputs: a committed
    table's pair from ``KNOWN_FLOPS``, any other counted on its built model."""
    real = dataset.split(":", 1)[-1]
    known = KNOWN_FLOPS.get((model_name, real))
    return known if known is not None else built_model_flops(model_name, real)


def built_model_flops(model_name: str, dataset: str) -> float:
    """:func:`forward_flops` of ``model_name`` built for ``dataset``'s input shape and
    classes (a real data set's name; TensorFlow is started)."""
    key = (model_name, dataset)
    if key not in _FLOPS_CACHE:
        from .. import models
        from ..data.synthetic import SHAPES
        shape, classes = SHAPES.get(dataset, ((64,), 10))
        if shape in ("text", "positions"):
            m = models.build(model_name, vocab_size=classes, seq_len=80, num_classes=classes,
                             sequence_targets=shape == "positions")
        else:
            m = models.build(model_name, input_shape=shape, input_dim=int(np.prod(shape)),
                             num_classes=classes)
        _FLOPS_CACHE[key] = forward_flops(m)
    return _FLOPS_CACHE[key]


def unit_cost(cfg) -> dict:
    """Example-steps and FLOPs of one run of ``cfg`` (one method, one seed)."""
    from ..data.synthetic import PREFIX, TRAIN, TEST
    real = cfg.dataset.split(":", 1)[-1]
    synthetic = cfg.dataset.startswith(PREFIX)
    train = TRAIN if synthetic else TRAIN_SIZES.get(real, TRAIN)
    test = cfg.test_examples or (TEST if synthetic else TEST_SIZES.get(real, TEST))
    from ..methods import METHODS
    method = METHODS[cfg.methods[0]]
    train = train * (1.0 - cfg.validation_fraction)
    cohort = cfg.expected_rate * cfg.num_clients
    per_client = train / cfg.num_clients
    local = forward_once = 0.0            # example-steps; forward-only examples per client
    for ph in method.phases(cfg):
        if ph.on_features:
            forward_once += per_client
        else:
            local += ph.epochs * per_client if ph.epochs else ph.steps * cfg.batch_size
    train_examples = cfg.rounds * cohort * local
    evals = int(np.ceil(cfg.rounds / cfg.eval_every))
    f = model_flops(cfg.model, cfg.dataset)
    tuned = train if method.evaluation(cfg) is not None else 0.0
    forward = cfg.rounds * cohort * forward_once + (test + tuned) * evals
    flops = 3.0 * f * train_examples + f * forward
    rate = GPU_PEAK_FLOPS * GPU_UTILISATION
    chunk = max(1.0, min(cohort, cfg.fast_chunk_size))
    steps_per_client = local / cfg.batch_size
    # a cohort under one client trains in that fraction of its rounds
    chunk_steps = cfg.rounds * np.ceil(cohort / chunk) * steps_per_client * min(cohort, 1.0)
    efficiency = COHORT_EFFICIENCY if chunk > 1 else 1.0
    step_seconds = max(3.0 * f * cfg.batch_size * chunk / (rate * efficiency),
                       GPU_STEP_LATENCY)
    eval_seconds = max(f * forward / rate, np.ceil(forward / 1000) * GPU_STEP_LATENCY)
    return {"example_steps": train_examples, "flops": flops,
            "gpu_seconds": chunk_steps * step_seconds + eval_seconds}


def gpu_hours(seconds: float) -> float:
    return seconds / 3600.0
