"""Reproduction harness: paper tables as configs, scales, the grid runner, Slurm, reports."""
