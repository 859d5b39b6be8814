"""Privacy accounting and calibration. Pure Python on dp_accounting: no TensorFlow here."""
from . import accounting, gdpfed, ledger, threat_model
from .accounting import calibrate_noise_multiplier, epsilon
from .ledger import BudgetExceededError, PrivacyLedger

__all__ = ["accounting", "gdpfed", "ledger", "threat_model", "epsilon", "calibrate_noise_multiplier",
           "PrivacyLedger", "BudgetExceededError"]
