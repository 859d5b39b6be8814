import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tff_idp  # noqa: E402,F401  (oneDNN on before any test imports TensorFlow)


@pytest.fixture(scope="session", autouse=True)
def _close_tff_worker():
    """TFF's worker_binary must not outlive the test session."""
    yield
    from tff_idp.runtime import close_tff
    close_tff()
