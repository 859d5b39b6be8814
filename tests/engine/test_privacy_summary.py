"""What a run reports about its guarantee: the summary's privacy block, as a user reads it."""
import numpy as np
import pytest

from tff_idp import experiment_config
from tff_idp.experiment_config import from_mapping, validate
from tff_idp.engine.experiment import prepare
from tff_idp.engine.loop import run_method


def _summary(method, **keys):
    cfg = validate(from_mapping(dict(methods=[method], rounds=2, num_clients=60,
                                     expected_rate=0.2, local_steps=1, backend="fast",
                                     test_examples=100, **keys)))
    _, summary, ledger = run_method(prepare(cfg), method)
    return summary.privacy, ledger


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


def test_server_epsilon_of_three_default_run_clients_matches_an_independent_accountant():
    """Issue 33 acceptance: the default run (digits, 500 clients, 40 rounds), its DP-FedAvg and
    GDPFed+: for the most-sampled client of each group, the composition of its participations'
    Gaussian releases (no amplification) by the independent closed form of
    ``tests/privacy/independent_rdp`` equals the ledger's, and the summary's group value is
    the largest of its clients'."""
    from tests.privacy import independent_rdp as ind
    cfg = experiment_config.load(None, ['methods=["dp_fedavg", "gdpfed_plus"]', 'backend="fast"'])
    exp = prepare(cfg)
    for method in cfg.methods:
        _, summary, ledger = run_method(exp, method, progress=False)
        server = ledger.server_epsilons()
        sigmas = exp.plans[method].noise_multipliers
        for g, row in summary.privacy["groups"].items():
            members = np.flatnonzero(ledger.groups == int(g))
            top = members[np.argmax(ledger.participation[members])]
            k = int(ledger.participation[top])
            assert k == row["participations_max"] and k > 0
            theirs = ind.epsilon(lambda a: k * ind.observed_gaussian_rdp(1.0, sigmas[int(g)], a),
                                 1, ledger.delta)
            # never looser than the independent value; the same orders and conversion can
            # tie it, and a tie differs by float rounding from one CPU's libm to another's
            assert server[top] == pytest.approx(theirs, rel=0.01)
            assert server[top] <= theirs * (1 + 1e-9)
            assert row["server_epsilon"] == pytest.approx(server[members].max())
            assert row["server_epsilon"] > row["realised_epsilon"]     # no amplification
        assert summary.privacy["within_budget"]
        assert summary.privacy["within_budget_server"] is False
        assert "exceeded" in summary.privacy["guarantee"]["budget_met_against"]


def test_server_drawn_noise_has_no_server_epsilon():
    privacy, _ = _summary("gdpfed", noise_draw="group")
    assert all("server_epsilon" not in g for g in privacy["groups"].values())
    assert privacy["guarantee"]["observers"]["server"]["epsilon"] is None


def test_tffs_adaptive_factory_is_reported_as_server_drawn():
    """Issue 33 item 2: TFF's DifferentiallyPrivateFactory noises the server-placed sum."""
    cfg = validate(from_mapping(dict(methods=["idp_fedavg"], rounds=2, num_clients=60,
                                     expected_rate=0.2, local_steps=1, backend="tff",
                                     adaptive_clipping="tff", test_examples=100)))
    assert cfg.noise_draw == "client"
    _, summary, _ = run_method(prepare(cfg), "idp_fedavg", progress=False)
    g = summary.privacy["guarantee"]
    assert g["trusted_server"] is True and g["noise_drawn_by"].startswith("the server")
    assert all("server_epsilon" not in row for row in summary.privacy["groups"].values())
    ours = _summary("idp_fedavg", adaptive_clipping="ours")[0]["guarantee"]
    assert ours["trusted_server"] is False


@pytest.mark.parametrize("method,covers", [("ms_pafl", False), ("ldp_fedavg", True)])
def test_ms_pafl_is_not_covered_by_the_papers_bounds_and_gets_the_one_that_holds(method,
                                                                                   covers):
    """Issue 33 item 4, issue 56 item 6: MS-PAFL's private half persists on the client, so
    the paper's amplified bounds (Theorem 4's table epsilon) do not cover it; the covering
    bound composes each client's uploads (z = sigma / 2C) over its participations without
    amplification and holds for both: the guarantee is valid, against both observers, and a
    separate field says what Theorem 4 does not cover."""
    from tff_idp.privacy.gaussian_releases import composed_gaussian_epsilon
    cfg = experiment_config.load(None, [
        f'methods=["{method}"]', 'dataset="synthetic:adult"', 'model="logistic_nobias"',
        "num_clients=40", "expected_rate=0.5", "rounds=3", "local_steps=5", "batch_size=5",
        "local_epsilon=1.0", "local_delta=1e-4", "delta=1e-4", "budgets=[1.0]",
        "group_ratios=[1.0]", 'partition="shards"', 'backend="fast"'])
    _, summary, ledger = run_method(prepare(cfg), method, progress=False)
    privacy = summary.privacy
    g = privacy["guarantee"]
    assert g["valid"] is True and "why_not_valid" not in g
    assert g["table_epsilon_covers"] is covers
    assert ("table_epsilon_gap" in g) is not covers
    if not covers:
        assert "local subsampling" in g["table_epsilon_gap"]
        assert "check-in amplification survives" in g["table_epsilon_gap"]
    # issue 75, item 4: a personalised model (private half included) is not private, and
    # the summary says so for that observer; without a private half there is none
    if covers:
        assert list(g["observers"]) == ["server_and_model_viewers"]
        assert "no personalised model" in g["protects_against"]
    else:
        assert list(g["observers"]) == ["server_and_model_viewers",
                                        "personalised_model_viewers"]
        assert g["observers"]["personalised_model_viewers"]["epsilon"] == "not private"
        assert "not whoever sees a client's personalised model" in g["protects_against"]
    # the run table shows the bound that holds in both columns, the accountant named
    from tff_idp.run import EPS_SERVER, EPS_VIEWERS, summary_rows
    row = summary_rows([summary])[0]
    cover = f"{privacy['covering_epsilon_max']:.3g} covering (rdp"
    assert row[EPS_VIEWERS].startswith(cover) and row[EPS_SERVER].startswith(cover)
    assert row[EPS_VIEWERS].endswith("personalised models: not private") is not covers
    z = privacy["local_noise_std"] / (2 * cfg.clip)
    k = int(ledger.participation.max())
    assert privacy["covering_epsilon_max"] == pytest.approx(
        composed_gaussian_epsilon(k / z ** 2, cfg.local_delta))
    # no amplification: never below the per-client RDP value that assumes it (WOR)
    assert privacy["covering_epsilon_max"] >= privacy["client_epsilon_rdp_max"]
