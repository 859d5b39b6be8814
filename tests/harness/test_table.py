"""Table configs: every GDPFed table expands at every scale; bad tables are one-line errors
with exit status 2; scales shrink consistently."""
import subprocess
import sys
from pathlib import Path

import pytest

from tff_idp.config import ConfigError
from tff_idp.data import fashion_mnist
from tff_idp.harness.table import SCALES, expand, load_table, scale_values

from .conftest import tiny_table

ROOT = Path(__file__).resolve().parents[2]
TABLES = sorted((ROOT / "runs" / "gdpfed").rglob("*.toml")) + [
    ROOT / "runs" / "idp_fedavg" / "table1.toml"] + sorted(
    (ROOT / "runs" / "dp_pfeddsu").glob("table*.toml"))


@pytest.mark.parametrize("path", TABLES, ids=[f"{p.parent.name}/{p.stem}" for p in TABLES])
def test_gdpfed_tables_expand_at_every_scale(path):
    spec = load_table(str(path))
    # the papers' three seeds (issue 32's seeds 3-5: three more; the canary audit and the
    # Shakespeare column's first pass: one)
    one_seed = path.stem.endswith("canaries") or path.stem.endswith("seed0")
    assert spec.seeds == (1 if one_seed else 3) or spec.kind != "train"
    assert spec.first_seed == (3 if path.stem.endswith("seeds-3-5") else 0)
    counts = {}
    for scale in SCALES:
        units = expand(spec, scale)
        counts[scale] = len(units)
        assert len({u.folder for u in units}) == len(units)          # one folder per unit
        if scale == "smoke":
            for u in units:
                assert u.cfg.rounds <= 2 and u.cfg.num_clients <= 60
                # Fashion-MNIST is real at smoke scale when its files are staged
                assert u.cfg.dataset.startswith("synthetic:") or u.cfg.dataset in (
                    "digits", "fashion_mnist")
                if u.cfg.dataset == "fashion_mnist":
                    assert fashion_mnist.present(u.cfg.data_root)
    assert counts["paper"] == counts["laptop"] == counts["smoke"] * spec.seeds or \
        spec.kind != "train"
    # every reference names a real cell
    for ds, methods in spec.reference.items():
        for m, v in methods.items():
            assert m in spec.methods or any(
                m in spec.methods_of(ds, lab) for lab in (spec.axis.labels if spec.axis else []))
            if isinstance(v, dict) and spec.axis is not None and spec.kind == "train":
                assert set(v) <= set(spec.axis.labels)


def test_table2_paper_scale_keeps_the_papers_settings():
    spec = load_table(str(ROOT / "runs" / "gdpfed" / "table2.toml"))
    cifar = [u for u in expand(spec, "paper") if u.dataset == "CIFAR-10"][0].cfg
    assert (cifar.num_clients, cifar.rounds, cifar.clip, cifar.budgets, cifar.expected_rate,
            cifar.momentum, cifar.local_steps, cifar.batch_size, cifar.model) == (
        600, 100, 1.5, [2.0, 6.0, 12.0], 0.1, 0.5, 5, 50, "resnet18")
    assert spec.reference_value("Shakespeare", "gdpfed_plus", None) == 42.00


def test_paper001_tables_keep_the_papers_settings_and_cap_head_epochs_at_smoke():
    spec = load_table(str(ROOT / "runs" / "dp_pfeddsu" / "table2.toml"))
    units = expand(spec, "paper")
    assert len(units) == 8 * 5 * 3
    emnist = [u for u in units if u.dataset == "EMNIST s=10" and u.method == "dp_pfeddsu"][0]
    c = emnist.cfg
    assert (c.dataset, c.num_clients, c.rounds, c.partition, c.partition_param, c.budgets,
            c.delta, c.expected_rate, c.clip, c.local_lr, c.head_lr, c.local_epochs,
            c.head_epochs, c.dsu_sparsity, c.dsu_layers, c.dsu_lambda, c.dsu_mask,
            c.validation_fraction, c.model) == (
        "emnist_digits", 20, 50, "dealt_classes", 10.0, [1.0], 1e-5, 1.0, 0.01, 0.01, 0.01,
        5, 15, 0.05, 4, 0.2, "local", 0.1, "resnet20")
    assert spec.reference_value("CIFAR-100 s=3", "ppsgd", None) == 62.63
    smoke = [u for u in expand(spec, "smoke") if u.method == "centaur"][0].cfg
    assert smoke.head_epochs == 1 and smoke.local_epochs == 1 and smoke.rounds <= 2
    t4 = load_table(str(ROOT / "runs" / "dp_pfeddsu" / "table4.toml"))
    rt = [u for u in expand(t4, "paper") if u.column == "RT"][0].cfg
    assert rt.methods == ["dp_pfeddsu"] and rt.dsu_lambda == 0.0
    assert t4.reference_value("EMNIST s=10", "dp_pfeddsu", "RT + DAN") == 71.87


def test_scale_axis_multiplies_the_cells_value():
    spec = load_table(str(ROOT / "runs" / "gdpfed" / "table7.toml"))
    units = [u for u in expand(spec, "paper") if u.dataset == "FMNIST" and u.column == "0.5x"]
    assert units[0].cfg.budgets == [0.25, 0.75, 1.5]


def test_smoke_scale_values():
    v = scale_values({"dataset": "femnist", "partition": "natural", "num_clients": 3383,
                      "expected_rate": 0.0089, "rounds": 420, "local_epochs": 15}, "smoke")
    assert v["dataset"] == "synthetic:femnist" and v["partition"] == "iid"
    assert v["num_clients"] == 60 and v["rounds"] == 2 and v["local_epochs"] == 1
    assert v["expected_rate"] * v["num_clients"] >= 6
    assert scale_values({"dataset": "digits", "rounds": 40}, "paper") == {"dataset": "digits",
                                                                          "rounds": 40}


def test_smoke_caps_a_personal_phase_only_where_a_method_has_one():
    """FedRep's head phase is capped like the local work; other methods' values keep no
    personal key (it would change their run fingerprints)."""
    rep = scale_values({"methods": ["fedrep"], "personal_epochs": 15, "local_epochs": 5},
                       "smoke")
    assert rep["personal_steps"] == 1 and rep["personal_epochs"] == 1
    assert "personal_steps" not in scale_values({"methods": ["gdpfed"]}, "smoke")


@pytest.mark.parametrize("edit,needle", [
    (("seeds = 2", "seeds = 0"), "table.seeds=0"),
    (('methods = ["p_fedavg", "dp_fedavg"]', "methods = []"), "table.methods=[]"),
    (("[datasets.digits]", "[unused]"), "unused"),
    (('kind = "train"', 'kind = "plot"'), "table.kind='plot'"),
    (('title = "Tiny table"', 'title = "Tiny table"\ncolour = "red"'), "table.colour"),
    (('labels = ["1x", "2x"]', 'labels = ["1x"]'), "axis.labels"),
    (("rounds = 3", "rounds = -3"), "rounds=-3"),
    (('values = [1.0, 2.0]', 'values = [1.0, 2.0]\npanels = { a = ["1x", "3x"] }'),
     "axis.panels.a='3x': is not one of the axis labels"),
    (('values = [1.0, 2.0]', 'values = [1.0, 2.0]\npanels = ["1x"]'), "axis.panels"),
])
def test_bad_tables_are_one_line_errors(tmp_path, edit, needle):
    path = tiny_table(tmp_path)
    path.write_text(path.read_text().replace(*edit))
    with pytest.raises(ConfigError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        expand(load_table(str(path)), "smoke")


def test_empty_dataset_grid_and_unknown_scale(tmp_path):
    path = tiny_table(tmp_path)
    text = path.read_text()
    no_data = text.split("[datasets.digits]")[0] + text.split('dataset = "digits"')[1]
    no_data = no_data.replace('[reference.digits.p_fedavg]\n"1x" = 80.0\n"2x" = 81.5', "")
    path.write_text(no_data)
    with pytest.raises(ConfigError, match="the grid is empty"):
        load_table(str(path))
    with pytest.raises(ConfigError, match="--scale='huge'"):
        expand(load_table(str(tiny_table(tmp_path))), "huge")


def test_cli_refuses_a_bad_table_before_any_work(tmp_path):
    path = tiny_table(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "tff_idp.run", str(path), "--scale", "huge"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "--scale='huge'" in lines[0]
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("module,args", [("tff_idp.run", []), ("tff_idp.slurm", ["submit"])])
def test_a_table_run_without_scale_is_refused_naming_the_three(tmp_path, module, args, capfd):
    """No default scale: a table at paper scale by accident costs hours (issue 34)."""
    import importlib
    path = tiny_table(tmp_path)
    main = importlib.import_module(module).main
    table_args = [str(path), "--dry-run"] if module == "tff_idp.slurm" else [str(path)]
    assert main(args + table_args) == 2
    lines = [l for l in capfd.readouterr().err.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: --scale: required for a table")
    assert all(s in lines[0] for s in ("smoke (", "laptop (", "paper ("))
    assert not (tmp_path / "results").exists() and not Path("results/tiny").exists()


def test_paper004_table1_cells_set_budgets_per_data_set():
    spec = load_table(str(ROOT / "runs" / "idp_fedavg" / "table1.toml"))
    units = {(u.dataset, u.column, u.method): u.cfg for u in expand(spec, "paper")
             if u.seed == 0}
    assert len(units) == 25
    assert units[("SVHN-IID", "100-0-0", "idp_fedavg")].budgets == [10.0]
    assert units[("FEMNIST", "54-37-9", "idp_fedavg")].group_ratios == [0.54, 0.37, 0.09]
    assert units[("FEMNIST", "0-0-0", "p_fedavg")].partition == "natural"
    assert spec.reference_value("CIFAR-10-Pachinko", "idp_fedavg", "100-0-0") == 16.8


def test_a_table_whose_data_is_absent_stops_before_any_work(tmp_path):
    path = ROOT / "runs" / "gdpfed" / "table2.toml"
    proc = subprocess.run([sys.executable, "-m", "tff_idp.run", str(path), "--scale", "laptop"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    lines = [l for l in proc.stderr.splitlines() if l.strip() and "tensorflow" not in l
             and not l.startswith("20")]
    assert proc.returncode == 2 and "dataset='fashion_mnist': neither TFDS's copy" in lines[-1]
    assert "python -m tff_idp.data fetch fashion_mnist" in lines[-1] and len(lines) == 1
    assert not (tmp_path / "results").exists()


def test_only_restricts_a_table_to_some_data_sets():
    from tff_idp.config import ConfigError
    from tff_idp.harness.table import only_datasets
    spec = load_table(str(ROOT / "runs" / "gdpfed" / "table2.toml"))
    fmnist = only_datasets(spec, "FMNIST")
    assert list(fmnist.datasets) == ["FMNIST"]
    assert len(expand(fmnist, "paper")) == 6 * 3
    assert {u.dataset for u in expand(only_datasets(spec, "FMNIST,SVHN"), "smoke")} == {
        "FMNIST", "SVHN"}
    assert only_datasets(spec, None) is spec
    with pytest.raises(ConfigError, match="--only='MNIST'"):
        only_datasets(spec, "MNIST")


def test_methods_restricts_a_table_to_some_methods_in_the_order_given():
    from tff_idp.config import ConfigError
    from tff_idp.harness.table import only_datasets, only_methods
    spec = only_datasets(load_table(str(ROOT / "runs" / "gdpfed" / "table2.toml")), "FMNIST")
    two = only_methods(spec, "gdpfed_plus, dp_fedavg")
    assert two.methods == ["gdpfed_plus", "dp_fedavg"]
    units = expand(two, "paper")
    assert len(units) == 2 * 3 and {u.method for u in units} == {"gdpfed_plus", "dp_fedavg"}
    # the same folders as the whole table's: a restricted run is resumed by the whole one
    whole = {u.label: u.folder for u in expand(spec, "paper")}
    assert all(whole[u.label] == u.folder for u in units)
    assert only_methods(spec, None) is spec
    with pytest.raises(ConfigError, match="--methods='fedprox': not a method of gdpfed-table2"):
        only_methods(spec, "dp_fedavg,fedprox")


def test_methods_reaches_the_methods_a_column_names_of_its_own():
    """Paper 002's FMNIST table: each column names its methods (MS-PAFL's six settings, the
    LDP-FedAvg baseline); --methods ldp_fedavg is the baseline's runs alone, and a method
    only a column names (fmnist-readings.toml's PFA columns) can be chosen too."""
    from tff_idp.harness.table import only_methods
    spec = load_table(str(ROOT / "runs" / "ms_pafl" / "fmnist" / "figure2.toml"))
    units = expand(only_methods(spec, "ldp_fedavg"), "paper")
    assert [(u.column, u.method) for u in units] == [("baseline", "ldp_fedavg")] * 3
    readings = load_table(str(ROOT / "runs" / "gdpfed" / "ablations" / "fmnist-readings.toml"))
    assert "pfa" not in readings.methods and "pfa" in readings.all_methods()
    pfa = expand(only_methods(readings, "pfa"), "paper")
    assert pfa and {u.method for u in pfa} == {"pfa"}


def test_axis_restricts_a_table_to_some_columns_in_the_whole_tables_folders():
    """--axis: paper 004's Table I on FMNIST, the two columns still to train, in the whole
    table's folders and with their own methods; labels in any case, the figure's panels cut
    to the chosen labels; an unknown label, a table without an axis, and a choice that
    leaves no run are one-line errors."""
    from tff_idp.config import ConfigError
    from tff_idp.harness.table import check_selected, only_axis, only_methods
    spec = load_table(str(ROOT / "runs" / "idp_fedavg" / "fmnist-table1.toml"))
    two = only_axis(spec, "100-0-0, 54-37-9")
    assert two.axis.labels == ["54-37-9", "100-0-0"]          # the table's order
    assert spec.axis.labels == ["0-0-0", "0-0-100", "34-43-23", "54-37-9", "100-0-0"]
    units = expand(two, "paper")
    whole = {u.label: u.folder for u in expand(spec, "paper")}
    assert {u.column for u in units} == {"54-37-9", "100-0-0"}
    assert all(whole[u.label] == u.folder for u in units)
    assert len(units) == len([x for x in whole if "/54-37-9/" in x or "/100-0-0/" in x]) == 12
    assert {u.method for u in units if u.column == "100-0-0"} == {"idp_fedavg"}
    assert two.axis.panels == {"non-private, all at eps 3, all at eps 1": ["100-0-0"],
                               "54-37-9": ["54-37-9"]}
    assert only_axis(spec, "54-37-9").axis.panels == {"54-37-9": ["54-37-9"]}
    assert [u.label for u in expand(only_axis(spec, "0-0-0"), "paper")] == [
        f"FMNIST/0-0-0/p_fedavg/seed{k}" for k in range(3)]
    assert only_axis(spec, None) is spec
    with pytest.raises(ConfigError, match="--axis='1x': not a label of idp004-fmnist-table1's "
                       r"\[axis\]; choose from 0-0-0 \| 0-0-100 \| 34-43-23 \| 54-37-9 \| "
                       "100-0-0$"):
        only_axis(spec, "54-37-9,1x")
    # labels that hold commas themselves (fmnist-readings.toml's), two of them in one --axis
    readings = load_table(str(ROOT / "runs" / "gdpfed" / "ablations" / "fmnist-readings.toml"))
    both = [x for x in readings.axis.labels if "," in x][:2]
    assert len(both) == 2
    assert only_axis(readings, ",".join(both).upper()).axis.labels == both
    with pytest.raises(ConfigError, match="--axis='1x': gdpfed-table2 has no"):
        only_axis(load_table(str(ROOT / "runs" / "gdpfed" / "table2.toml")), "1x")
    none = only_methods(only_axis(spec, "0-0-0"), "idp_sample")
    check_selected(two, units, {"--axis": "54-37-9,100-0-0", "--methods": None})
    with pytest.raises(ConfigError, match="^--axis='0-0-0' --methods='idp_sample': together "
                       "select no run of idp004-fmnist-table1"):
        check_selected(none, expand(none, "paper"), {"--only": None, "--axis": "0-0-0",
                                                     "--methods": "idp_sample"})


def test_seeds_restricts_a_table_to_some_seeds_in_the_whole_tables_folders():
    from tff_idp.config import ConfigError
    from tff_idp.harness.table import only_datasets, only_seeds
    spec = only_datasets(load_table(str(ROOT / "runs" / "gdpfed" / "table2.toml")), "FMNIST")
    first = expand(only_seeds(spec, "0"), "paper")
    assert len(first) == 6 and {u.seed for u in first} == {0}
    assert {u.seed for u in expand(only_seeds(spec, "2,0"), "paper")} == {0, 2}
    whole = {(u.method, u.seed): u.folder for u in expand(spec, "paper")}
    assert all(whole[u.method, u.seed] == u.folder for u in first)
    assert only_seeds(spec, None) is spec
    for bad in ("3", "x", "-1"):
        with pytest.raises(ConfigError, match=f"--seeds='{bad}': not a seed of gdpfed-table2; "
                           "its seeds are 0..2"):
            only_seeds(spec, bad)
