"""The two ways to run a round, behind one interface: ``step(batches, infos, rnd, personal)
-> (metrics, new personal)`` and ``weights``; ``batches[phase][k]`` holds cohort client k's
(x, y) arrays of a local phase in training order (``client_data.client_examples``), so both backends
see the same batches; ``personal`` holds the cohort's rows of the personal store
(``personal_state``), one [K, ...] array per personal tensor, and the backend returns them
updated. What the clients do and how the server steps is the method's
(``algorithms.client_work.ClientProgram``): a backend names no method.

``TFFBackend``: TFF's processes from ``tff_idp.learning.process`` (reference semantics; TFF's
C++ worker runs them on the CPU, one client at a time): a method whose round is FedAvg's runs
the library's ``LearningProcess`` itself, the one ``tff_idp.learning`` publishes; the others
the suite's iterative process built from the same client round. ``FastBackend``: the same client work
(``algorithms.client_work``) and the same clip/noise/top-k/reweighting arithmetic
(``queries.GroupGaussianQuery.client_math`` / ``server_math``) inside one ``tf.function`` per
chunk of ``fast_chunk_size`` clients, on whatever device TensorFlow is given (a GPU when
there is one). When the model can be batched over clients (``cohort_model.CohortModel``:
every model of ``tff_idp.models``) a chunk's clients train together, their weights a batch
dimension (mode ``"cohort"``); otherwise one after another (mode ``"client-loop"``).
"""
from __future__ import annotations

import collections

import numpy as np
import tensorflow as tf

from .. import dpmath
from ..algorithms.client_work import CohortData, LocalTraining, PhaseBatches
from ..data.client_dataset import ClientDataset, cohort_batches, cohort_rows, padded_order
from ..methods.base import Aggregation
from . import low_rank
from .chunks import any_chunk_size, chunk_tensors, lane_rows, own_rows, padded_part_rows
from .cohort_model import CohortModel
from ..errors import RoundInterrupted, UnsupportedByBackend  # noqa: F401 (run catches)
from ..privacy.threat_model import diagnostic_columns, diagnostics_release
from ..runtime import import_tff, stop_requested


def client_diagnostics(cfg, plan) -> dict:
    """{statistic: metrics.csv column} of the clients' un-noised statistics this run
    reports (none in a private run unless ``simulation_diagnostics``; ``sim_`` columns then:
    ``tff_idp.privacy.threat_model``)."""
    return diagnostic_columns(diagnostics_release(plan.private, cfg.simulation_diagnostics))


def _agg_metric(agg, key):
    if key in agg:
        return float(agg[key])
    if key == "clip" and "dp_query_metrics" in agg:
        return float(agg["dp_query_metrics"].get("clip", np.nan))
    return np.nan


def empty_rounds_noised(factory) -> bool:
    """Whether a round with no client goes through the aggregator (its noise released):
    ours say so (``noise_in_empty_rounds``; a local-DP aggregator keeps the model), TFF's
    DP factory noises a zero sum too."""
    return getattr(factory, "noise_in_empty_rounds", True)


def learning_model_fn(model_fn, element_spec):
    """A ``tff.learning`` model of the suite's Keras model: the same forward pass, the mean
    cross-entropy from logits over every target (``client_work.example_losses``'s mean)."""
    spec = collections.OrderedDict(x=element_spec[0], y=element_spec[1])
    tff = import_tff()

    def fn():
        return tff.learning.models.from_keras_model(
            model_fn(), loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            input_spec=spec)
    return fn


class TFFBackend:
    name = "tff"
    mode = "tff"

    def __init__(self, cfg, plan, model_fn, w0, factory, element_spec, program):
        """``factory``: the method's :class:`~tff_idp.methods.base.Aggregation` (its TFF
        factory is taken) or a TFF aggregation factory."""
        from ..learning.optimizer import client_optimizer          # TFF: this backend's
        from ..learning.process import build_group_dp_process, compose_group_dp_fed_avg
        tff = import_tff()
        if isinstance(factory, Aggregation):
            factory = factory.factory
        self.batch_size, self.program = cfg.batch_size, program
        self.noise_in_empty_rounds = empty_rounds_noised(factory)
        self.diagnostics = client_diagnostics(cfg, plan)
        self.training = LocalTraining.of_config(cfg)
        # a FedAvg round (the whole model trained, its change sent, theta + server_lr *
        # aggregate) runs the library's LearningProcess, the clients stepping with the suite's
        # optimizer (learning.optimizer.SuiteOptimizer), their seeds and PFA's public-row
        # slots in their data; the others the iterative process of the same client round
        self.library = program.whole_model_fedavg
        if self.library:
            m = plan.num_aggregation_groups
            self.process = compose_group_dp_fed_avg(
                learning_model_fn(model_fn, element_spec),
                client_optimizer(cfg.client_optimizer, cfg.local_lr, cfg.momentum,
                                 cfg.weight_decay),
                tff.learning.optimizers.build_sgdm(cfg.server_lr), factory, list(range(m)), m,
                simulation=True, train_loss="train_loss" in self.diagnostics)
            self.state = self.process.set_model_weights(
                self.process.initialize(), tff.learning.models.ModelWeights(list(w0), []))
        else:
            self.process = build_group_dp_process(
                model_fn, w0, factory, element_spec, plan.num_aggregation_groups,
                self.training, program, client_diagnostics=bool(self.diagnostics))
            self.state = self.process.initialize()
        self.adaptive = bool(plan.adaptive_clip)   # a fixed clip is not reported (as fast)

    @property
    def weights(self):
        if self.library:
            return [np.asarray(w) for w in self.process.get_model_weights(self.state).trainable]
        return list(self.state["weights"])

    def snapshot(self):
        """Everything the next round depends on (model, optimizer and aggregator state), as
        a flat list of arrays (TFF's state holds TF-Privacy namedtuples that do not pickle)."""
        return [np.asarray(x) for x in tf.nest.flatten(self.state)]

    def restore(self, flat):
        self.state = tf.nest.pack_sequence_as(self.state, list(flat))

    def datasets(self, batches):
        """Each client's arrays as batches, per phase: full ``batch_size`` batches (steps;
        exactly that many examples are given) or, in a phase of epochs, a short last one;
        one dataset per client with one phase, a list of them with several. A phase on
        features computed once gets its examples in training order (``expand``): the TFF
        client runs the full forward pass, the same steps."""
        per_phase = [[self._batched(tuple(expand(e)), phase) for e in examples]
                     for phase, examples in zip(self.program.phases, batches)]
        return per_phase[0] if len(per_phase) == 1 else [list(c) for c in zip(*per_phase)]

    def tagged_datasets(self, batches, infos):
        """The library process's client data: each client's batches (one phase) with its
        aggregation group, noise seed and public-row slot in every element
        (``learning.process``)."""
        from ..learning.process import GROUP, SEED, SLOT
        out = []
        for examples, info in zip(batches[0], infos):
            x, y = tuple(expand(examples))
            n = len(x)
            out.append(self._batched(collections.OrderedDict(
                x=x, y=y, **{GROUP: np.full(n, int(np.argmax(info["group"])), np.int32),
                             SEED: np.tile(np.asarray(info["seed"], np.int32), (n, 1)),
                             SLOT: np.full(n, int(info["slot"]), np.int32)}),
                self.program.phases[0]))
        return out

    def _batched(self, elements, phase):
        """A client's examples of ``phase`` as ``batch_size`` batches: full ones (a phase of
        steps is given exactly that many examples) or, in a phase of epochs, a short last."""
        return tf.data.Dataset.from_tensor_slices(elements).batch(
            self.batch_size, drop_remainder=not phase.epochs)

    def _library_step(self, batches, infos, rnd):
        """A round of the library's process at the round's learning rate (its client
        optimizer's hyperparameter, eta * decay^t)."""
        hparams = self.process.get_hparams(self.state)
        hparams["client_work"]["learning_rate"] = np.float32(self.training.learning_rate(rnd))
        self.state = self.process.set_hparams(self.state, hparams)
        out = self.process.next(self.state, self.tagged_datasets(batches, infos))
        self.state = out.state
        return out.metrics

    def step(self, batches, infos, rnd, personal=()):
        """One round; with no client (``infos`` empty) the process runs on an empty cohort,
        so the aggregator releases its noise (``loop``: empty rounds)."""
        if self.library:
            metrics = self._library_step(batches, infos, rnd)
        elif self.program.personal:
            data = self.datasets(batches)
            rows = [[p[k] for p in personal] for k in range(len(infos))]
            self.state, metrics, kept = self.process.next(self.state, data, infos, rows)
            if infos:
                personal = [np.stack([np.asarray(c[j]) for c in kept])
                            for j in range(len(self.program.personal))]
        else:
            self.state, metrics = self.process.next(self.state, self.datasets(batches), infos)
        agg = metrics.get("aggregator", {})
        loss = metrics.get("client_work", metrics).get("train_loss", np.nan)
        values = {"train_loss": float(loss),
                  "clipped_fraction": _agg_metric(agg, "clipped_fraction"),
                  "mean_update_norm": _agg_metric(agg, "mean_update_norm")}
        return {**{col: values[k] for k, col in self.diagnostics.items()},
                "adaptive_clip": _agg_metric(agg, "clip") if self.adaptive else np.nan}, \
            list(personal)


def expand(examples):
    """A client's (x, y) of a phase in training order: (x, y) as given, or (x[order],
    y[order]) for a phase on features computed once, which gives (x, y, order)."""
    if len(examples) == 3:
        x, y, order = examples
        return ClientDataset(x, y).take(order)
    return ClientDataset(*examples)


class FastBackend:
    name = "fast"

    MODES = ("cohort", "client-loop")

    def __init__(self, cfg, plan, model_fn, w0, factory, element_spec, program,
                 mode: str = "cohort"):
        """``factory``: the method's :class:`~tff_idp.methods.base.Aggregation` or an
        aggregation factory of ours; this backend runs its query (the mechanism's
        arithmetic, without TFF: a run here never imports TFF). ``mode``: "cohort" trains a
        chunk's clients as one model where the model allows it (else "client-loop" is
        used); "client-loop" trains them one after another."""
        if mode not in self.MODES:
            raise ValueError(f"mode={mode!r} is not one of {self.MODES}")
        query = getattr(factory, "query", None)       # an adaptive plan needs its query's
        if query is None or (plan.adaptive_clip and query.adaptive is None):      # clipping
            raise UnsupportedByBackend(f"methods={plan.method!r}: TFF's own adaptive-clipping "
                                       "factory (adaptive_clipping='tff') runs on "
                                       "backend='tff' only; adaptive_clipping='ours' runs on both")
        self.cfg, self.program = cfg, program
        self.query = query
        self.noise_in_empty_rounds = empty_rounds_noised(query)
        self.diagnostics = client_diagnostics(cfg, plan)
        self.m = plan.num_aggregation_groups
        self.chunk = cfg.fast_chunk_size
        self.model = model_fn()
        self.cohort_model = CohortModel(self.model) if mode == "cohort" and \
            CohortModel.supports(self.model) else None
        self.mode = "cohort" if self.cohort_model is not None else "client-loop"
        self.state = self.query.initial_state_tensors()
        self._weights = [tf.constant(w, tf.float32) for w in w0]
        self.training = LocalTraining.of_config(cfg)
        self.trainer = self.training.trainer(program.reparam)
        self.specs = program.phase_specs()
        # phases on features computed once, when the chunk's clients train together
        self.cached = [ph.on_features and self.cohort_model is not None
                       and self.cohort_model.readout_tensors is not None
                       for ph in program.phases]
        # phases whose batches the chunk gathers by position from each client's examples
        # held once (shared by the round's phases): those on features and, in cohort mode,
        # every phase of epochs (memory: one copy of a client's examples, not one per phase)
        self.gathered = [c or (bool(ph.epochs) and self.cohort_model is not None)
                         for c, ph in zip(self.cached, program.phases)]
        # Dense kernels trained as low-rank updates (engine.low_rank; [] for none)
        self.factored = low_rank.factored_kernels(cfg, self.cohort_model, program,
                                                  self.trainer)
        # the clients' noise shares drawn as one sum per group (fast_noise_shares="summed")
        # where no client's noise has a support of its own; the shares of the clients whose
        # output the server reads by itself (the query's seen_alone: PFA's public rows)
        # are still drawn one by one
        self.summed_noise = (cfg.fast_noise_shares == "summed"
                             and self.query.noise_draw == "client"
                             and program.reparam is None)
        self._chunk_fn = tf.function(self._chunk_sums, reduce_retracing=True,
                                     autograph=False)      # its loops are written out
        self._part_fns = {}       # padded part chunks' functions, by rows (_part_chunk_fn)
        self._train_fn = None     # the training alone (train_chunks)

    @property
    def weights(self):
        return [w.numpy() for w in self._weights]

    def snapshot(self):
        return [w.numpy() for w in self._weights] + [
            np.asarray(x) for x in tf.nest.flatten(self.state)]

    def restore(self, flat):
        k = len(self._weights)
        self._weights = [tf.constant(w, tf.float32) for w in flat[:k]]
        self.state = tf.nest.pack_sequence_as(self.state, [tf.constant(x) for x in flat[k:]])

    def _aggregate(self, deltas, losses, groups, seeds, slots, state, counts, support=None):
        """Clip and noise K clients' updates (the query's ``client_math``, as the
        TFF backend), sum them per group (what secure aggregation reveals), return their
        extra contributions as the query's ``client_rows`` (PFA's public rows, placed once
        a round by :meth:`step`) and their summed statistics. With :attr:`summed_noise`
        the shares of the clients not seen alone are left out: :meth:`step` draws their
        sum."""
        noised, norm, clipped, bit = self.query.client_math(
            deltas, groups, seeds, state, counts, support, noise=not self.summed_noise)
        if self.summed_noise and not self.query.sums_only:
            noised = self._shares_seen_alone(noised, groups, seeds, slots, state, counts)
        sums = [tf.tensordot(groups, n, axes=[[0], [0]]) for n in noised]      # [M, ...]
        rows = self.query.client_rows(groups, slots, noised)
        return sums, rows, _stats(norm, clipped, losses, bit)

    def _shares_seen_alone(self, noised, groups, seeds, slots, state, counts):
        """The clipped outputs ``noised`` with the noise shares of the clients the server
        reads one by one (the query's ``seen_alone``: PFA's public rows) added, each drawn
        from the client's own seed as the per-client path draws it, and only theirs: the
        others' shares are in :meth:`step`'s summed draw."""
        idx = tf.where(self.query.seen_alone(groups, slots))                    # [P, 1]
        shares = self.query.client_noise([tf.gather_nd(n, idx) for n in noised],
                                         tf.gather_nd(groups, idx), tf.gather_nd(seeds, idx),
                                         state, counts)
        return [tf.tensor_scatter_nd_add(n, idx, x) for n, x in zip(noised, shares)]

    def _noise_sum(self, like, groups, seeds, slots, counts):
        """:attr:`summed_noise`'s draw: per group, the sum of the shares of the clients
        ``groups`` [K, M] (canaries included) that the server does not read alone, at once
        (``client_noise_sum``, from the round's :func:`_summed_noise_seed`)."""
        alone = self.query.seen_alone(tf.constant(groups), tf.constant(slots))
        summed = groups * (1.0 - tf.cast(alone, tf.float32)[:, None])
        return self.query.client_noise_sum(like, summed, _summed_noise_seed(seeds),
                                           self.state, counts)

    def _aggregate_factored(self, out, factors, losses, groups, seeds, state, counts):
        """:meth:`_aggregate` of updates whose Dense kernels are :class:`low_rank.
        DenseFactors` (``out`` holds a zero [K] in their place): the query's
        ``client_math`` in its parts, the norms and the group sums of those kernels from
        the factors; each client's noise share drawn as the per-client path draws it, or
        none here with :attr:`summed_noise` (the query reads the sums alone,
        ``sums_only``)."""
        factored = dict(zip(self.factored, factors))
        norm = tf.sqrt(tf.square(dpmath.norms_per_client(out))
                       + tf.add_n([f.sq_norms() for f in factors]))
        scale, clipped = self.query.clip_scales(norm, groups, state)
        like = [tf.TensorSpec([None] + w.shape.as_list()) for w in self._weights]
        noise = None if self.summed_noise else \
            self.query.client_noise(like, groups, seeds, state, counts)
        sums = []
        for i, t in enumerate(out):
            if i in factored:
                s = factored[i].group_sums(groups, scale)
            else:
                s = tf.tensordot(groups, dpmath.scaled_per_client([t], scale)[0], axes=[[0], [0]])
            sums.append(s if noise is None else s + tf.tensordot(groups, noise[i], axes=[[0], [0]]))
        bit = self.query.client_bits(norm, clipped, seeds, state, counts)
        return sums, self.query.no_client_rows(self._weights), \
            _stats(norm, clipped, losses, bit)

    def _chunk_sums(self, weights, state, data, tags, counts, lr, personal):
        """Per-group sums of the noised, clipped outputs of a chunk of clients, their extra
        contributions (the query's ``client_rows``: PFA's public rows), summed statistics
        and the clients' new personal rows. ``data`` = per phase (xs, ys, ws); ``tags`` =
        the clients' (groups [K, m], noise seeds [K, 2], canary slots [K]); ``personal`` =
        the chunk's rows of the personal store, [K, ...] per personal tensor."""
        program = self.program
        groups, seeds, slots = tags
        if self.factored:                         # together, Dense kernels as factors
            out, factors, losses = own_rows(self._train_factored(weights, data[0], lr),
                                            groups)
            if not self.query.sums_only:          # the server reads each update (PFA)
                out = low_rank.materialised(out, self.factored, factors, weights)
                sums, rows, stats = self._aggregate(out, losses, groups, seeds, slots,
                                                    state, counts)
            else:
                sums, rows, stats = self._aggregate_factored(out, factors, losses, groups,
                                                             seeds, state, counts)
            return sums, rows, stats, []
        if self.cohort_model is not None:        # the chunk's clients train together
            start, final, losses = self._train_together(weights, data, lr, personal)
            out, support = program.send(start, final, batched=True)
            out, losses = own_rows((out, losses), groups)
            sums, rows, stats = self._aggregate(out, losses, groups, seeds, slots, state,
                                                counts, support)
            return sums, rows, stats, program.kept(final)
        def one_client(k, sums, numbers, rows, stats, kept):   # one client after another
            start = program.start(weights, [p[k] for p in personal])
            final, loss = self.trainer.train_on_batches_phases(
                self.model, start,
                [PhaseBatches(CohortData(xs[k], ys[k], None if ws is None else ws[k]), spec)
                 for (xs, ys, ws), spec in zip(data, self.specs)], lr)
            out, support = program.send(start, final, batched=False)
            part, (n, r), st = self._aggregate(
                [d[None] for d in out], loss[None], groups[k:k + 1], seeds[k:k + 1],
                slots[k:k + 1], state, counts,
                None if support is None else [m if m is None else m[None] for m in support])
            return (k + 1, [acc + p for acc, p in zip(sums, part)], numbers.write(k, n),
                    rows.write(k, r), stats + st,
                    [ta.write(k, row) for ta, row in zip(kept, program.kept(final))])

        clients = tf.shape(groups)[0]
        none = self.query.no_client_rows(weights)       # 0 or 1 row a client, concatenated
        _, sums, numbers, rows, stats, kept = tf.while_loop(
            lambda k, *_: k < clients, one_client,
            (tf.constant(0), [tf.zeros([self.m] + w.shape.as_list()) for w in weights],
             *(tf.TensorArray(t.dtype, size=clients, infer_shape=False,
                              element_shape=tf.TensorShape([None]).concatenate(t.shape[1:]))
               for t in none), tf.zeros([4]),
             [tf.TensorArray(tf.float32, size=clients) for _ in personal]))
        return sums, (numbers.concat(), rows.concat()), stats, [ta.stack() for ta in kept]

    def _train_lanes(self, start, data, lr, k):
        """The chunk's k clients trained from ``start`` ([k, ...] per tensor) in
        ``fast_lanes`` independent sub-cohorts (:meth:`_in_lanes`): (final weights, mean
        loss per client). The lanes share no tensor, so TensorFlow's inter-op threads run
        them at once, one core each on a CPU (docs/backends.md); each client's arithmetic
        is the same as in one cohort."""
        return self._in_lanes(k, lambda lo, hi: self.trainer.train_cohort_phases(
            self.cohort_model, [t[lo:hi] for t in start],
            [PhaseBatches(CohortData(*(x if x is None else x[lo:hi] for x in d[:3]),
                                     order=d[3][lo:hi] if len(d) > 3 else None),
                          spec, on_features)
             for d, spec, on_features in zip(data, self.specs, self.cached)],
            lr, self.cohort_model.readout_tensors))

    def _train_factored(self, weights, data, lr):
        """:func:`low_rank.train_factored` of the chunk's clients in ``fast_lanes``
        sub-cohorts (:meth:`_in_lanes`): (what each sends, with a zero [K] in a factored
        kernel's place; :class:`low_rank.DenseFactors` per factored kernel; mean losses)."""
        return self._in_lanes(tf.shape(data[0])[0], lambda lo, hi: low_rank.train_factored(
            self.trainer, self.cohort_model, self.program, weights, self.factored,
            tuple(x if x is None else x[lo:hi] for x in data[:3]), lr, self.specs[0]))

    def _train_together(self, weights, data, lr, personal):
        """The chunk's clients trained together, each kernel its own: (start, final, mean
        losses), [K, ...] per tensor, K the rows trained (a padded part chunk: more)."""
        k = tf.shape(data[0][0])[0]
        start = self.program.start([tf.repeat(w[None], k, axis=0) for w in weights], personal)
        return (start,) + tuple(self._train_lanes(start, data, lr, k))

    def train_chunks(self, batches, rnd: int = 0):
        """The round's local training alone, chunk by chunk and lane by lane as :meth:`step`
        trains it (the factors' path or the cohort's; a part chunk at its own size), and
        nothing after it: no clip, noise or sum. What ``python -m tff_idp.bench`` times as
        ``fast_train``, so that a round less its training is the end of the round. Returns
        the last chunk's training output. Cohort mode only (the client loop trains and
        aggregates each client in one graph)."""
        if self.cohort_model is None:
            raise ValueError("train_chunks: the client loop has no training of its own")
        if self._train_fn is None:
            def train(weights, data, lr):
                if self.factored:
                    return self._train_factored(weights, data[0], lr)
                return self._train_together(weights, data, lr, [])[1:]
            self._train_fn = tf.function(train, reduce_retracing=True, autograph=False)
        data = self._round_arrays(batches)
        lr = tf.constant(self.training.learning_rate(rnd), tf.float32)
        out = None
        for a in range(0, len(batches[0]), self.chunk):
            out = self._train_fn(self._weights, chunk_tensors(data, a, a + self.chunk, None), lr)
        return out

    def _in_lanes(self, k, train):
        """``train(lo, hi)`` (a nest of tensors whose first axis is rows lo:hi's clients)
        in each lane of :func:`lane_rows` of the chunk's k clients, each lane's output cut
        to its own clients and the lanes concatenated back in client order."""
        parts = [tf.nest.map_structure(lambda t, keep=keep: t[:keep], train(lo, hi))
                 for lo, hi, keep in lane_rows(k, self.cfg.fast_lanes)]
        if len(parts) == 1:
            return parts[0]
        return tf.nest.map_structure(lambda *ts: tf.concat(ts, 0), *parts)

    def _round_arrays(self, batches):
        """Every phase's arrays of the round (:meth:`_phase_arrays`), sharing one copy."""
        shared = {}
        return [self._phase_arrays(b, ph, g, shared)
                for b, ph, g in zip(batches, self.program.phases, self.gathered)]

    def _phase_arrays(self, examples, phase, gathered, shared):
        """A phase's arrays for the chunk function: :meth:`_padded_batches` of the examples
        in training order, or (:attr:`gathered`) :meth:`_cached_arrays`."""
        if gathered:
            return self._cached_arrays(examples, shared)
        return self._padded_batches([expand(e) for e in examples], phase)

    def _cached_arrays(self, examples, shared):
        """(xs [K, n_max, ...] each client's examples once, zero-padded; ys [K, n_max];
        ws [K, steps, batch] 1/0 weights; order [K, steps, batch] indices into xs): the
        batches of :meth:`_padded_batches` for a phase of epochs, as indices. ``shared``
        ({ids of the clients' x arrays: (xs, ys)}) keeps one padded copy for the phases
        whose clients' examples are the same arrays (``client_data.phase_examples``)."""
        order, ws = padded_order([e[2] for e in examples], self.cfg.batch_size)
        key = tuple(id(e[0]) for e in examples) + tuple(id(e[1]) for e in examples)
        if key not in shared:
            shared[key] = cohort_rows([ClientDataset(e[0], e[1]) for e in examples])
        return shared[key] + (ws, order)

    def _padded_batches(self, examples, phase):
        """Every client's batches of one phase as [clients, steps, batch, ...] arrays with
        example weights (``data.client_dataset.cohort_batches``): ``phase.steps`` full
        batches each (weights None: nothing is padded), or (a phase of epochs) each client's
        own number of batches, its short last batch and missing steps padded with weight 0."""
        return cohort_batches(examples, self.cfg.batch_size,
                              None if phase.epochs else phase.steps)

    @property
    def pads_part_chunks(self) -> bool:
        """Whether a part chunk trains padded (:meth:`_padded_rows`): its clients train
        together (cohort mode) and keep nothing of their own (no personal part, no
        reparametrisation's support), so rows past its clients can be cut off after
        training, before the clip."""
        return bool(self.factored) or (self.cohort_model is not None
                                       and not self.program.personal
                                       and self.program.reparam is None)

    def _padded_rows(self, left: int):
        """The rows a part chunk of ``left`` clients trains at (``chunks.padded_part_rows``),
        or None: a full chunk, or a round that does not pad (:attr:`pads_part_chunks`)."""
        if (not self.pads_part_chunks or left >= self.chunk
                or tf.config.functions_run_eagerly()):
            return None
        return padded_part_rows(left, self.chunk, self.cfg.fast_lanes)

    def _part_chunk_fn(self, rows: int, args):
        """The chunk function of part chunks padded to ``rows`` clients: a graph of its own
        whose training arrays have that known size (a part chunk's size changes every round
        with Poisson sampling; traced at any size it took 1.27-1.29x as long as a chunk of
        known size, docs/backends.md "Part chunks"), its clients' tags of any size, traced
        once per size."""
        fn = self._part_fns.get(rows)
        if fn is None:
            fn = self._part_fns[rows] = tf.function(self._chunk_sums, reduce_retracing=True,
                                                    autograph=False)
            fn.get_concrete_function(*any_chunk_size(args, keep_data=True))
        return fn

    def step(self, batches, infos, rnd, personal=(), canaries=None):
        """One round; with no client (``infos`` empty) the aggregator still runs on zero
        sums and releases its noise (``loop``: empty rounds). ``canaries`` (the audit's,
        ``tff_idp.audit.canaries``): (updates [K, ...] per tensor, one-hot groups [K, M],
        seeds [K, 2]); they count in their group's cohort and pass through the same clip,
        noise and sum as the clients (no training)."""
        data = self._round_arrays(batches) if infos else None     # read by chunks only
        groups = np.array([i["group"] for i in infos], np.float32).reshape(len(infos), self.m)
        seeds = np.array([i["seed"] for i in infos], np.int32).reshape(len(infos), 2)
        counts = groups.sum(0)
        if canaries is not None:
            counts = counts + canaries[1].sum(0)
        counts = tf.constant(counts, tf.float32)
        lr = tf.constant(self.training.learning_rate(rnd), tf.float32)
        slots = np.array([i.get("slot", -1) for i in infos], np.int32)
        sums, rows, stats, kept = None, [], tf.zeros([4]), []
        for a in range(0, len(infos), self.chunk):
            if a and stop_requested():       # a long round stops at the next chunk; nothing
                raise RoundInterrupted()     # of it is applied (weights, state: at the end)
            b = a + self.chunk
            part_rows = self._padded_rows(len(infos) - a)
            args = (self._weights, self.state, chunk_tensors(data, a, b, part_rows),
                    (groups[a:b], seeds[a:b], slots[a:b]), counts, lr,
                    [p[a:b] for p in personal])
            fn = self._chunk_fn if part_rows is None else self._part_chunk_fn(part_rows, args)
            if (part_rows is None and len(infos) - a < self.chunk   # a part chunk first:
                    and self._chunk_fn.experimental_get_tracing_count() == 0   # its size
                    and not tf.config.functions_run_eagerly()):                # will vary
                self._chunk_fn.get_concrete_function(*any_chunk_size(args))
            part, r, s, personal_rows = fn(*args)
            sums = part if sums is None else [x + y for x, y in zip(sums, part)]
            rows.append(r)
            stats += s
            kept.append([p.numpy() for p in personal_rows])
        if sums is None:                  # no client: the aggregator noises zero sums
            sums = [tf.zeros([self.m] + w.shape.as_list()) for w in self._weights]
            rows.append(self.query.no_client_rows(self._weights))
        drawn = (groups, seeds, slots)        # whose noise shares the round holds
        if canaries is not None and len(canaries[1]):
            c_slots = np.full(len(canaries[1]), -1, np.int32)     # no canary has a row
            drawn = (np.concatenate([groups, canaries[1]]), np.concatenate([seeds, canaries[2]]),
                     np.concatenate([slots, c_slots]))
            c_sums, c_rows, c_stats = self._aggregate(
                [tf.constant(u) for u in canaries[0]], tf.zeros([len(canaries[1])]),
                tf.constant(canaries[1]), tf.constant(canaries[2]), tf.constant(c_slots),
                self.state, counts)
            sums = [x + y for x, y in zip(sums, c_sums)]
            rows.append(c_rows)
            stats += tf.stack([0.0, 0.0, 0.0, c_stats[3]])     # their adaptive-clip bits
        if self.summed_noise and len(drawn[0]):   # their shares, summed per group, at once
            sums = [s + n for s, n in zip(sums, self._noise_sum(sums, *drawn, counts))]
        # the rows the server reads one by one (PFA's public rows), placed once a round,
        # not as an [S, d] matrix made and summed a chunk (docs/backends.md), and let go
        # of before the server's projection (PFA's 40 rows: 270 MB)
        numbers, rows = (tf.concat(t, 0) for t in zip(*rows))    # the chunks' list freed
        extra = self.query.extra_from_rows(numbers, rows)
        del numbers, rows
        update, _ = self.query.server_math(sums, extra, self.state, counts)
        self._weights = self.program.server_update(self._weights, update, self.cfg.server_lr,
                                                   self.program.masks)
        self.state = self.query.state_update_math(self.state, stats[3], counts)
        next_clip = float(self.state["clips"][0])      # reported like TFF's DP factory
        n = float(len(infos))
        norm, clipped, loss, _ = (stats / n).numpy() if infos else (np.nan,) * 4
        values = {"train_loss": float(loss), "clipped_fraction": float(clipped),
                  "mean_update_norm": float(norm)}
        return {**{col: values[k] for k, col in self.diagnostics.items()},
                "adaptive_clip": next_clip if self.query.adaptive is not None else np.nan}, \
            [np.concatenate(rows) for rows in zip(*kept)] if infos else list(personal)


# the values of the config key ``fast_noise_shares`` (tff_idp.config.NOISE_SHARES, which a
# test ties to this tuple)
NOISE_SHARES = ("each", "summed")


def _summed_noise_seed(seeds):
    """The seed of a round's summed client noise (``fast_noise_shares="summed"``): the
    round's noise seed (every client's seed is (it, client id)) with -1 in place of a
    client id, a seed no client or canary (ids from 0) draws from."""
    return tf.constant([seeds[0, 0], -1], tf.int32)


def _stats(norm, clipped, losses, bit):
    """A chunk's summed statistics: pre-clip norms, clipped indicators, losses, noised
    adaptive-clipping bits."""
    return tf.stack([tf.reduce_sum(norm), tf.reduce_sum(clipped), tf.reduce_sum(losses),
                     tf.reduce_sum(bit)])


BACKENDS = {"tff": TFFBackend, "fast": FastBackend}
