"""What a run reports about its guarantee: the summary's privacy block, as a user reads it."""
import pytest

from tff_idp.config import from_mapping, validate
from tff_idp.engine.experiment import prepare
from tff_idp.engine.loop import run_method


def _summary(method, **keys):
    cfg = validate(from_mapping(dict(methods=[method], rounds=2, num_clients=60,
                                     expected_rate=0.2, local_steps=1, backend="fast",
                                     test_examples=100, **keys)))
    _, summary, ledger = run_method(prepare(cfg), method)
    return summary["privacy"], ledger


@pytest.mark.parametrize("noise_draw,trusted", [("client", False), ("group", True)])
def test_summary_records_who_draws_the_noise(noise_draw, trusted):
    privacy, _ = _summary("gdpfed", noise_draw=noise_draw)
    g = privacy["guarantee"]
    assert g["trusted_server"] is trusted and g["valid"] is True
    assert "add/remove" in g["neighbouring_relation"]


def test_pfa_as_in_the_paper_is_marked_not_covered():
    privacy, _ = _summary("pfa")
    assert privacy["guarantee"]["valid"] is False
    assert "one by one" in privacy["guarantee"]["why_not_valid"]


def test_pfa_per_row_accounts_its_public_rows():
    privacy, ledger = _summary("pfa", pfa_accounting="per-row")
    assert privacy["guarantee"]["valid"] is True and privacy["observed_groups"] == [2]
    assert privacy["within_budget"]
    assert ledger.observed_groups == (2,)
