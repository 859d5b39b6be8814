#!/usr/bin/env bash
# Set up the environment if needed, then run an experiment: scripts/run.sh [CONFIG] [--set k=v ...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/ensure_env.sh"
cd "$root"
source "$root/scripts/gpu_env.sh" "${TFF_IDP_VENV:-$root/.venv}"   # GPU=1 installs
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-3}"
exec "${TFF_IDP_VENV:-$root/.venv}/bin/python" -m tff_idp.run "$@"
