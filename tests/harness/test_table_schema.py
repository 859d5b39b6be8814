"""Table configs typed like run configs (issue 61, class 4): every section and [table] key of
the wrong type, a method that is not a name, a paper value that is not a finite number, too
many seeds, and a --seeds choice outside the scale's seeds are one line naming the key, exit
status 2, in `run`, `report` and `slurm`, before anything is written (the fault probe's
cases; each was a traceback or a silent empty report)."""
import pytest

from tff_idp import report, run, slurm
from tff_idp.config import ConfigError
from tff_idp.harness.table import expand, load_table, only_seeds

from .conftest import tiny_table

CASES = [
    (('figures = ["convergence"]', "figures = 5"), "table.figures=5"),
    (('methods = ["p_fedavg", "dp_fedavg"]', "methods = [1, 2]"), "table.methods=[1, 2]"),
    (('methods = ["p_fedavg", "dp_fedavg"]', 'methods = ["gdpfed+"]'),
     "table.methods='gdpfed+': not a registered method"),
    (("seeds = 2", "seeds = 1000000000"), "table.seeds=1000000000: at most 1,000"),
    (('title = "Tiny table"', "title = 5"), "table.title=5"),
    (('source = "test"', "source = [1]"), "table.source=[1]"),
]


def _break(tmp_path, edit):
    path = tiny_table(tmp_path)
    path.write_text(path.read_text().replace(*edit))
    return path


SECTION_CASES = [
    ("table = 5\n", "table=5"),
    ('table = "abc"\n', "table='abc'"),
    ("datasets = 5\n", "datasets=5"),
    ("reference = 5\n", "reference=5"),
    ("axis = 5\n", "axis=5"),
    ("base = 5\n", "base=5"),
]


def _with_section_replaced(tmp_path, line):
    """The tiny table with one section replaced by a top-level key of the wrong type."""
    path = tiny_table(tmp_path)
    text = path.read_text()
    name = line.split(" =")[0]
    head, _, rest = text.partition(f"[{name}")
    rest = rest.split("\n[", 1)[1] if "\n[" in rest else ""
    # a TOML top-level key must come before every section
    path.write_text(line + head + ("[" + rest if rest else ""))
    return path


def _assert_one_line(capfd, status, needle):
    err = [l for l in capfd.readouterr().err.splitlines() if l.strip()]
    assert status == 2 and len(err) == 1 and needle in err[0], err


@pytest.mark.parametrize("edit,needle", CASES)
def test_a_wrongly_typed_table_key_is_one_line_everywhere(tmp_path, capfd, edit, needle):
    path = _break(tmp_path, edit)
    with pytest.raises(ConfigError, match=needle.replace("[", r"\[").replace("]", r"\]")
                       .replace("+", r"\+")):
        load_table(str(path))
    _assert_one_line(capfd, run.main([str(path), "--scale", "smoke"]), needle)
    _assert_one_line(capfd, report.main([str(path), "--scale", "smoke"]), needle)
    _assert_one_line(capfd, slurm.main(["submit", str(path), "--scale", "smoke",
                                        "--dry-run"]), needle)
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("line,needle", SECTION_CASES)
def test_a_section_of_the_wrong_type_is_one_line(tmp_path, capfd, line, needle):
    path = _with_section_replaced(tmp_path, line)
    _assert_one_line(capfd, run.main([str(path), "--scale", "smoke"]), needle)
    _assert_one_line(capfd, report.main([str(path), "--scale", "smoke"]), needle)


@pytest.mark.parametrize("value", ["nan", "inf", '"high"', "[]", "true"])
def test_a_paper_value_must_be_a_finite_number(tmp_path, value):
    path = tiny_table(tmp_path)
    text = path.read_text().replace('"1x" = 80.0', f'"1x" = {value}')
    assert text != path.read_text()
    path.write_text(text)
    with pytest.raises(ConfigError, match="reference.digits.p_fedavg=.*finite number"):
        load_table(str(path))


def test_a_seed_outside_the_scales_seeds_is_refused(tmp_path, capfd):
    """Smoke scale runs one seed: --seeds 1 used to report '0 runs' and write an all-missing
    report."""
    spec = only_seeds(load_table(str(tiny_table(tmp_path))), "1")
    assert len(expand(spec, "paper")) > 0
    with pytest.raises(ConfigError, match="--seeds=1: not a seed of tiny at scale smoke"):
        expand(spec, "smoke")
    path = str(tiny_table(tmp_path))
    _assert_one_line(capfd, run.main([path, "--scale", "smoke", "--seeds", "1"]),
                     "--seeds=1: not a seed of tiny at scale smoke")
    assert not (tmp_path / "results").exists()


def test_scale_and_only_are_not_case_sensitive(tmp_path):
    """Issue 62 item 5: `--only fmnist` and `--scale Paper` were refused."""
    from tff_idp.harness.table import only_datasets, require_scale
    spec = load_table(str(tiny_table(tmp_path)))
    assert list(only_datasets(spec, "DIGITS").datasets) == ["digits"]
    assert require_scale("Paper") == "paper" and require_scale("SMOKE") == "smoke"


def test_report_wants_a_scale_like_run(tmp_path, capfd):
    """Issue 62 item 5: report defaulted to --scale paper while run requires it."""
    path = tiny_table(tmp_path)
    assert report.main([str(path)]) == 2
    _assert_one_line(capfd, 2, "--scale: required for a table config")


def test_the_example_comparison_reports_mean_and_std_without_paper_numbers(tmp_path, capfd):
    """Issue 62 item 3: runs/examples/compare-two-methods.toml, at laptop scale (3 seeds)."""
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "runs/examples/compare-two-methods.toml"
    out = tmp_path / "r"
    assert run.main([str(path), "--scale", "laptop", "--quiet", "--output-dir", str(out)]) == 0
    text = (out / "compare-two-methods/laptop/report/report.md").read_text()
    assert "6 of 6 runs complete" in text and "this table has no paper numbers" in text
    assert "ours - paper" not in text and " ± " in text
    assert (out / "compare-two-methods/laptop/report/convergence.png").stat().st_size > 0
