"""What the canary audit can detect (docs/audit.md, "What that means for Gaussian
mechanisms"): for each setting (canary count m, delta, claimed epsilon), the audit's power
against a Gaussian mechanism of twice the claim and the smallest true epsilon it detects
with probability 0.8 (``tff_idp.audit.bounds.detection_power`` / ``detectable_epsilon``:
ideal Gaussian canaries through the audit's own guess rule, 1,000 seeded simulated audits).

    python scripts/audit_power.py            # writes runs/audit/power.json, prints a table

The grid: the audited runs' settings (digits: m 1,000, delta 1.07e-3; FMNIST: 6.98e-5) and
wider ones (m up to 100,000, delta down to 1e-16). About 2 minutes on 2 cores.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from tff_idp.audit import bounds

ROOT = Path(__file__).resolve().parents[1]
GRID = ([(1000, 1.07e-3, c) for c in (0.5, 1.5, 3.0)] +
        [(1000, d, c) for d in (6.98e-5, 1e-6, 1e-8) for c in (0.5, 1.0, 2.0, 3.0, 4.0)] +
        [(m, d, c) for m, d in ((2000, 1e-12), (5000, 1e-16), (10000, 1e-10))
         for c in (1.0, 3.0, 6.0, 10.0)] +
        [(100000, 1e-10, c) for c in (1.0, 2.0)])


def main() -> None:
    rows = []
    for m, delta, claim in GRID:
        power = bounds.detection_power(2 * claim, m, delta, claim)
        found = bounds.detectable_epsilon(m, delta, claim) if m <= 10000 else None
        rows.append({"canaries": m, "delta": delta, "claim": claim,
                     "ceiling": bounds.ceiling(m, delta), "power_at_twice_claim": power,
                     "detectable_epsilon": found})
        shown = "-" if found is None else ("inf" if math.isinf(found) else f"{found:.3g}")
        print(f"| {m} | {delta:.3g} | {claim:g} | {rows[-1]['ceiling']:.3g} | {power:.3f} | "
              f"{shown} |", flush=True)
    out = ROOT / "runs" / "audit" / "power.json"
    out.write_text(json.dumps({"method": bounds.POWER_METHOD, "rows": rows}, indent=1,
                              default=lambda v: None) + "\n")
    print(out)


if __name__ == "__main__":
    print("| canaries | delta | claim | ceiling | power at 2 x claim | detectable (power 0.8) |")
    print("|---|---|---|---|---|---|")
    main()
