"""The guarantee block of a run summary: relation, who draws the noise, whom it protects."""
import pytest

from tff_idp.privacy.threat_model import guarantee


def test_client_drawn_noise_protects_against_the_server():
    g = guarantee("poisson", "client")
    assert g["trusted_server"] is False and g["valid"] is True
    assert "add/remove" in g["neighbouring_relation"]
    assert "server" in g["protects_against"] and "why_not_valid" not in g


def test_server_drawn_noise_needs_a_trusted_server():
    """Audit item 2: a server that draws the noise can subtract it."""
    g = guarantee("fixed", "group")
    assert g["trusted_server"] is True
    assert "replace one" in g["neighbouring_relation"] and "2C" in g["neighbouring_relation"]
    assert "released models only" in g["protects_against"]
    server = g["observers"]["server"]
    assert server["epsilon"] is None and "can remove it" in server["why"]


def test_each_observer_has_its_relation_and_its_epsilon():
    """Issue 33 item 1: the model viewers' epsilon is amplified, the server's is not."""
    g = guarantee("poisson", "client", within_budget=True, within_budget_server=False)
    viewers, server = g["observers"]["model_viewers"], g["observers"]["server"]
    assert viewers["epsilon"].startswith("groups.<g>.realised_epsilon")
    assert "amplified" in viewers["accounting"] and "add/remove" in viewers["neighbouring_relation"]
    assert server["epsilon"].startswith("groups.<g>.server_epsilon")
    assert "no amplification" in server["neighbouring_relation"]
    assert g["budget_met_against"].startswith("those who see the released models only")
    assert "exceeded" in g["budget_met_against"]
    both = guarantee("poisson", "client", within_budget=True, within_budget_server=True)
    assert both["budget_met_against"].startswith("both")
    # server-drawn noise: no server-side number, so nothing is said to be exceeded there
    assert guarantee("poisson", "group", within_budget=True, within_budget_server=False)[
        "budget_met_against"] == "those who see the released models only"


def test_an_accounting_gap_makes_the_guarantee_invalid():
    g = guarantee("poisson", "client", accounting_gap="rows seen one by one")
    assert g["valid"] is False and g["why_not_valid"] == "rows seen one by one"
    assert "observed_groups" in guarantee("poisson", "client", observed_groups=[2])


@pytest.mark.parametrize("args", [("nope", "client"), ("poisson", "nope")])
def test_unknown_modes_are_refused(args):
    with pytest.raises(ValueError):
        guarantee(*args)
