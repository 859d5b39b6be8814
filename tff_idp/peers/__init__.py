"""Peer frameworks' workloads for ``python -m tff_idp.bench --peers``, each run as a file
in its own environment (never imported here)."""
