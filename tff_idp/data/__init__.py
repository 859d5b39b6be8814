"""Data sources, partitioners and the store of built federated sets."""
from .partition import (assign_groups, classes_per_client, dealt_classes,
                        dirichlet_label_skew, dirichlet_per_client, iid_partition,
                        label_shards, pachinko, validation_split)
from .sources import FEDERATED, SOURCES, load
from .types import ArrayData, DataUnavailableError
from .store import DataStore

__all__ = ["assign_groups", "classes_per_client", "dealt_classes", "validation_split",
           "dirichlet_label_skew", "dirichlet_per_client", "iid_partition", "label_shards",
           "pachinko", "FEDERATED", "SOURCES", "ArrayData",
           "DataUnavailableError", "load", "DataStore"]
