"""Empirical privacy audits with canary clients (TF-free scoring and bounds)."""
from .bounds import (best_lower_bound, bootstrap_interval, canaries_needed, ceiling,
                     cosine_scores, detectable_epsilon, detection_power, gaussian_mu,
                     gaussian_pair_delta, guesses, lower_bound, one_shot_epsilon,
                     one_shot_epsilon_null, p_value, verdict)

__all__ = ["best_lower_bound", "bootstrap_interval", "canaries_needed", "ceiling",
           "cosine_scores", "detectable_epsilon", "detection_power", "gaussian_mu",
           "gaussian_pair_delta", "guesses", "lower_bound", "one_shot_epsilon",
           "one_shot_epsilon_null", "p_value", "verdict"]
