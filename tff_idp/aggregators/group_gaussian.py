"""Group-wise client-level Gaussian aggregation as a TFF aggregation factory (GDPFed, papers
000/003, Algorithm 1): :class:`GroupGaussianFactory` places the arithmetic of
:class:`~tff_idp.queries.group_gaussian.GroupGaussianQuery` (the mechanism: its module
docstring) on TFF's clients and server.

Each client value is ``(update, group, seed)``: the model update, a one-hot float32[M] row
naming its privacy group, and an int32[2] noise seed. The cohort size per group is summed
(the server knows it: it sampled the cohort); each client runs the query's record step
(clip, its noise share); the noised updates are summed per group (an [M, ...] sum: what
secure aggregation reveals; ``record_aggregation_factory`` chooses the sum, e.g. TFF's
``SecureSumFactory``); the server runs the query's step and its state update.

Measurements (nested under this factory's name by the process): per-group cohort counts,
per-group noise std on the group sum and kept fraction, and with adaptive clipping the clip
set from the noised count; nothing a client sends un-noised. The clients' clipped fraction
and mean pre-clip norm are summed only when ``client_diagnostics`` is set (a simulation's
diagnostic outside the protocol, ``tff_idp.privacy.threat_model.CLIENT_DIAGNOSTICS``; a
constructor argument the round loop passes, off by default). The state holds the per-group
parameters, so a process may change them between rounds.
"""
from __future__ import annotations

import collections

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from ..queries.group_gaussian import GroupGaussianQuery


class GroupGaussianFactory(tff.aggregators.UnweightedAggregationFactory):
    """The query (``QUERY``, built from the arguments: see
    :class:`~tff_idp.queries.group_gaussian.GroupGaussianQuery`) as a TFF factory.

    Args beyond the query's:
      record_aggregation_factory: how the clients' noised, grouped updates are summed
        (an unweighted ``tff.aggregators`` factory, e.g. ``SecureSumFactory``, as TFF's
        ``DifferentiallyPrivateFactory`` takes it); None: ``federated_sum``. With one,
        state and measurements are ``OrderedDict(query=<ours>, record=<the inner
        process's>)``. It must not raise the sensitivity (a secure sum whose bounds clip
        noised values changes the sum; its measurements count them).
    """

    QUERY = GroupGaussianQuery
    needs_client_info = True   # aggregates (update, group, seed), see the module docstring

    def __init__(self, *args, record_aggregation_factory=None, client_diagnostics=False,
                 shared_masks=None, query=None, **kwargs):
        """``client_diagnostics``: also sum the clients' un-noised pre-clip norms and
        clipped indicators (module docstring), a simulation diagnostic that a deployment
        must not send; off unless asked for. ``shared_masks``: the noise on these
        coordinates only (the query's :meth:`~GroupGaussianQuery.on_shared`). ``query``:
        a query of this factory's ``QUERY`` type built whole (shared masks included), in
        place of the query's arguments (a method's ``aggregation_query``)."""
        if query is not None:
            if args or kwargs or shared_masks is not None:
                raise TypeError("query= takes a query built whole: no query arguments or "
                                "shared_masks beside it")
            if type(query) is not self.QUERY:
                raise TypeError(f"query={type(query).__name__}: {type(self).__name__} "
                                f"places a {self.QUERY.__name__}")
        if record_aggregation_factory is not None and not isinstance(
                record_aggregation_factory, tff.aggregators.UnweightedAggregationFactory):
            raise TypeError(f"record_aggregation_factory={record_aggregation_factory!r}: "
                            "must be a tff.aggregators.UnweightedAggregationFactory or None")
        self.record_aggregation_factory = record_aggregation_factory
        self.client_diagnostics = bool(client_diagnostics)
        self.query = query if query is not None else \
            self.QUERY(*args, **kwargs).on_shared(shared_masks)

    # the query's settings, as the round loop and the backends read them
    num_groups = property(lambda self: self.query.num_groups)
    adaptive = property(lambda self: self.query.adaptive)
    noise_draw = property(lambda self: self.query.noise_draw)
    noise_in_empty_rounds = property(lambda self: self.query.noise_in_empty_rounds)

    def create(self, value_type) -> tff.templates.AggregationProcess:
        m = self.num_groups
        names = ({n for n, _ in tff.structure.iter_elements(value_type)}
                 if isinstance(value_type, tff.StructType) else set())
        if not {"update", "group", "seed"} <= names:
            raise TypeError("GroupGaussianFactory aggregates (update, group, seed) structs; got "
                            f"{value_type}")
        group_type = value_type.group
        if group_type.shape != (m,):
            raise TypeError(f"group must be float32[{m}] one-hot, got {group_type}")

        @tff.tensorflow.computation
        def initial_state():
            return self.query.initial_state_tensors()

        state_type = initial_state.type_signature.result

        @tff.tensorflow.computation(group_type)
        def group_of(group):
            return group

        @tff.tensorflow.computation(value_type, state_type, tff.TensorType(np.float32, [m]))
        def client_step(value, state, counts):
            update = _as_container(value.update)
            groups, seeds = value.group[None], value.seed[None]      # a cohort of one
            slots = value.slot[None] if hasattr(value, "slot") else None
            support = None
            if "support" in names:               # where this client's noise may land
                support = [t[None] for t in tf.nest.flatten(_as_container(value.support))]
            noised, norm, was_clipped, bit = self.query.client_math(
                [t[None] for t in tf.nest.flatten(update)], groups, seeds, state, counts,
                support)
            # place the update in its group's row: an [M, ...] tensor per weight tensor
            grouped = [tf.reshape(value.group, [m] + [1] * (len(t.shape) - 1)) * t
                       for t in noised]
            stats = collections.OrderedDict()         # what else leaves the client
            if self.adaptive is not None:              # the noised clipped-count bit
                stats["bit"] = bit[0]
            if self.client_diagnostics:                # un-noised: simulation only
                stats.update(norm=norm[0], clipped=was_clipped[0])
            if not stats:
                stats["nothing"] = tf.zeros([0])       # a constant: no client data
            return (tf.nest.pack_sequence_as(update, grouped), stats,
                    self.query.client_extra(groups, seeds, slots, noised))

        grouped_type, _, extra_type = client_step.type_signature.result
        record = (None if self.record_aggregation_factory is None
                  else self.record_aggregation_factory.create(grouped_type))

        @tff.federated_computation
        def init_fn():
            params = tff.federated_eval(initial_state, tff.SERVER)
            if record is None:
                return params
            return tff.federated_zip(collections.OrderedDict(query=params,
                                                             record=record.initialize()))

        sends_stats = self.adaptive is not None or self.client_diagnostics

        @tff.tensorflow.computation
        def no_stats():
            return collections.OrderedDict(nothing=tf.zeros([0]))

        @tff.tensorflow.computation(grouped_type, extra_type, state_type,
                                    tff.TensorType(np.float32, [m]))
        def server_step(group_sums, extra_sum, state, counts):
            group_sums = _as_container(group_sums)
            sums = tf.nest.flatten(group_sums)
            total, kept_fraction = self.query.server_math(sums, extra_sum, state, counts)
            return tf.nest.pack_sequence_as(group_sums, total), kept_fraction

        @tff.tensorflow.computation(server_step.type_signature.result[1],
                                    tff.TensorType(np.float32, [m]), state_type,
                                    client_step.type_signature.result[1])
        def measure(kept_fraction, counts, state, stat_sums):
            total = tf.maximum(tf.reduce_sum(counts), 1.0)
            out = collections.OrderedDict(
                cohort_per_group=counts,
                noise_stddevs=state["noise_stddevs"],   # the plan's and the query's name
                kept_fraction_per_group=kept_fraction,
                clip=state["clips"][0])
            if self.client_diagnostics:
                out.update(clipped_fraction=stat_sums["clipped"] / total,
                           mean_update_norm=stat_sums["norm"] / total)
            return out

        @tff.tensorflow.computation(state_type, client_step.type_signature.result[1],
                                    tff.TensorType(np.float32, [m]))
        def update_state(state, stat_sums, counts):
            bit_sum = stat_sums["bit"] if self.adaptive is not None else tf.zeros([])
            return self.query.state_update_math(state, bit_sum, counts)

        @tff.federated_computation(init_fn.type_signature.result,
                                   tff.FederatedType(value_type, tff.CLIENTS))
        def next_fn(state, value):
            full_state = state
            if record is not None:
                state = full_state.query
            counts = tff.federated_sum(tff.federated_map(group_of, value.group))
            grouped, stats, extra = tff.federated_map(
                client_step, (value, tff.federated_broadcast(state),
                              tff.federated_broadcast(counts)))
            if record is None:
                group_sums = tff.federated_sum(grouped)
            else:
                summed = record.next(full_state.record, grouped)
                group_sums = summed.result
            if sends_stats:
                stat_sums = tff.federated_sum(stats)
            else:                     # nothing besides the noised sums leaves the clients
                stat_sums = tff.federated_eval(no_stats, tff.SERVER)
            extra_sum = tff.federated_sum(extra)
            result, kept = tff.federated_map(server_step,
                                             (group_sums, extra_sum, state, counts))
            new_state = tff.federated_map(update_state, (state, stat_sums, counts))
            # like TFF's DP factory: the clip reported is the one for the next round
            measurements = tff.federated_map(measure, (kept, counts, new_state, stat_sums))
            if record is not None:
                new_state = tff.federated_zip(collections.OrderedDict(
                    query=new_state, record=summed.state))
                measurements = tff.federated_zip(collections.OrderedDict(
                    query=measurements, record=summed.measurements))
            return tff.templates.MeasuredProcessOutput(state=new_state, result=result,
                                                       measurements=measurements)

        return tff.templates.AggregationProcess(init_fn, next_fn)


def _as_container(value):
    """A TFF Struct argument as nested OrderedDicts / tuples, for tf.nest."""
    if isinstance(value, tff.structure.Struct):
        return tff.structure.to_odict_or_tuple(value, recursive=True)
    return value
