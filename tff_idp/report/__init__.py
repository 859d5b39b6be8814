"""A paper table's report (``python -m tff_idp.report``, the command line in ``cli``): its runs
read back (``runs``), its tables (``tables``) and figures (``figures``), the whole written
into the report's folder (``document``)."""
from .cli import main
from .document import main_table, report_dir, write_report
from .figures import plot_convergence, plot_rates, plot_run_curves
from .runs import (AVERAGED, CLIENT, CURVES, SECOND_METRICS, UnreadableRun, cells_from_curves,
                   collect, curve_rows, mean_std, read_run)
from .tables import (audit_rows, bounds_table, cost_lines, noise_table, observer_rows,
                     rates_sweep, train_table, where_trained)

__all__ = ["AVERAGED", "CLIENT", "CURVES", "SECOND_METRICS", "UnreadableRun", "audit_rows",
           "bounds_table", "cells_from_curves", "collect", "cost_lines", "curve_rows", "main",
           "main_table", "mean_std", "noise_table", "observer_rows", "plot_convergence",
           "plot_rates", "plot_run_curves", "rates_sweep", "read_run", "report_dir",
           "train_table", "where_trained", "write_report"]
