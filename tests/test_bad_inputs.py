"""Malformed configs and overrides, each refused the way a user needs: exit status 2, one line
on stderr that names the key and the value, no traceback, and nothing new under the output
folder or the data folder (issue 16). Run in-process through ``tff_idp.run.main`` (the real
CLI process is exercised by a few of them in tests/test_run_cli.py)."""
import os

import pytest

from tff_idp import run, runtime

runtime.quiet_tf_logs()        # as the CLI does, before TensorFlow is first imported
import tensorflow  # noqa: E402,F401  (its import-time log lines fall outside the tests)

BAD = [
    (["--set", "methods=[\"fedprox\"]"], "methods='fedprox'"),
    (["--set", "dataset=imagenet"], "dataset='imagenet'"),
    (["--set", "budgets=[0.0, 1.5, 3.0]"], "budgets="),
    (["--set", "budgets=[-1.0, 1.5, 3.0]"], "budgets="),
    (["--set", "group_ratios=[0.5, 0.3, 0.3]"], "group_ratios="),
    (["--set", "group_ratios=[0.5, 0.5]"], "needs 3 entries, one per budget"),
    (["--set", "backend=\"gpu\""], "backend='gpu'"),
    (["--set", "methods=[\"idp_sample\"]", "--set", "noise_multipliers=[3.0, 2.0, 1.0]"],
     "not used by method 'idp_sample'"),
    (["--set", "learning_rate=0.1"], "learning_rate=0.1: unknown key"),
    # issue 34: the nearest key or method, and how to quote a list the shell unquoted
    (["--set", "roudns=3"], "roudns=3: unknown key; did you mean 'rounds'?"),
    (["--set", "methods=[\"gdpfed_pls\"]"], "unknown method; did you mean 'gdpfed_plus'"),
    (["--set", "methods=[gdpfed_plus]"],
     "not a TOML value; quote the strings inside it and the whole argument for the shell, "
     "e.g. --set 'methods=[\"gdpfed_plus\"]'"),
    (["--set", "rounds"], "--set='rounds'"),
    (["missing.toml"], "config='missing.toml': no such file"),
    (["bad.toml"], "config='bad.toml': malformed TOML"),
    (["--set", "noise_multipliers=[0.3, 0.3, 0.3]"], "exceeds its budget"),
    (["--set", "dataset=\"cifar10\"", "--set", "data_dir=\"empty\""],
     "dataset='cifar10': not prepared in empty"),
    (["--set", "methods=[\"idp_sample\"]", "--set", "sampling=\"fixed\""],
     "sampling='fixed': idp_sample calibrates for Poisson sampling"),
    (["--set", "pfa_accounting=\"exact\""], "pfa_accounting='exact'"),
    (["--set", "pfa_projection=\"rows\""], "pfa_projection='rows': must be 'per-layer' or 'global'"),
    # a NaN noise multiplier used to hang the budget check inside the RDP accountant
    (["--set", "noise_multipliers=[nan, 2.0, 2.0]"], "noise_multipliers=[nan, 2.0, 2.0]: must be finite"),
    (["--set", "group_ratios=[nan, 0.5, 0.5]"], "group_ratios=[nan, 0.5, 0.5]: must be finite"),
    (["--set", "clip=inf"], "clip=inf: must be finite"),
    (["--set", "seed=-1"], "seed=-1: must be >= 0"),
    # the personal part of a model (methods with client state)
    (["--set", "personal=\"tail\""], "personal='tail': must be 'none', 'head'"),
    (["--set", "methods=[\"fedrep\"]", "--set", "personal=\"none\""],
     "personal='none': fedrep keeps a personal part"),
    (["--set", "methods=[\"fedrep\"]"], "personal='head': leaves nothing shared"),
    (["--set", "methods=[\"dp_fedrep\"]", "--set", "model=\"digits_mlp\"", "--set",
      "personal=\"layers:dense_9\""], "personal='layers:dense_9': the model has no layer"),
    (["--set", "personal_steps=0"], "personal_steps=0: must be >= 1"),
    # refused after the data loads, but before a partition is cached
    (["--set", "num_clients=1"], "a group has no client among num_clients=1"),
    # bad paths: refused before TensorFlow is imported (a FIFO used to block the command)
    (["fifo"], "config='fifo': is not a regular file"),
    (["adir"], "config='adir': is a directory"),
    (["--set", "output_dir=\"afile/results\""], "output_dir='afile/results':"),
    (["--set", "data_root=\"afile/data\""], "data_root='afile/data':"),
    # rates only mean something to the methods that take them
    (["--set", "methods=[\"gdpfed\"]", "--set", "rates=[0.1, 0.1, 0.1]"],
     "rates=[0.1, 0.1, 0.1]: method 'gdpfed' does not take per-group rates"),
    # issue 32: per-group rates of the wrong length, out of range, or overspending a budget
    (["--set", "methods=[\"gdpfed_plus\"]", "--set", "rates=[0.1, 0.1]"],
     "rates=[0.1, 0.1]: needs 3 entries, one per group"),
    (["--set", "methods=[\"gdpfed_plus\"]", "--set", "rates=[0.0, 0.1, 0.1]"],
     "rates=[0.0, 0.1, 0.1]: every element must be in (0, 1]"),
    (["--set", "methods=[\"gdpfed_plus\"]", "--set", "rates=[1.5, 0.1, 0.1]"],
     "rates=[1.5, 0.1, 0.1]: every element must be in (0, 1]"),
    (["--set", "methods=[\"gdpfed_plus\"]", "--set", "rates=[0.5, 0.5, 0.5]", "--set",
      "noise_multipliers=[1.0, 1.0, 1.0]"],
     "methods='gdpfed_plus': planned epsilon 19.2 for group 0 exceeds its budget 0.5"),
    # issue 38: the canary audit
    (["--set", "audit_canaries=10"], "audit_canaries=10: the canary audit runs on backend='fast'"),
    (["--set", "backend=\"fast\"", "--set", "audit_canaries=1"],
     "audit_canaries=1: must be 0 (no audit) or 2 to 100,000"),
    (["--set", "backend=\"fast\"", "--set", "audit_canaries=1000000"],
     "audit_canaries=1000000: must be 0 (no audit) or 2 to 100,000"),
    (["--set", "backend=\"fast\"", "--set", "audit_canaries=10", "--set", "audit_group=3"],
     "audit_group=3: there are 3 privacy groups (0 to 2)"),
    (["--set", "backend=\"fast\"", "--set", "audit_canaries=10", "--set",
      "methods=[\"fedrep\"]", "--set", "model=\"digits_mlp\""],
     "audit_canaries=10: method 'fedrep' keeps a personal part"),
    # MS-PAFL (paper 002)
    (["--set", "methods=[\"ms_pafl\"]"], "local_epsilon=None: ms_pafl needs eps_l"),
    (["--set", "local_epsilon=0.0"], "local_epsilon=0.0: must be in (0, 700]"),
    (["--set", "local_delta=1.5"], "local_delta=1.5: must be in (0, 1)"),
    (["--set", "methods=[\"ms_pafl\"]", "--set", "local_epsilon=1.0", "--set",
      "expected_rate=1.5"], "expected_rate=1.5: must be in (0, 1]"),
    (["--set", "data_sampling=\"bootstrap\""], "data_sampling='bootstrap': must be 'wor'"),
    (["--set", "methods=[\"ms_pafl\"]", "--set", "local_epsilon=1.0", "--set",
      "model=\"logistic_nobias\"", "--set", "personal=\"rows:0-63\""],
     "personal='rows:0-63': leaves nothing shared"),
    (["--set", "methods=[\"ms_pafl\"]", "--set", "local_epsilon=1.0", "--set",
      "model=\"logistic_nobias\""], "data_sampling='wor': local_steps x batch_size = 50"),
    (["--set", "methods=[\"ms_pafl\"]", "--set", "local_epsilon=1.0", "--set",
      "noise_draw=\"group\""], "noise_draw='group': ms_pafl is local DP"),
    # every float key: nan / inf / zero / negative; integers, types, lengths and names
    (["--set", "clip=0.0"], "clip=0.0: must be positive"),
    (["--set", "clip=-1.0"], "clip=-1.0"),
    (["--set", "local_lr=0.0"], "local_lr=0.0"),
    (["--set", "local_lr=nan"], "local_lr=nan: must be finite"),
    (["--set", "server_lr=0.0"], "server_lr=0.0"),
    (["--set", "server_lr=inf"], "server_lr=inf: must be finite"),
    (["--set", "lr_decay=0.0"], "lr_decay=0.0"),
    (["--set", "lr_decay=1.5"], "lr_decay=1.5"),
    (["--set", "momentum=1.0"], "momentum=1.0"),
    (["--set", "momentum=-0.1"], "momentum=-0.1"),
    (["--set", "expected_rate=0.0"], "expected_rate=0.0"),
    (["--set", "expected_rate=nan"], "expected_rate=nan: must be finite"),
    (["--set", "delta=0.0"], "delta=0.0"),
    (["--set", "delta=1.0"], "delta=1.0"),
    (["--set", "delta=inf"], "delta=inf: must be finite"),
    # issue 33 item 5: delta >= 1/n lets a mechanism publish one client outright
    (["--set", "delta=0.5"], "delta=0.5: must be below 1/num_clients = 0.002 (num_clients=500)"),
    (["--set", "delta=0.002"], "delta=0.002: must be below 1/num_clients"),
    # issue 33 item 4: Lemma 1's sigma is not (eps_l, delta_l)-DP above eps_l = 7.99
    (["--set", "methods=[\"ms_pafl\"]", "--set", "local_epsilon=10.0"],
     "local_epsilon=10.0: Lemma 1's sigma is (eps_l, delta_l)-DP only up to eps_l = 7.99"),
    (["--set", "calibration_tolerance=0.0"], "calibration_tolerance=0.0"),
    (["--set", "batch_size=0"], "batch_size=0"),
    (["--set", "local_steps=0"], "local_steps=0"),
    (["--set", "rounds=0"], "rounds=0"),
    (["--set", "num_clients=0"], "num_clients=0"),
    (["--set", "local_epochs=0"], "local_epochs=0"),
    (["--set", "eval_every=0"], "eval_every=0"),
    (["--set", "checkpoint_every=-1"], "checkpoint_every=-1"),
    (["--set", "test_examples=0"], "test_examples=0"),
    (["--set", "test_examples=-5"], "test_examples=-5"),
    (["--set", "curve_test_examples=0"], "curve_test_examples=0"),
    (["--set", "fast_chunk_size=0"], "fast_chunk_size=0"),
    (["--set", "fast_chunk_size=1.5"], "fast_chunk_size=1.5: must be an integer"),
    (["--set", "seed=1.5"], "seed=1.5: must be an integer"),
    (["--set", "keep_fractions=[0.5]"], "keep_fractions=[0.5]"),
    (["--set", "keep_fractions=[0.0, 0.5, 0.5]"], "keep_fractions=[0.0, 0.5, 0.5]"),
    (["--set", "noise_multipliers=[-1.0, 1.0, 1.0]"], "noise_multipliers=[-1.0, 1.0, 1.0]: every element must be in [1e-06, 1e+06]"),
    # issue 61: a square that rounds to zero ran to 24 GB; 1e300 was an OverflowError
    (["--set", "noise_multipliers=[1e-300, 1.0, 1.0]"], "noise_multipliers=[1e-300, 1.0, 1.0]: every element must be in"),
    (["--set", "noise_multipliers=[1e300, 1.0, 1.0]"], "noise_multipliers=[1e+300, 1.0, 1.0]: every element must be in"),
    (["--set", "partition=\"random\""], "partition='random'"),
    (["--set", "partition=\"dirichlet\""], "partition_param=None: partition='dirichlet'"),
    (["--set", "sampling=\"uniform\""], "sampling='uniform'"),
    (["--set", "accountant=\"moments\""], "accountant='moments'"),
    (["--set", "server_accountant=\"prv\""], "server_accountant='prv': must be"),
    (["--set", "simulation_diagnostics=1"], "simulation_diagnostics=1"),
    (["--set", "sampling=\"fixed\"", "--set", "accountant=\"pld\""],
     "accountant='pld': sampling='fixed' needs accountant='rdp' or 'rdp_basic'"),
    (["--set", "methods=[\"pfa\"]", "--set", "pfa_accounting=\"per-row\"", "--set",
      "accountant=\"rdp_basic\""],
     "accountant='rdp_basic': pfa_accounting='per-row' needs accountant='rdp'"),
    (["--set", "group_weighting=\"x\""], "group_weighting='x'"),
    (["--set", "adaptive_clipping=\"x\""], "adaptive_clipping='x'"),
    (["--set", "noise_draw=\"x\""], "noise_draw='x'"),
    (["--set", "device=\"tpu\""], "device='tpu'"),
    (["--set", "model=\"vgg\""], "model='vgg'"),
    (["--set", "client_optimizer=\"rmsprop\""], "client_optimizer='rmsprop'"),
    (["--set", "name=\"a/b\""], "name='a/b'"),
    (["--set", "rounds=\"ten\""], "rounds='ten': must be an integer"),
    (["--set", "budgets=\"1.0\""], "budgets='1.0': must be a list"),
    # issue 62 item 5: the messages a new user met
    (["--set", "budgets=\"1,2,4\""], "budgets='1,2,4': must be a list; in TOML, e.g. --set "
                                      "'budgets=[1.0, 2.0, 4.0]'"),
    (["--set", "methods=\"gdpfed_plus\""], "methods='gdpfed_plus': must be a list; in TOML, "
                                           "e.g. --set 'methods=[\"gdpfed_plus\""),
    (["--set", "methods=[\"gdpfed+\"]"], "did you mean 'gdpfed_plus'?"),
    (["--set", "dataset=\"fmnist\""], "dataset='fmnist': unknown data set; did you mean "
                                      "'fashion_mnist'"),
    (["--set", "methods=[]"], "methods=[]: needs at least one method"),
    (["--set", "reference={fedavg=1.0}"], "reference='fedavg'"),
    (["--set", "local_epsilon=nan"], "local_epsilon=nan: must be finite"),
    (["--set", "checkin_beta=0.0"], "checkin_beta=0.0"),
    (["--set", "composition_delta=2.0"], "composition_delta=2.0"),
    (["--set", "personal_epochs=0"], "personal_epochs=0"),
    (["--set", "budgets=[3.0, 1.5, 0.5]"], "budgets=[3.0, 1.5, 0.5]: list groups from the strictest"),
    (["--set", "budgets=[1.0, inf, 3.0]"], "budgets=[1.0, inf, 3.0]: must be finite"),
    (["--set", "group_ratios=[]"], "group_ratios=[]: needs 3 entries"),
    # paper 001 (DP-pFedDSU and its baselines)
    (["--set", "dsu_mask=\"random\""], "dsu_mask='random': must be 'local'"),
    (["--set", "dsu_sparsity=0.0"], "dsu_sparsity=0.0: must be in (0, 1]"),
    (["--set", "dsu_sparsity=1.5"], "dsu_sparsity=1.5: must be in (0, 1]"),
    (["--set", "dsu_layers=0"], "dsu_layers=0: must be >= 1"),
    (["--set", "methods=[\"dp_pfeddsu\"]", "--set", "model=\"digits_mlp\"", "--set",
      "dsu_layers=2"], "dsu_layers=2: the extractor of model"),
    (["--set", "methods=[\"dp_pfeddsu\"]", "--set", "model=\"digits_mlp\"", "--set",
      "noise_draw=\"group\""], "noise_draw='group': dp_pfeddsu masks each client's noise"),
    (["--set", "partition=\"dealt_classes\"", "--set", "partition_param=11"],
     "partition_param=11.0: more classes per client than the 10 classes of digits"),
    (["--set", "partition=\"dealt_classes\"", "--set", "partition_param=2.5"],
     "partition_param=2.5: classes per client must be an integer"),
    (["--set", "pmtl_mode=\"grad\""], "pmtl_mode='grad': must be 'intended'"),
    (["--set", "head_epochs=0"], "head_epochs=0: must be >= 1"),
    (["--set", "head_lr=0.0"], "head_lr=0.0: must be in (0, 1000]"),
    (["--set", "weight_decay=-1.0"], "weight_decay=-1.0: must be in [0, 1000]"),
    (["--set", "validation_fraction=1.0"], "validation_fraction=1.0: must be in [0, 1)"),
    # the flags of table configs, given with an experiment config (they used to be ignored)
    (["--only", "FMNIST"], "--only='FMNIST': a flag of table configs"),
    (["--methods", "dp_fedavg"], "--methods='dp_fedavg': a flag of table configs"),
    (["--axis", "1x"], "--axis='1x': a flag of table configs"),
    # an experiment config runs at each of --seeds (issue 62); a bad list is one line
    (["--seeds", "0,x"], "--seeds='0,x': comma-separated seeds, e.g. 0,1,2"),
    (["--seeds", "0,3000000000"], "--seeds='0,3000000000': each below 2^31"),
    (["--scale", "smoke"], "--scale='smoke': a flag of table configs"),
    (["--report-dir", "r"], "--report-dir='r': a flag of table configs"),
    # issue 35, class 3: values beyond what the code can represent or the machine can hold
    (["--set", "local_steps=1000000000"], "local_steps=1000000000: must be at most 1,000,000"),
    (["--set", "batch_size=1000000000"], "batch_size=1000000000: must be at most 1,000,000"),
    (["--set", "local_steps=100000", "--set", "batch_size=10000"],
     "local_steps=100000, batch_size=10000: a round needs at least"),
    (["--set", "rounds=1000000000000"], "rounds=1000000000000: must be at most 1,000,000"),
    (["--set", "clip=1e300"], "clip=1e+300: must be in [1e-08, 1e+08]"),
    (["--set", "clip=1e-300"], "clip=1e-300: must be in [1e-08, 1e+08]"),
    (["--set", "seed=1180591620717411303424"],
     "seed=1180591620717411303424: must be at most 4,294,967,295"),
    # issue 35, class 4: odd paths refused before training (they used to fail at the rename)
    (["--output-dir", "loop"], "output_dir='loop':"),
    (["--output-dir", "dangling"], "is a symbolic link that leads nowhere"),
    (["--output-dir", "filed"], "filed/digits-default/p_fedavg-seed0 is a file, not a folder"),
]
if not tensorflow.config.list_physical_devices("GPU"):     # this machine: no GPU
    BAD.append((["--set", "device=\"gpu\""], "device='gpu': TensorFlow sees no GPU"))


@pytest.mark.parametrize("args,needle", BAD)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, monkeypatch, capfd, args,
                                                         needle):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.toml").write_text("rounds = = 3\n")
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    os.symlink(tmp_path / "nowhere" / "x", tmp_path / "dangling")
    (tmp_path / "filed" / "digits-default").mkdir(parents=True)
    (tmp_path / "filed" / "digits-default" / "p_fedavg-seed0").write_text("")
    extra = [] if any("output_dir" in a or a == "--output-dir" for a in args) else \
        ["--set", "output_dir=\"out\""]
    status = run.main(args + extra + ["--quiet"])
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], lines
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "results").exists()
    assert not (tmp_path / "datasets").exists()


def test_there_are_at_least_sixty_cases():
    assert len(BAD) >= 60


def test_duplicate_seeds_and_methods_are_refused_in_one_line(tmp_path, capfd):
    """Issue 76: ``--seeds 0,0`` and a method named twice trained the same run twice."""
    from tff_idp.config import ConfigError
    from tff_idp.experiment_config import from_mapping, validate
    from tests.harness.conftest import tiny_table
    status = run.main(["--seeds", "0,0", "--set", "rounds=1"])
    err = [l for l in capfd.readouterr().err.splitlines() if l.strip()]
    assert status == 2 and len(err) == 1 and "--seeds='0,0': a seed given twice" in err[0]
    with pytest.raises(ConfigError, match="names 'gdpfed' twice"):
        validate(from_mapping({"methods": ["gdpfed", "gdpfed"]}))
    path = tiny_table(tmp_path)
    status = run.main([str(path), "--scale", "smoke", "--seeds", "0,0"])
    err = [l for l in capfd.readouterr().err.splitlines() if l.strip()]
    assert status == 2 and len(err) == 1 and "seed 0 given twice" in err[0], err
    (tmp_path / "dup").mkdir()
    path = tiny_table(tmp_path / "dup", methods='["p_fedavg", "dp_fedavg", "p_fedavg"]')
    status = run.main([str(path), "--scale", "smoke"])
    err = [l for l in capfd.readouterr().err.splitlines() if l.strip()]
    assert status == 2 and len(err) == 1 and "twice" in err[0], err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("edit,needle", [
    (lambda t: t + '\n[reference.digits]\ngdpfed = 70.0\n',
     "reference.digits.gdpfed=70.0: names a method the table does not run"),
    (lambda t: t.replace("[base]\n", "[base]\nseed = 3\n"), "base.seed=3: is set by the harness"),
    (lambda t: t.replace("[base]\n", '[base]\nname = "x"\n'), "base.name='x': is set by the"),
    (lambda t: t.replace("[base]\n", '[base]\nmethods = ["gdpfed"]\n'), "base.methods="),
])
def test_table_keys_that_would_be_ignored_are_refused(tmp_path, capfd, edit, needle):
    """Issue 76: a [reference] row for a method the table never runs, and [base] keys the
    harness sets for every unit, were accepted without a word."""
    from tests.harness.conftest import tiny_table
    path = tiny_table(tmp_path)
    path.write_text(edit(path.read_text()))
    status = run.main([str(path), "--scale", "smoke"])
    err = [l for l in capfd.readouterr().err.splitlines() if l.strip()]
    assert status == 2 and len(err) == 1 and needle in err[0], err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("kind", ["file", "dangling link"])
def test_a_report_dir_that_cannot_be_a_folder_is_one_line(tmp_path, capfd, kind):
    """Issue 76: --report-dir naming a file or a dangling link was a FileExistsError
    traceback."""
    from tff_idp import report
    from tests.harness.conftest import tiny_table
    path = tiny_table(tmp_path)
    target = tmp_path / "out"
    if kind == "file":
        target.write_text("x")
    else:
        target.symlink_to(tmp_path / "nowhere" / "x")
    status = report.main([str(path), "--scale", "smoke", "--report-dir", str(target)])
    err = [l for l in capfd.readouterr().err.splitlines() if l.strip()]
    assert status == 2 and len(err) == 1 and err[0].startswith("error: --report-dir="), err
