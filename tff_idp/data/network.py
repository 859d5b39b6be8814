"""Whether a download host can be reached, decided in seconds: a download tool left alone
retries name resolution until it is killed (TFDS's did, leaving a ``.tmp`` file), so every
download first asks :func:`require_host` and fails in one line when there is no route."""
from __future__ import annotations

import socket
import threading
from typing import Optional

from .types import DataUnavailableError

# where each source's downloads come from (TFDS: the data sets' own URLs in TFDS 4.9)
HOSTS = {"fashion_mnist": "fashion-mnist.s3-website.eu-central-1.amazonaws.com",
         "cifar10": "www.cs.toronto.edu", "cifar100": "www.cs.toronto.edu",
         "svhn_cropped": "ufldl.stanford.edu", "emnist": "biometrics.nist.gov",
         "emnist_digits": "biometrics.nist.gov", "adult": "archive.ics.uci.edu",
         "tff": "storage.googleapis.com"}


def unreachable(host: str, port: int = 443, timeout: float = 10.0) -> Optional[str]:
    """Why ``host`` cannot be reached (one phrase), or None; at most ~``timeout`` + 5 s even
    when name resolution itself hangs (it runs in a daemon thread)."""
    out = {}

    def probe():
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            out["ok"] = True
        except OSError as e:
            out["why"] = str(e) or type(e).__name__

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout + 5.0)
    if out.get("ok"):
        return None
    return out.get("why", f"no answer within {timeout + 5.0:.0f} s")


def require_host(dataset: str, host: str, where: str) -> None:
    """One-line DataUnavailableError when ``host`` cannot be reached for ``dataset``."""
    why = unreachable(host)
    if why is not None:
        raise DataUnavailableError(
            f"dataset={dataset!r}: cannot reach {host} ({why}): no network for the download "
            f"here; download it on a machine with internet and copy it to {where}")
