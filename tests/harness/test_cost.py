"""The GPU-time estimate: FLOPs counted from the layers, chunk-steps of the fast backend."""
from pathlib import Path

import numpy as np
import pytest

from tff_idp import experiment_config
from tff_idp.harness import cost


def test_cnn2_forward_flops_by_hand():
    conv1 = 2 * 5 * 5 * 1 * 32 * 24 * 24
    conv2 = 2 * 5 * 5 * 32 * 64 * 8 * 8
    dense = 2 * 1024 * 512 + 2 * 512 * 10
    assert cost.model_flops("cnn2", "fashion_mnist") == conv1 + conv2 + dense


def test_char_lstm_flops_count_the_dense_layer_at_every_position_of_tffs_task():
    lstm = 8 * (8 + 256) * 256 * 80 + 8 * (256 + 256) * 256 * 80
    dense = 2 * 256 * 80
    assert cost.model_flops("char_lstm", "shakespeare-leaf") == lstm + dense
    assert cost.model_flops("char_lstm", "shakespeare-leaf-positions") == lstm + 80 * dense


@pytest.mark.parametrize("chunk,chunks_per_round", [(64, 2), (120, 1), (30, 4)])
def test_a_latency_bound_run_costs_its_chunk_steps(chunk, chunks_per_round):
    """digits' logistic model is far below the latency floor: every chunk-step costs the
    floor, and a round is ceil(cohort / chunk) x local_steps of them."""
    cfg = experiment_config.load(None, ["num_clients=1200", "expected_rate=0.1", "rounds=10",
                             "local_steps=5", f"fast_chunk_size={chunk}", "eval_every=10"])
    c = cost.unit_cost(cfg)
    train = 10 * chunks_per_round * 5 * cost.GPU_STEP_LATENCY
    evals = 1 * np.ceil(cost.TEST_SIZES["digits"] / 1000) * cost.GPU_STEP_LATENCY
    assert c["gpu_seconds"] == pytest.approx(train + evals)
    assert c["example_steps"] == pytest.approx(10 * 120 * 5 * 10)


def _table_pairs() -> set:
    """(model, data set) of every unit of every committed table, at every scale."""
    from tff_idp.catalog import config_files
    from tff_idp.harness.table import SCALES, expand, is_table, load_table
    pairs = set()
    for path in config_files(str(Path(__file__).resolve().parents[2] / "runs")):
        if not is_table(str(path)):
            continue
        spec = load_table(str(path))
        for scale in SCALES if spec.kind == "train" else ():
            pairs |= {(u.cfg.model, u.cfg.dataset.split(":", 1)[-1])
                      for u in expand(spec, scale)}
    return pairs


def test_known_flops_are_the_built_models_and_cover_every_table():
    """KNOWN_FLOPS (what a report reads, without TensorFlow) is forward_flops of each built
    model, and every committed table's (model, data set) is in it."""
    assert _table_pairs() <= set(cost.KNOWN_FLOPS)
    for (model, dataset), flops in cost.KNOWN_FLOPS.items():
        assert cost.built_model_flops(model, dataset) == flops, (model, dataset)
