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
    assert "can remove it" in g["protects_against"]


def test_an_accounting_gap_makes_the_guarantee_invalid():
    g = guarantee("poisson", "client", accounting_gap="rows seen one by one")
    assert g["valid"] is False and g["why_not_valid"] == "rows seen one by one"
    assert "observed_groups" in guarantee("poisson", "client", observed_groups=[2])


@pytest.mark.parametrize("args", [("nope", "client"), ("poisson", "nope")])
def test_unknown_modes_are_refused(args):
    with pytest.raises(ValueError):
        guarantee(*args)
