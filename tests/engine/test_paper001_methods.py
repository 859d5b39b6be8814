"""Paper 001's five methods (DP-pFedDSU, CENTAUR, PPSGD, DP-FedAvg-fb, PMTL-FT): both
backends agree, and the mechanics the paper describes hold (masks, penalty, noise support,
which heads persist). Accuracy is not tested: the runs are noise-dominated by design."""
import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from tff_idp import config, models
from tff_idp.algorithms import sparse_training
from tff_idp.engine import loop
from tff_idp.methods import METHODS
from tff_idp.models.reparam import build_reparam, extractor_kernels
from tff_idp.models.split import split_model

from .helpers import experiment, run_captured

TOL = 1e-5
PAPER001 = ["centaur", "dp_pfeddsu", "dp_fedavg_fb", "pmtl_ft", "ppsgd"]


SETTINGS = ("rounds=3", "num_clients=6", "expected_rate=1.0", "budgets=[2.0]",
            "group_ratios=[1.0]", "delta=1e-5", 'model="digits_mlp"', "momentum=0.9",
            "weight_decay=1e-4", 'partition="dealt_classes"', "partition_param=3",
            "local_epochs=1", "head_epochs=2", "batch_size=16", "local_lr=0.05", "head_lr=0.05",
            "clip=0.5", "dsu_layers=1", "dsu_sparsity=0.1", "validation_fraction=0.1")


def _experiment(methods, extra=()):
    return experiment(methods, SETTINGS, extra)


def _run(exp, method, backend, monkeypatch):
    seen, _, rows, summary = run_captured(exp, method, backend, monkeypatch)
    return seen, rows, summary


@pytest.mark.parametrize("method,extra", [
    ("dp_pfeddsu", ()), ("dp_pfeddsu", ('dsu_mask="global"',)), ("centaur", ()),
    ("ppsgd", ()), ("pmtl_ft", ()), ("dp_fedavg_fb", ())])
def test_both_backends_give_the_same_model_heads_and_metrics(method, extra, monkeypatch):
    """3 rounds with noise: the TFF client (full forward pass in every phase) and the fast
    backend (cohort mode: the head phase on features computed once) agree to 1e-5."""
    exp = _experiment([method], extra)
    tff, rows_tff, summary = _run(exp, method, "tff", monkeypatch)
    fast, rows_fast, _ = _run(exp, method, "fast", monkeypatch)
    assert fast["runner"].mode == "cohort" and any(fast["runner"].cached) == (
        method in ("dp_pfeddsu", "centaur", "ppsgd"))
    for a, b in zip(tff["runner"].weights, fast["runner"].weights):
        np.testing.assert_allclose(a, b, atol=TOL)
    for a, b in zip(tff["store"].values, fast["store"].values):
        np.testing.assert_allclose(a, b, atol=TOL)
    for a, b in zip(rows_tff, rows_fast):
        assert a["personal_test_accuracy"] == pytest.approx(b["personal_test_accuracy"],
                                                            abs=1e-6)
        assert a["validation_accuracy"] == pytest.approx(b["validation_accuracy"], abs=1e-6)
    assert summary.reported_test_accuracy == next(
        r["personal_test_accuracy"] for r in rows_tff
        if r["round"] == summary.best_validation_round)


def test_heads_persist_for_dsu_centaur_ppsgd_and_not_for_the_fine_tuning_baselines(
        monkeypatch):
    exp = _experiment(PAPER001, ("rounds=1",))
    for method in PAPER001:
        seen, _, summary = _run(exp, method, "fast", monkeypatch)
        if method in ("dp_fedavg_fb", "pmtl_ft"):
            assert seen["store"].values == [] and summary.personal is None
            assert "fine-tunes a throw-away copy" in summary.evaluation
        else:                 # every client took part: every stored head moved
            assert seen["store"].values
            for now, first in zip(seen["store"].values, seen["initial"]):
                moved = np.abs(now - first).reshape(len(now), -1).max(axis=1)
                assert (moved > 0).all()


def test_pmtl_reference_mode_is_dp_fedavg_fb_and_the_intended_term_changes_training(
        monkeypatch):
    """CENTAUR's PMTL term is built from detached tensors (no gradient): "reference" equals
    DP-FedAvg-fb to the bit; "intended" (lambda ||theta - theta_0||^2 with its gradient) does
    not. Noise off (the two methods draw from their own noise streams)."""
    def final(exp, method):          # (a later capture re-points an earlier run's "runner")
        exp.plans[method] = dataclasses.replace(exp.plans[method], noise_stddevs=[0.0])
        seen, rows, _ = _run(exp, method, "fast", monkeypatch)
        return seen["runner"].weights, [r["sim_train_loss"] for r in rows]

    ref = _experiment(["pmtl_ft", "dp_fedavg_fb"], ('pmtl_mode="reference"',
                                                    "simulation_diagnostics=true"))
    a, loss_a = final(ref, "pmtl_ft")
    b, loss_b = final(ref, "dp_fedavg_fb")
    c, _ = final(_experiment(["pmtl_ft"], ("simulation_diagnostics=true",)), "pmtl_ft")
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert loss_a == loss_b
    assert any(not np.array_equal(x, y) for x, y in zip(a, c))


def test_resnet20_masks_keep_round_s_d_entries_of_the_last_four_stage3_convolutions():
    model = models.build("resnet20", input_shape=(32, 32, 3), num_classes=10)
    split = split_model(model, "head")
    spec = build_reparam(model, split, 0.05, 4, "local", 0.2, 0.01)
    shapes = [tuple(model.trainable_variables[i].shape) for i in spec.tensors]
    assert shapes == [(3, 3, 64, 64)] * 4
    assert spec.keep == (round(0.05 * 36864),) * 4 == (1843,) * 4
    assert spec.tensors == tuple(extractor_kernels(model, split)[-4:])
    rng = np.random.default_rng(0)
    params = [tf.constant(rng.normal(size=(3,) + tuple(v.shape)).astype(np.float32))
              for v in model.trainable_variables]
    masks = sparse_training.topk_masks(spec, params, batched=True)
    for i, m in enumerate(masks):
        if i in spec.tensors:
            counts = tf.reduce_sum(tf.reshape(m, [3, -1]), axis=1).numpy()
            assert counts.tolist() == [1843] * 3          # per client, exactly k
            smallest_kept = tf.reduce_min(tf.where(m > 0, tf.abs(params[i]), np.inf),
                                          axis=[1, 2, 3, 4]).numpy()
            largest_dropped = tf.reduce_max(tf.where(m > 0, -np.inf, tf.abs(params[i])),
                                            axis=[1, 2, 3, 4]).numpy()
            assert (smallest_kept >= largest_dropped).all()
        else:
            assert m is None                               # dense elsewhere
    one = sparse_training.topk_masks(spec, [p[1] for p in params], batched=False)
    for i in spec.tensors:                                 # per-client = batched row
        np.testing.assert_array_equal(one[i].numpy(), masks[i][1].numpy())
        np.testing.assert_array_equal(spec.masks_np([p[1].numpy() for p in params])[i],
                                      masks[i][1].numpy())


def test_the_penalty_gradient_is_zero_at_the_first_step_and_the_formulas_elsewhere():
    model = models.build("digits_mlp", input_dim=8, num_classes=3)
    split = split_model(model, "head")
    spec = build_reparam(model, split, 0.5, 1, "local", 0.2, 0.01)
    rng = np.random.default_rng(1)
    start = [tf.constant(rng.normal(size=v.shape).astype(np.float32))
             for v in model.trainable_variables]
    masks = sparse_training.topk_masks(spec, start, batched=False)
    value, grads = sparse_training.penalty(spec, start, start, masks, batched=False)
    assert float(value) == pytest.approx(0.5 * 0.2 * 0.01)
    assert all(np.isfinite(g.numpy()).all() and not g.numpy().any() for g in grads)
    moved = [s + 0.01 * tf.constant(rng.normal(size=s.shape).astype(np.float32))
             for s in start]
    value, grads = sparse_training.penalty(spec, moved, start, masks, batched=False)
    with tf.GradientTape() as tape:            # autodiff of Eq. 10 away from n = 0
        tape.watch(moved)
        d = [(p - s) * (m if m is not None else 1.0) * (sh if sh is not None else 1.0)
             for p, s, m, sh in zip(moved, start, masks, spec.shared)]
        n = tf.sqrt(tf.add_n([tf.reduce_sum(t * t) for t in d]))
        ref = 0.1 * tf.abs(n - 0.01)
    for g, r in zip(grads, tape.gradient(ref, moved)):
        np.testing.assert_allclose(g.numpy(), r.numpy(), atol=1e-6)
    assert float(value) == pytest.approx(float(ref), rel=1e-6)
    assert not grads[split.personal_tensors[0]].numpy().any()    # the head is not penalised


@pytest.mark.parametrize("source", ["local", "global"])
def test_the_upload_and_its_noise_land_on_the_mask_with_the_planned_variance(source):
    """(theta_tau - theta_0) * M_tau is sent; the aggregator's noise share N(0, s^2 / k) is
    on M_tau's coordinates only (M_tau from the final weights, or from the broadcast ones
    with "global"), the shared mask off the head."""
    from tff_idp.queries import GroupGaussianQuery
    exp = _experiment(["dp_pfeddsu"], (f'dsu_mask="{source}"', "dsu_sparsity=0.25"))
    model = loop.build_model_fn(exp, "dp_pfeddsu")()
    program = loop.round_spec(exp, "dp_pfeddsu", model).program
    rng = np.random.default_rng(2)
    start = [tf.repeat(tf.constant(rng.normal(size=(1,) + tuple(v.shape)).astype(np.float32)),
                       4, axis=0) for v in model.trainable_variables]   # the broadcast model
    final = [s + tf.constant(rng.normal(size=s.shape).astype(np.float32)) for s in start]
    out, support = program.send(start, final, batched=True)
    kernel = program.reparam.tensors[0]
    expect = sparse_training.topk_masks(program.reparam, final if source == "local"
                                        else start, batched=True)[kernel]
    np.testing.assert_array_equal(support[kernel].numpy(), expect.numpy())
    if source == "global":                       # one mask for every client
        assert all(np.array_equal(expect[0], expect[c]) for c in range(4))
    np.testing.assert_array_equal(out[kernel].numpy(),
                                  ((final[kernel] - start[kernel]) * expect).numpy())
    std, k = 0.3, 4
    factory = GroupGaussianQuery([1e9], [std], [k]).on_shared(program.masks)
    zeros = [tf.zeros_like(t) for t in start]
    draws = []
    for r in range(300):
        seeds = tf.constant([[r, c] for c in range(k)], tf.int32)
        noised, *_ = factory.client_math(zeros, tf.ones([k, 1]), seeds,
                                         factory.initial_state_tensors(),
                                         tf.constant([float(k)]), support)
        draws.append(noised[kernel].numpy())
    draws = np.stack(draws)                                       # [300, K, ...]
    on = np.broadcast_to(expect.numpy() > 0, draws.shape)
    assert not draws[~on].any()
    assert np.std(draws[on]) == pytest.approx(std / np.sqrt(k), rel=0.03)
    head = program.split.personal_tensors[0]
    assert not noised[head].numpy().any()


def test_the_local_mask_run_is_flagged_and_the_global_one_is_not(monkeypatch):
    for source, valid in (("local", False), ("global", True)):
        exp = _experiment(["dp_pfeddsu"], ("rounds=1", f'dsu_mask="{source}"'))
        _, _, summary = _run(exp, "dp_pfeddsu", "fast", monkeypatch)
        assert summary.privacy["guarantee"]["valid"] is valid
        if not valid:
            assert "dsu_mask='local'" in summary.privacy["guarantee"]["why_not_valid"]


def test_a_model_without_a_dense_head_is_refused_in_one_line():
    """A read-out fine-tuning method on a model whose last layer is not Dense."""
    exp = _experiment(["dp_pfeddsu"], ("rounds=1",))
    inp = tf.keras.Input((64,))
    odd = tf.keras.Model(inp, tf.keras.layers.ReLU()(tf.keras.layers.Dense(10)(inp)))
    for method in ("dp_pfeddsu", "centaur"):
        with pytest.raises(config.ConfigError, match=r"^personal='head': .* not a Dense"):
            METHODS[method].client_program(exp.cfg, odd)


def test_a_personal_part_outside_the_read_out_is_refused_for_a_head_phase():
    exp = _experiment(["centaur"], ("rounds=1", 'personal="rows:0-9"'))
    model = loop.build_model_fn(exp, "centaur")()
    with pytest.raises(config.ConfigError, match=r"^personal='rows:0-9': centaur trains"):
        loop.round_spec(exp, "centaur", model)
