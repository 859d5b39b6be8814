"""``python -m tff_idp.report``: see ``tff_idp.report.cli``."""
from .. import EARLY_STOPS          # a stop during the imports (tff_idp/__init__.py)
from ..runtime import exit_quietly, run_stoppable
from .cli import main

exit_quietly(run_stoppable(main, early=EARLY_STOPS))
