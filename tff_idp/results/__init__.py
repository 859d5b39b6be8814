"""Run folders, atomic writes and table rendering."""
from .store import (RunFolder, format_table, is_complete, reported_accuracy, write_csv,
                    write_json)

__all__ = ["RunFolder", "format_table", "is_complete", "reported_accuracy", "write_csv",
           "write_json"]
