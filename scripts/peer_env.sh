#!/usr/bin/env bash
# Make .venv-peers/: pfl-research (Apple's pfl 0.6.0) with TensorFlow 2.18, pinned in
# requirements-peers.txt, for `python -m tff_idp.bench --peers pfl`. Its own environment:
# pfl needs TensorFlow >= 2.16 and TFF 0.87 pins 2.14. Optional (tests and CI do not need
# it); about 2 GB, from PyPI.
#   bash scripts/peer_env.sh            # PYTHON=python3.11 by default
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3.11}
"$python" -m venv .venv-peers
.venv-peers/bin/pip install --quiet --upgrade pip
.venv-peers/bin/pip install --quiet -r requirements-peers.txt
.venv-peers/bin/python - <<'PY'
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
from importlib.metadata import version
import pfl.algorithm  # noqa: F401 (imports, or the environment is not usable)
print(f".venv-peers: pfl {version('pfl')}, tensorflow {version('tensorflow')}, "
      f"tf-keras {version('tf_keras')}")
PY
