#!/usr/bin/env bash
# Set up the environment if needed, then run the whole test suite: scripts/test.sh [pytest args]
# scripts/test.sh --fast [pytest args]: the fast tier, without the tests marked slow
# (tests/slow_tests.txt)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/ensure_env.sh"
cd "$root"
source "$root/scripts/gpu_env.sh" "${TFF_IDP_VENV:-$root/.venv}"   # GPU=1 installs
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
# real Fashion-MNIST for the tests that read it (Debian's package; skipped when unavailable)
TF_CPP_MIN_LOG_LEVEL=3 "${TFF_IDP_VENV:-$root/.venv}/bin/python" -m tff_idp.data fetch fashion_mnist >&2 ||
  echo "note: Fashion-MNIST not staged; its real-data tests are skipped" >&2
# two worker processes, an idle one taking tests queued for the other (TEST_WORKERS=0: one
# process, as pytest alone)
workers="${TEST_WORKERS:-2}"
if [ "${1:-}" = "--fast" ]; then
  shift
  set -- -m "not slow" "$@"
fi
if [ "$workers" = "0" ]; then
  exec "${TFF_IDP_VENV:-$root/.venv}/bin/python" -m pytest "$@"
fi
exec "${TFF_IDP_VENV:-$root/.venv}/bin/python" -m pytest -n "$workers" --dist worksteal "$@"
