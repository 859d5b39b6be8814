#!/usr/bin/env bash
# Create (once) the project's virtual environment in .venv with the pinned packages.
# Sourced by scripts/run.sh and scripts/test.sh; safe to run on its own.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${TFF_IDP_VENV:-$root/.venv}"
py="${PYTHON:-}"
if [ -z "$py" ]; then
  for cand in python3.11 python3; do
    if command -v "$cand" >/dev/null 2>&1; then py="$cand"; break; fi
  done
fi
if [ -z "$py" ]; then
  echo "error: no python found; install Python 3.11 (tff-idp supports Python 3.11 only)" >&2
  exit 2
fi
ver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
case "$ver" in
  3.11) ;;
  *) echo "error: $py is Python $ver; tff-idp supports Python 3.11 only (the code reads TOML with the standard library's tomllib, 3.11+, and TensorFlow Federated 0.87 needs < 3.12; the pinned install is tested on 3.11): use python3.11, or set PYTHON=/path/to/python3.11" >&2
     exit 2 ;;
esac
gpu_libraries() {
  # GPU=1: the CUDA / cuDNN libraries of TensorFlow's and-cuda extra (requirements-gpu.txt)
  [ "${GPU:-0}" = "1" ] || return 0
  local gstamp="$venv/.tff_idp_gpu_installed" gwant
  gwant="$(sha256sum < "$root/requirements-gpu.txt" | cut -c1-16)"
  if [ -f "$gstamp" ] && [ "$(cat "$gstamp")" = "$gwant" ]; then return 0; fi
  echo "GPU=1: installing the CUDA 11.8 / cuDNN 8.7 libraries (about 2.5 GB, once)" >&2
  "$venv/bin/python" -m pip install --quiet --no-deps -r "$root/requirements-gpu.txt"
  echo "$gwant" > "$gstamp"
}
stamp="$venv/.tff_idp_installed"
want="$(cat "$root/requirements.txt" "$root/requirements-tff.txt" | sha256sum | cut -c1-16)"
project="$venv/.tff_idp_project"
want_project="$( (cat "$root/pyproject.toml"; echo "$root") | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  # the pins are in place; the package itself (its console scripts) follows pyproject.toml
  if [ ! -f "$project" ] || [ "$(cat "$project")" != "$want_project" ]; then
    "$venv/bin/python" -m pip install --quiet --no-deps -e "$root"
    echo "$want_project" > "$project"
  fi
  gpu_libraries
  exit 0
fi
echo "setting up $venv with Python $ver (a few minutes, once)" >&2
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip==23.3.1
"$venv/bin/python" -m pip install --quiet -r "$root/requirements.txt"
"$venv/bin/python" -m pip install --quiet --no-deps -r "$root/requirements-tff.txt"
"$venv/bin/python" -m pip install --quiet --no-deps -e "$root"
echo "$want_project" > "$project"
echo "$want" > "$stamp"
gpu_libraries
