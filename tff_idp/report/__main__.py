"""``python -m tff_idp.report``: see ``tff_idp.report.cli``."""
import sys

from .cli import main

sys.exit(main())
