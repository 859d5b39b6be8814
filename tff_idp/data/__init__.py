"""Data sources, partitioners and the federated client store."""
from .partition import (assign_groups, classes_per_client, dirichlet_label_skew,
                        iid_partition, pachinko)
from .sources import SOURCES, ArrayData, DataUnavailableError, load

__all__ = ["assign_groups", "classes_per_client", "dirichlet_label_skew", "iid_partition",
           "pachinko", "SOURCES", "ArrayData", "DataUnavailableError", "load"]
