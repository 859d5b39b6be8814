"""Seconds per round of pfl-research's simulated FedAvg with its central Gaussian mechanism
on the bench's workload: the same model (the FMNIST CNN, 582,026 parameters, or LEAF's
Shakespeare LSTM, 817,872), the same cohort of clients each taking ``--steps`` SGD steps
(``--momentum``) of batch ``--batch`` on its own synthetic examples, each update clipped to ``--clip`` and the cohort's sum noised at
``--noise-multiplier`` (pfl's ``CentrallyAppliedPrivacyMechanism(GaussianMechanism)``: the
server draws the noise, where the bench's ``fast`` runner has each client draw its share).

Run by ``python -m tff_idp.bench --peers pfl`` with the peer environment's Python
(``scripts/peer_env.sh``: pfl 0.6.0, TensorFlow 2.18); a file, not a module of the package:
it imports nothing of tff_idp, whose TensorFlow (2.14) it could not share. Prints one JSON
line: the median seconds per round after ``--warmup`` rounds, each timed round, the
parameters pfl trains, examples per round."""
import argparse
import json
import os
import sys
import time

import numpy as np


def cnn2(tf, padding):
    """McMahan et al.'s CNN, as tff_idp.models.cnn2 / cnn2_same build it."""
    k = tf.keras
    return k.Sequential([
        k.layers.Input((28, 28, 1)),
        k.layers.Conv2D(32, 5, padding=padding, activation="relu"),
        k.layers.MaxPooling2D(2, 2, padding="same"),
        k.layers.Conv2D(64, 5, padding=padding, activation="relu"),
        k.layers.MaxPooling2D(2, 2, padding="same"),
        k.layers.Flatten(),
        k.layers.Dense(512, activation="relu"),
        k.layers.Dense(10),
    ])


def char_lstm(tf):
    """LEAF's Shakespeare model, as tff_idp.models.char_lstm builds it (the next character
    after 80): 817,872 parameters."""
    k = tf.keras
    return k.Sequential([
        k.layers.Input((80,), dtype="int32"), k.layers.Embedding(80, 8),
        k.layers.LSTM(256, return_sequences=True), k.layers.LSTM(256), k.layers.Dense(80),
    ])


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="cnn2", choices=["cnn2", "cnn2_same", "char_lstm"])
    p.add_argument("--clients", type=int, default=120)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--batch", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--noise-multiplier", type=float, default=1.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--check", action="store_true",
                   help="only import what the workload needs and print the versions")
    args = p.parse_args(argv)
    # pfl 0.6 keys the model's variables by name: Keras 3 names them "kernel" / "bias"
    # without their layer, and only the last two would be trained; Keras 2 (tf-keras) gives
    # unique names
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tensorflow as tf
    from pfl.aggregate.simulate import SimulatedBackend
    from pfl.algorithm import FederatedAveraging, NNAlgorithmParams
    from pfl.callback.base import TrainingProcessCallback
    from pfl.metrics import Metrics
    from pfl.data.federated_dataset import FederatedDataset
    from pfl.data.sampling import get_user_sampler
    from pfl.hyperparam import NNEvalHyperParams, NNTrainHyperParams
    from pfl.model.tensorflow import TFModel
    from pfl.privacy import CentrallyAppliedPrivacyMechanism, GaussianMechanism
    if args.check:
        from importlib.metadata import version
        print(json.dumps({"pfl": version("pfl"), "tensorflow": tf.__version__,
                          "tf_keras": version("tf_keras")}))
        return 0

    rng = np.random.default_rng(0)
    n = args.clients
    per = args.steps * args.batch
    if args.model == "char_lstm":           # LEAF's 80 symbols, sequences of 80
        data = {u: [rng.integers(0, 80, (per, 80)).astype(np.int32),
                    rng.integers(0, 80, per).astype(np.int32)] for u in range(n)}
        model = char_lstm(tf)
    else:
        data = {u: [rng.random((per, 28, 28, 1), np.float32),
                    rng.integers(0, 10, per).astype(np.int32)] for u in range(n)}
        model = cnn2(tf, "valid" if args.model == "cnn2" else "same")
    fed = FederatedDataset.from_slices(data, get_user_sampler("minimize_reuse", list(range(n))))
    # pfl trains each client with the model's compiled optimizer, its state reset per client
    # (Keras' default would be RMSprop): plain SGD, with momentum where the setting has it
    model.compile(optimizer=tf.keras.optimizers.SGD(args.lr, momentum=args.momentum),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    pfl_model = TFModel(model, metrics={}, central_optimizer=tf.keras.optimizers.SGD(1.0))
    trained = sum(int(np.prod(v.shape)) for v in pfl_model.variable_map.values())
    if trained != model.count_params():
        raise SystemExit(f"pfl trains {trained} of the model's {model.count_params()} "
                         "parameters (variable names not unique)")
    mechanism = CentrallyAppliedPrivacyMechanism(
        GaussianMechanism(args.clip, args.noise_multiplier))
    backend = SimulatedBackend(training_data=fed, val_data=None, postprocessors=[mechanism])
    times = []

    class Clock(TrainingProcessCallback):
        def after_central_iteration(self, aggregate_metrics, model, *, central_iteration):
            times.append(time.perf_counter())
            return False, Metrics()

    start = time.perf_counter()
    FederatedAveraging().run(
        algorithm_params=NNAlgorithmParams(
            central_num_iterations=args.warmup + args.rounds, evaluation_frequency=10 ** 6,
            train_cohort_size=n, val_cohort_size=None),
        backend=backend, model=pfl_model,
        model_train_params=NNTrainHyperParams(local_learning_rate=args.lr,
                                              local_num_epochs=None,
                                              local_num_steps=args.steps,
                                              local_batch_size=args.batch),
        model_eval_params=NNEvalHyperParams(local_batch_size=args.batch),
        callbacks=[Clock()])
    marks = [start] + times
    rounds = np.diff(marks)[args.warmup:]
    print(json.dumps({"peer": "pfl", "seconds_per_round": float(np.median(rounds)),
                      "rounds": [float(r) for r in rounds],
                      "parameters": int(model.count_params()), "tensorflow": tf.__version__,
                      "examples_per_round": n * per}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
