"""Our mechanisms as stock ``tff.learning`` composes them: a differentially
private aggregator that ``tff.learning.algorithms.build_unweighted_fed_avg`` (and, wrapped
in TFF's ``tff.aggregators.as_weighted_aggregator``, ``build_weighted_fed_avg``) accept as
``model_aggregator``::

    aggregator = tff_idp.learning.dp_aggregator(noise_multiplier=1.0, clients_per_round=10,
                                                clip=0.5)
    process = tff.learning.algorithms.build_unweighted_fed_avg(
        model_fn, client_optimizer_fn, server_optimizer_fn, model_aggregator=aggregator)

It is :class:`~tff_idp.aggregators.GroupGaussianFactory` with one group (GDPFed Alg. 1
lines 12-19 with M = 1: DP-FedAvg's client-level Gaussian mechanism), wrapped for the bare
model delta: no second implementation of the clip, the noise or top-k. The neighbouring
relation is add/remove one client; the aggregate is the noised sum over the expected cohort
``clients_per_round`` (so the noise std on the model change is noise_multiplier x clip /
clients_per_round per coordinate, also in a round whose realised cohort differs).

Who draws the noise (``noise_draw``):

- ``"client"`` (the default; Alg. 1 line 13): each client adds its share N(0, (z C)^2 / k)
  before its update leaves it, k the round's realised cohort, so that the sum carries
  N(0, (z C)^2). Its seed is 64 bits drawn from the operating system's entropy inside the
  client computation (a random op with both seeds 0, whatever global seed the caller set):
  no two clients and no two rounds share noise, and nothing the caller passes can make them.
  Against the server the guarantee needs secure aggregation of the sums:
  ``record_aggregation_factory=tff.aggregators.SecureSumFactory(...)`` sums the noised
  records with TFF's secure sum (None: ``federated_sum``, which simulates one).
- ``"server"``: the server draws N(0, (z C)^2) once per round, so the server can remove
  it: the guarantee holds only against those who see the released models (a trusted
  server).

Who can predict the noise (``noise_seed``): by default nobody. Every draw the server makes
(all of the noise with ``"server"``; an empty cohort's with ``"client"``) takes a fresh seed
from the operating system's entropy (:func:`~tff_idp.dpmath.secret_seed`), as the clients'
draws do. ``noise_seed=<int32>`` makes those draws the public function (noise_seed, round):
reproducible, for simulation only. Whoever knows that seed subtracts the noise from a
released model and recovers the exact clipped mean, and recognises an empty round exactly,
so with a fixed seed every guarantee holds only while the seed is kept secret.

Nothing else leaves the clients through this aggregator: no loss, norm or clipping
statistic (the measurements are the cohort, the noise std, the kept fraction and the clip).
Stock FedAvg has a second channel, its ``metrics_aggregator``, which by default sums each
client's loss, example and batch counts un-noised: pass :func:`private_metrics_aggregator`
(``tff_idp.learning.metrics``) to release none of them. The epsilon of a run:
``dp_event(...)`` gives its dp-accounting event for any accountant.
"""
from __future__ import annotations

import collections
import math
from typing import Optional

import numpy as np
import tensorflow as tf

from .. import dpmath
from ..aggregators import GroupGaussianFactory
from ..config import CLIP_RANGE, LIMITS, NOISE_MULTIPLIER_RANGE
from ..queries import AdaptiveClipping
from ..queries.group_gaussian import check_noise_seed
from ..runtime import import_tff

tff = import_tff()

NOISE_DRAWS = {"client": "client", "server": "group"}      # ours -> the factory's name


def dp_aggregator(noise_multiplier: float, clients_per_round: float, clip: float = 1.0,
                  keep_fraction: float = 1.0,
                  adaptive_clipping: Optional[AdaptiveClipping] = None,
                  noise_draw: str = "client", noise_seed: Optional[int] = None,
                  record_aggregation_factory=None):
    """A client-level Gaussian DP aggregator for stock ``tff.learning`` algorithms (module
    docstring). ``noise_multiplier`` z (noise std / clip); ``clients_per_round`` the expected
    cohort (the mean's denominator, as TFF's ``dp_aggregator``); ``clip`` C (the initial
    clip with ``adaptive_clipping``, whose ``value_noise_multiplier`` then replaces z);
    ``keep_fraction`` GDPFed+'s Top_k of the noised mean (Alg. 3; 1: none). For
    ``build_weighted_fed_avg`` wrap it in ``tff.aggregators.as_weighted_aggregator``, which
    leaves the clients' weights unused at the clients (their example counts are data that no
    noise covers: DP averages clients uniformly).
    ``record_aggregation_factory``: how the noised records are summed, e.g.
    ``tff.aggregators.SecureSumFactory`` (as TFF's ``DifferentiallyPrivateFactory``; None:
    ``federated_sum``). ``noise_seed``: None (the default) draws the server's noise from a
    secret seed; an int32 fixes it for a reproducible simulation, and the guarantee then
    holds only while that seed is secret (module docstring). Wrong types or values are
    one-line errors naming the argument."""
    for name, value in (("noise_multiplier", noise_multiplier),
                        ("clients_per_round", clients_per_round), ("clip", clip),
                        ("keep_fraction", keep_fraction)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not math.isfinite(value):
            raise TypeError(f"{name}={value!r}: must be a finite number")
    if not 0 <= noise_multiplier <= NOISE_MULTIPLIER_RANGE[1]:
        raise ValueError(f"noise_multiplier={noise_multiplier!r}: must be in [0, "
                         f"{NOISE_MULTIPLIER_RANGE[1]:g}] (the CLI's bound)")
    if not 0 < clients_per_round <= LIMITS["num_clients"]:
        raise ValueError(f"clients_per_round={clients_per_round!r}: must be in (0, "
                         f"{LIMITS['num_clients']:,}] (the CLI's bound on clients)")
    if not CLIP_RANGE[0] <= clip <= CLIP_RANGE[1]:
        raise ValueError(f"clip={clip!r}: must be in [{CLIP_RANGE[0]:g}, {CLIP_RANGE[1]:g}] "
                         "(the CLI's bound)")
    if not 0 < keep_fraction <= 1:
        raise ValueError(f"keep_fraction={keep_fraction!r}: must be in (0, 1]")
    if noise_draw not in NOISE_DRAWS:
        raise ValueError(f"noise_draw={noise_draw!r}: must be 'client' or 'server'")
    check_noise_seed(noise_seed)
    if adaptive_clipping is not None and not isinstance(adaptive_clipping, AdaptiveClipping):
        raise TypeError(f"adaptive_clipping={adaptive_clipping!r}: must be a "
                        "tff_idp.queries.AdaptiveClipping or None")
    z = adaptive_clipping.value_noise_multiplier if adaptive_clipping else noise_multiplier
    inner = GroupGaussianFactory([float(clip)], [float(z * clip)], [float(clients_per_round)],
                                 weights=[1.0], keep_fractions=[float(keep_fraction)],
                                 adaptive=adaptive_clipping,
                                 noise_draw=NOISE_DRAWS[noise_draw], noise_seed=noise_seed,
                                 record_aggregation_factory=record_aggregation_factory)
    return DPAggregator(inner)


class ExtractingDpEventFromInitialStateError(ValueError):
    """The aggregator's initial state has released nothing yet (as TFF's error of the same
    name)."""


def dp_event_from_state(state, group: int = 0):
    """The dp-accounting event of the round that produced ``state`` (a state returned by
    ``next`` of a :func:`dp_aggregator` process, or of any group factory's: then for its
    aggregation group ``group``; a method's ``plan.aggregation_groups`` maps each privacy
    group to one: itself in GDPFed's, 0 for all in DP-FedAvg), as TFF's
    ``extract_dp_event_from_state``: not amplified by sampling (compose it in a
    ``PoissonSampledDpEvent`` for those who do not know the cohort). Add/remove one client:
    a ``GaussianDpEvent`` with the group's noise std over its clip (GDPFed Alg. 1 lines
    12-13); with adaptive clipping composed with the clipped-count bit's
    ``GaussianDpEvent(2 count_stddev)`` (sensitivity 1/2; Andrew et al. Thm. 1). A group
    that is not private (infinite clip, no noise) gives ``NonPrivateDpEvent``."""
    import dp_accounting
    params = state.get("query", state) if hasattr(state, "get") else state
    if float(np.asarray(params["round"])) < 1:
        raise ExtractingDpEventFromInitialStateError(
            "state: the initial state has released nothing (pass one returned by next)")
    clips, stds = np.asarray(params["clips"], float), np.asarray(params["noise_stddevs"], float)
    if not 0 <= group < len(clips):
        raise ValueError(f"group={group!r}: the aggregator has {len(clips)} group(s)")
    if not np.asarray(params["private"])[group]:
        return dp_accounting.NonPrivateDpEvent()
    event = dp_accounting.GaussianDpEvent(float(stds[group] / clips[group]))
    if "count_stddev" in params:
        bit = dp_accounting.GaussianDpEvent(2.0 * float(np.asarray(params["count_stddev"])))
        return dp_accounting.ComposedDpEvent([event, bit])
    return event


def dp_event(noise_multiplier: float, sampling_rate: float, rounds: int):
    """The dp-accounting event of ``rounds`` rounds of :func:`dp_aggregator` with Poisson
    sampling of clients at ``sampling_rate`` (add/remove one client, sensitivity C): feed it
    to any accountant (``tff_idp.privacy.accounting``). Against the server (client-drawn
    noise, no amplification) each round a client took part in is a GaussianDpEvent."""
    import dp_accounting
    for name, value in (("noise_multiplier", noise_multiplier),
                        ("sampling_rate", sampling_rate)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not math.isfinite(value):
            raise TypeError(f"{name}={value!r}: must be a finite number")
    if not NOISE_MULTIPLIER_RANGE[0] <= noise_multiplier <= NOISE_MULTIPLIER_RANGE[1]:
        raise ValueError(f"noise_multiplier={noise_multiplier!r}: must be in "
                         f"[{NOISE_MULTIPLIER_RANGE[0]:g}, {NOISE_MULTIPLIER_RANGE[1]:g}]")
    if not 0 < sampling_rate <= 1:
        raise ValueError(f"sampling_rate={sampling_rate!r}: must be in (0, 1]")
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or \
            not 1 <= rounds <= LIMITS["rounds"]:
        raise ValueError(f"rounds={rounds!r}: must be an integer in [1, {LIMITS['rounds']:,}]")
    return dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(
        sampling_rate, dp_accounting.GaussianDpEvent(noise_multiplier)), rounds)


def restore_container(value_type, result_type):
    """A TFF computation from ``result_type`` (a factory's result, which TFF may hand back
    as a tuple-typed struct) to ``value_type``'s own container (list, tuple, OrderedDict or
    a bare tensor): what ``tff.learning``'s composers check."""
    container = getattr(value_type, "python_container", None)

    @tff.tensorflow.computation(result_type)
    def as_value_type(result):
        flat = tf.nest.flatten(result)
        if isinstance(value_type, tff.StructType):
            names = [n for n, _ in tff.structure.iter_elements(value_type)]
            if container is list or container is tuple or not any(names):
                return (container or list)(flat)
            return collections.OrderedDict(zip(names, flat))
        return flat[0]

    return as_value_type


def tagged_type(value_type, num_groups: int):
    """The value a group factory aggregates: the update, its one-hot group, a noise seed."""
    return tff.StructType([("update", value_type),
                           ("group", tff.TensorType(np.float32, [num_groups])),
                           ("seed", tff.TensorType(np.int32, [2]))])


class DPAggregator(tff.aggregators.UnweightedAggregationFactory):
    """The bare model delta through a one-group :class:`GroupGaussianFactory`: each client
    tags its update with the group and a fresh seed (:func:`~tff_idp.dpmath.secret_seed`),
    and the result is put back in the delta's own container type (what ``tff.learning``
    checks)."""

    def __init__(self, inner: GroupGaussianFactory):
        self.inner = inner

    def create(self, value_type) -> tff.templates.AggregationProcess:
        inner = self.inner.create(tagged_type(value_type, 1))

        @tff.tensorflow.computation(value_type)
        def tag(update):
            return collections.OrderedDict(update=update, group=tf.ones([1]),
                                           seed=dpmath.secret_seed())

        as_value_type = restore_container(value_type,
                                          inner.next.type_signature.result.result.member)

        @tff.federated_computation(inner.initialize.type_signature.result,
                                   tff.FederatedType(value_type, tff.CLIENTS))
        def next_fn(state, value):
            out = inner.next(state, tff.federated_map(tag, value))
            return tff.templates.MeasuredProcessOutput(
                state=out.state, result=tff.federated_map(as_value_type, out.result),
                measurements=out.measurements)

        return tff.templates.AggregationProcess(inner.initialize, next_fn)


__all__ = ["dp_aggregator", "dp_event", "dp_event_from_state", "DPAggregator",
           "ExtractingDpEventFromInitialStateError", "os_seed", "restore_container",
           "tagged_type"]
