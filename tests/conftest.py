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


SLOW_TESTS = os.path.join(os.path.dirname(__file__), "slow_tests.txt")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a test listed in tests/slow_tests.txt (made by "
                            "scripts/slow_tests.py); scripts/test.sh --fast leaves them out")


def pytest_collection_modifyitems(config, items):
    """Mark the listed tests slow: ``pytest -m "not slow"`` is the fast tier."""
    with open(SLOW_TESTS) as f:
        slow = {line.strip() for line in f if line.strip() and not line.startswith("#")}
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
