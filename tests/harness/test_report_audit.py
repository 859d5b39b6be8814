"""The table report's canary-audit section (tff_idp.report.audit_rows)."""
from tff_idp.report import audit_rows


def _audit(group, ledger, lb_final, lb_rounds):
    bound = lambda eps, v: {"epsilon": eps, "guesses": 100, "correct": v, "canaries": 1000,
                            "confidence": 0.95}
    return {"group": group, "canaries": 1000, "inserted": 497, "delta": 1e-4,
            "confidence": 0.95, "ledger_epsilon": ledger, "seconds": 93.6,
            "final_model": {"one_shot_estimate": 0.25, "lower_bound": bound(lb_final, 71)},
            "every_round": {"one_shot_estimate": 0.5, "lower_bound": bound(lb_rounds, 80)}}


def test_one_row_per_audited_run_in_seed_order_with_the_ledger_beside_the_bounds():
    cells = {("FMNIST", "g0", "dp_fedavg"): {"audits": [(1, _audit(0, 0.5, 0.0, 0.11)),
                                                        (0, _audit(0, 0.5, 0.02, 0.0))]},
             ("FMNIST", "g0", "p_fedavg"): {"audits": [(0, _audit(2, None, 1.8, 2.7))]},
             ("FMNIST", "g0", "gdpfed"): {"audits": []}}
    rows = audit_rows(cells)
    assert [(r["method"], r["seed"]) for r in rows] == [("dp_fedavg", 0), ("dp_fedavg", 1),
                                                         ("p_fedavg", 0)]
    assert rows[0]["ledger eps"] == "0.5" and rows[2]["ledger eps"] == "not private"
    # runs audited before issue 56 carry no interval, ceiling or verdict: shown as such
    assert rows[0]["final model: estimate [90%]"] == "0.25"
    assert rows[0]["final model: LB (max)"] == "0.02" and rows[0]["final model: verdict"] == "-"
    assert rows[1]["every round: LB (max)"] == "0.11"
    assert rows[1]["every round: correct / guesses"] == "80 / 100"
    assert rows[0]["canaries (inserted)"] == "1000 (497)" and rows[0]["audit s"] == "94"


def test_the_interval_ceiling_and_verdict_are_shown_where_recorded():
    audit = _audit(2, 3.0, 0.0, 0.0)
    audit["every_round"]["one_shot_interval"] = [0.39, 2.15]
    audit["every_round"]["lower_bound"].update(ceiling=0.501, verdict="cannot detect")
    row = audit_rows({("D", "", "gdpfed"): {"audits": [(0, audit)]}})[0]
    assert row["every round: estimate [90%]"] == "0.5 [0.39, 2.15]"
    assert row["every round: LB (max)"] == "0 (0.501)"
    assert row["every round: verdict"] == "cannot detect (detects 11.4)"


def test_a_verdict_stored_under_the_old_rule_is_reported_by_todays():
    """Runs audited before issue 75 stored "no leak detected" wherever the ceiling was above
    the claim; the report recomputes the verdict: at delta 1e-4 and 1,000 canaries a claim
    of 0.5 is below the ceiling, but a true epsilon of 1 is never detected."""
    audit = _audit(0, 0.5, 0.0, 0.0)
    for key in ("final_model", "every_round"):
        audit[key]["lower_bound"].update(ceiling=3.2, verdict="no leak detected")
    row = audit_rows({("D", "", "dp_fedavg"): {"audits": [(0, audit)]}})[0]
    assert row["final model: verdict"].startswith("cannot detect (detects ")
    assert "no leak" not in " ".join(str(v) for v in row.values())
