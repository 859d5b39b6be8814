"""Canary directions and scoring (tff_idp.audit.canaries): unit sign vectors stored as bits,
scored without unpacking more than a block at a time."""
import numpy as np
import pytest

from tff_idp.audit.canaries import BLOCK, CanaryAudit


def _audit(count=150, shapes=((7, 5), (11,)), seed=3):
    return CanaryAudit(count, group=0, clip=2.5, rate=0.3, shapes=shapes, seed=seed)


def test_directions_are_unit_sign_vectors_and_updates_have_the_clip_norm():
    audit = _audit()
    u = audit.directions(range(audit.count))
    d = audit.size
    assert u.shape == (150, 46) and d == 46
    np.testing.assert_allclose(np.abs(u), 1 / np.sqrt(d), rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0, rtol=1e-5)
    first, second = audit.updates([4, 140])
    assert first.shape == (2, 7, 5) and second.shape == (2, 11)
    flat = np.concatenate([first.reshape(2, -1), second], axis=1)
    np.testing.assert_allclose(np.linalg.norm(flat, axis=1), 2.5, rtol=1e-5)
    np.testing.assert_allclose(flat / 2.5, u[[4, 140]], rtol=1e-6)
    # different canaries, different directions; the same seed, the same ones
    assert np.abs(u @ u.T - np.eye(150)).max() < 0.9
    np.testing.assert_array_equal(_audit().directions([7, 99]), u[[7, 99]])


def test_scores_are_the_cosines_with_each_direction_across_blocks():
    audit = _audit(count=2 * BLOCK + 9)
    change = np.random.default_rng(0).standard_normal(audit.size)
    change[3] += 40.0                                       # a sum far from 0
    u = audit.directions(range(audit.count)).astype(np.float64)
    expected = u @ change / np.linalg.norm(change)
    np.testing.assert_allclose(audit._cosines(change), expected, atol=1e-5)


def test_the_null_cosine_has_variance_one_over_d():
    """A fixed vector against many random sign directions: mean 0, variance 1/d (as for
    directions uniform on the sphere), which the final-model estimate's null assumes."""
    audit = _audit(count=4000, shapes=((300,),), seed=11)
    change = np.random.default_rng(1).standard_normal(300) ** 3     # heavy-ish coordinates
    scores = audit._cosines(change)
    assert abs(scores.mean()) < 4 / np.sqrt(300 * 4000)
    assert scores.var() * 300 == pytest.approx(1.0, rel=0.1)


def test_participations_count_the_rounds_an_inserted_canary_was_sampled():
    audit = _audit()
    for rnd in range(20):
        audit.sample(rnd)
    assert (audit.participations[~audit.inserted] == 0).all()
    took = audit.participations[audit.inserted]
    assert took.mean() == pytest.approx(20 * 0.3, rel=0.15)
