#!/usr/bin/env bash
# Sourced (by run.sh, test.sh and the Slurm array script) with the environment's folder:
# puts the CUDA libraries of a GPU=1 install (<venv>/lib/python3*/site-packages/nvidia/*/lib)
# on LD_LIBRARY_PATH. TensorFlow 2.14 opens them by name and does not look there itself.
# Does nothing for a CPU-only environment.
_tff_idp_venv="${1:-}"
for _tff_idp_lib in "$_tff_idp_venv"/lib/python3*/site-packages/nvidia/*/lib; do
  if [ -d "$_tff_idp_lib" ]; then
    LD_LIBRARY_PATH="$_tff_idp_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
done
if [ -n "${LD_LIBRARY_PATH:-}" ]; then export LD_LIBRARY_PATH; fi
unset _tff_idp_venv _tff_idp_lib
