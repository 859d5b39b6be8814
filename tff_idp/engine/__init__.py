"""Round loops. ``experiment`` prepares (no TF); ``loop`` runs rounds on a backend (``backends``)."""
