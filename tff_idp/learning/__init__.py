"""tff-idp as a TensorFlow Federated library (docs/library.md).

- :func:`dp_aggregator`: a client-level Gaussian DP aggregator for stock
  ``tff.learning.algorithms.build_unweighted_fed_avg`` / ``build_weighted_fed_avg``
  (through ``tff.aggregators.as_weighted_aggregator``; ``aggregator``); :func:`dp_event`,
  :func:`dp_event_from_state` for dp-accounting;
  :func:`private_metrics_aggregator` keeps stock FedAvg's un-noised training metrics at the
  clients (``metrics``).
- :func:`plan_from_budgets`: a group-DP method's per-group numbers from the budgets
  (``plan``); :func:`sample_cohort` samples a round's cohort as the plan assumes.
- :func:`build_group_dp_fed_avg`: the method as a ``tff.learning`` ``LearningProcess``
  (``process``); :func:`with_group` puts a client's privacy group in its data;
  :func:`client_optimizer`: the suite's client SGD(momentum) / Adam as a TFF optimizer.
"""
from .aggregator import (DPAggregator, ExtractingDpEventFromInitialStateError, dp_aggregator,
                         dp_event, dp_event_from_state)
from .metrics import private_metrics_aggregator
from .optimizer import client_optimizer
from .plan import FEDAVG_FAMILY, GroupDPPlan, plan_from_budgets, sample_cohort
from .process import GROUP, build_group_dp_fed_avg, with_group

__all__ = ["DPAggregator", "ExtractingDpEventFromInitialStateError", "dp_aggregator",
           "dp_event", "dp_event_from_state", "private_metrics_aggregator", "FEDAVG_FAMILY",
           "GroupDPPlan", "plan_from_budgets", "sample_cohort", "GROUP", "build_group_dp_fed_avg",
           "client_optimizer", "with_group"]
