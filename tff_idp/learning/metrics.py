"""What stock ``tff.learning`` FedAvg releases besides the model, and an aggregator for it
that releases nothing a client computed.

``build_unweighted_fed_avg`` / ``build_weighted_fed_avg`` have two channels from the clients
to the server: ``model_aggregator`` (the model change: :func:`~tff_idp.learning.dp_aggregator`
clips and noises it) and ``metrics_aggregator``, whose default
(``tff.learning.metrics.sum_then_finalize``) sums every client's unfinalized training
metrics **un-noised**: the model's loss (its sum and example count), ``num_examples``,
``num_batches`` and any Keras metric the model was built with, released under
``client_work.train``. One client's data moves them freely (a client with 1,000 examples in
place of 8 moves ``num_examples`` from 16 to 1,008), so no epsilon of the model aggregator
covers them. :func:`private_metrics_aggregator` releases none of them::

    process = tff.learning.algorithms.build_unweighted_fed_avg(
        model_fn, client_optimizer_fn, server_optimizer_fn,
        model_aggregator=tff_idp.learning.dp_aggregator(1.1, clients_per_round=10),
        metrics_aggregator=tff_idp.learning.private_metrics_aggregator)

The clients still compute their metrics (TFF's client work does), but they stay at the
clients: the aggregator sums nothing, and ``client_work.train`` is an empty mapping. The
other measurements stock FedAvg releases are the model aggregator's (``dp_aggregator``:
cohort size, noise std, kept fraction, clip: public parameters and post-processing of the
noised sum) and the finalizer's (computed at the server from the noised aggregate):
post-processing, inside the model aggregator's epsilon. With ``build_weighted_fed_avg`` the
clients' weights (their example counts) go to the model aggregator, and
``tff.aggregators.as_weighted_aggregator(dp_aggregator(...))`` drops them unread.
"""
from __future__ import annotations

import collections
from collections.abc import Mapping

from ..runtime import import_tff

tff = import_tff()


def private_metrics_aggregator(metric_finalizers, local_unfinalized_metrics_type=None):
    """A ``metrics_aggregator`` for stock ``tff.learning`` algorithms (module docstring):
    the same signature as ``tff.learning.metrics.sum_then_finalize``, but the federated
    computation it returns releases an empty ``OrderedDict`` at the server and sums nothing
    from the clients. ``metric_finalizers`` is checked as TFF checks it and otherwise
    unused."""
    del local_unfinalized_metrics_type                       # unused, as in TFF
    if not (callable(metric_finalizers) or isinstance(metric_finalizers, Mapping)):
        raise TypeError(f"metric_finalizers={metric_finalizers!r}: must be a model's "
                        "metric_finalizers() mapping or finalize_metrics callable")

    @tff.tensorflow.computation
    def nothing():
        return collections.OrderedDict()

    @tff.federated_computation
    def aggregate(client_local_unfinalized_metrics):
        del client_local_unfinalized_metrics                 # never leaves the clients
        return tff.federated_eval(nothing, tff.SERVER)

    return aggregate


__all__ = ["private_metrics_aggregator"]
