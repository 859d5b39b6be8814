"""The generated fault matrix, inputs (issue 76): every key of the experiment config (read
from the code's own key table, ``experiment_config.KEYS``, so a new key is covered by construction)
times every bad-value class, through a config file, through ``--set``, and in each
section of a table config (``[base]``, ``[datasets.X]``, an axis value) through ``run``,
``report`` and ``slurm submit``; and the Python API's numeric arguments times the same
classes. The contract: one line naming the key (or the file), exit status 2, nothing
written, or acceptance of a value the matrix lists as valid (ACCEPTED: a new key whose bad
value is accepted fails here until someone decides)."""
import pytest

from tff_idp import experiment_config, report, run, slurm
from tff_idp.config import ConfigError
from tff_idp.experiment_config import KEYS, LIMITS, RANGES
from tff_idp.harness.table import HARNESS_KEYS, expand, load_table

from ..harness.conftest import tiny_table

DEPTH = 3000
# the bad-value classes, as TOML text
BAD_VALUES = {
    "table": "{ a = 1 }", "list": "[1, 2]", "nested list": "[[1.0], [2.0]]",
    "string": '"abc"', "empty string": '""', "bool": "true", "inf": "inf", "-inf": "-inf",
    "nan": "nan", "-1": "-1", "0": "0", "huge": "1e308",
    "huge int": "9223372036854775807", "deep": "[" * DEPTH + "1" + "]" * DEPTH,
}
# (key, class) pairs that are valid values: everything else must be refused
ACCEPTED = {
    ("name", "string"), ("data_dir", "string"), ("data_root", "string"),
    ("output_dir", "string"), ("allow_download", "bool"), ("simulation_diagnostics", "bool"),
    ("dsu_eval_masked", "bool"), ("momentum", "0"), ("audit_canaries", "0"),
    ("audit_group", "0"), ("weight_decay", "0"), ("dsu_lambda", "0"), ("pmtl_lambda", "0"),
    ("validation_fraction", "0"), ("seed", "0"), ("checkpoint_every", "0"),
}
# a value refused by a rule between two keys names the other key (budgets=[1, 2] against
# the default three group ratios)
CROSS_KEY = {("budgets", "list"): "group_ratios"}
CASES = [(key, cls) for key in KEYS for cls in BAD_VALUES]


def _outcome(call):
    """'accepted', or the ConfigError's message (any other exception fails the test)."""
    try:
        call()
    except ConfigError as e:
        return str(e)
    return "accepted"


def _check(key, cls, outcome, prefix=""):
    if (key, cls) in ACCEPTED:
        assert outcome == "accepted", (key, cls, outcome)
        return
    assert outcome != "accepted", f"{key} = {BAD_VALUES[cls][:40]} ({cls}) was accepted"
    assert "\n" not in outcome and len(outcome) <= 400, outcome
    named = CROSS_KEY.get((key, cls), key)
    if cls == "deep":
        named = "config" if not prefix else named
    assert outcome.startswith(prefix) and f"{named}=" in outcome, (key, cls, outcome)


# numeric keys whose rule is written out in experiment_config.validate rather than as a Range
OWN_RULES = {"audit_canaries": "0 (no audit) or 2 to MAX_CANARIES", "clip": "CLIP_RANGE"}


def test_every_numeric_key_declares_its_range_and_every_integer_key_its_limit():
    """What makes the matrix's 'huge' and '-1' hold for a key added later."""
    for key, field in KEYS.items():
        kind = str(field.type)
        if "List" in kind or "Dict" in kind or key in OWN_RULES:
            continue
        if "int" in kind:
            assert key in LIMITS, f"integer key {key!r} has no upper limit in experiment_config.LIMITS"
        if "float" in kind or "int" in kind:
            assert key in RANGES, f"numeric key {key!r} has no range in experiment_config.RANGES"


@pytest.mark.parametrize("key,cls", CASES)
def test_a_config_file(tmp_path, key, cls):
    path = tmp_path / "c.toml"
    path.write_text(f"{key} = {BAD_VALUES[cls]}\n")
    _check(key, cls, _outcome(lambda: experiment_config.load(str(path))))


@pytest.mark.parametrize("key,cls", [c for c in CASES if c[1] != "deep"])
def test_a_set_override(key, cls):
    _check(key, cls, _outcome(lambda: experiment_config.load(None, [f"{key}={BAD_VALUES[cls]}"])))


def test_a_set_override_nested_too_deeply():
    outcome = _outcome(lambda: experiment_config.load(None, [f"rounds={BAD_VALUES['deep']}"]))
    assert outcome.startswith("--set=") and "nested too deeply" in outcome and \
        len(outcome) <= 400


def test_accepted_lists_only_cases_of_the_matrix():
    assert ACCEPTED <= set(CASES)


TABLE_KEYS = [k for k in KEYS if k not in HARNESS_KEYS]


def _table_with(tmp_path, key, raw, section):
    """The tiny digits table with ``key = raw`` in ``section`` (base, datasets, axis)."""
    path = tiny_table(tmp_path)
    lines = [l for l in path.read_text().splitlines() if not l.strip().startswith(f"{key} =")]
    if section == "axis":                  # one axis value of key '*' holding the key
        text = "\n".join(lines).split("[axis]")[0].split("[reference")[0]
        text += (f'\n[axis]\nkey = "*"\nlabels = ["a"]\n[[axis.values]]\n{key} = {raw}\n')
    else:
        anchor = "[base]" if section == "base" else "[datasets.digits]"
        text = "\n".join(l + (f"\n{key} = {raw}" if l.strip() == anchor else "")
                         for l in lines)
    path.write_text(text + "\n")
    return path


@pytest.mark.parametrize("section", ["base", "datasets", "axis"])
@pytest.mark.parametrize("key,cls", [c for c in CASES if c[0] in TABLE_KEYS])
def test_a_table_section(tmp_path, key, cls, section):
    """Loading and expanding at paper scale (what every entry point does first): the same
    outcome as the key in a run config; at smoke scale nothing the scale caps hides it."""
    path = _table_with(tmp_path, key, BAD_VALUES[cls], section)
    outcome = _outcome(lambda: expand(load_table(str(path)), "paper"))
    if outcome == "accepted" and (key, cls) in ACCEPTED:
        return
    if cls == "deep":
        assert outcome.startswith("config=") and "nested too deeply" in outcome, outcome
        return
    if key == "output_dir" and (key, cls) in ACCEPTED:
        return
    _check(key, cls, outcome)
    smoke = _outcome(lambda: expand(load_table(str(path)), "smoke"))
    assert smoke != "accepted", (key, cls, section, "accepted at smoke scale")


def _one_line(capfd, status, needle):
    err = [l for l in capfd.readouterr().err.splitlines() if l.strip()]
    assert status == 2 and len(err) == 1 and needle in err[0], (status, err)


# the cases in every entry point that reads a table: wrong type, infinite, deep
ENTRY_CASES = [("rounds", '"40"'), ("rounds", "[40]"), ("num_clients", '"many"'),
               ("expected_rate", '"high"'), ("rounds", "inf"), ("num_clients", "inf"),
               ("local_epochs", "inf"), ("clip", "nan"), ("budgets", '"tight"'),
               ("rounds", BAD_VALUES["deep"])]


@pytest.mark.parametrize("section", ["base", "datasets", "axis"])
@pytest.mark.parametrize("key,raw", ENTRY_CASES)
def test_run_report_and_slurm_submit_say_it_in_one_line(tmp_path, capfd, key, raw, section):
    path = _table_with(tmp_path, key, raw, section)
    needle = "nested too deeply" if raw.startswith("[[[") else f"{key}="
    _one_line(capfd, run.main([str(path), "--scale", "smoke"]), needle)
    _one_line(capfd, report.main([str(path), "--scale", "smoke"]), needle)
    _one_line(capfd, slurm.main(["submit", str(path), "--scale", "smoke", "--dry-run"]),
              needle)
    assert not (tmp_path / "results").exists()
