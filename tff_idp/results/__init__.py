"""Run folders, atomic writes, the run summary and table rendering."""
from .store import RunFolder, format_table, is_complete, write_csv, write_json
from .summary import RunSummary

__all__ = ["RunFolder", "RunSummary", "format_table", "is_complete", "write_csv", "write_json"]
