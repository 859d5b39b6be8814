"""Data sources, partitioners and the federated client store."""
from .partition import assign_groups, iid_partition
from .sources import SOURCES, ArrayData, load

__all__ = ["assign_groups", "iid_partition", "SOURCES", "ArrayData", "load"]
