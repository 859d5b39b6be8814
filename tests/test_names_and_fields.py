"""Names and Slurm fields that cannot escape (issue 61, class 2): a run's or a table's name
becomes a folder, so '..', a path separator, control characters, a newline or 5,000
characters are one line naming the key (exit 2, nothing written); every field that goes into
an #SBATCH line is checked against sbatch's syntax before the script is written (a newline
in --partition used to put a bare shell line among the directives)."""
import os
import subprocess

import pytest

from tff_idp import run, slurm
from tff_idp.config import ConfigError, check_name

from .harness.conftest import tiny_table

BAD_NAMES = ["..", ".", "../x", "a/b", "a\nb", "a\x1bb", "x" * 5000, "-rf", ".hidden", "", "a."]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_names_are_refused(name):
    with pytest.raises(ConfigError, match="^name=.*must be a folder name"):
        check_name("name", name)


@pytest.mark.parametrize("name", ["digits-default", "gdpfed-fmnist-table2-paper-FMNIST-x_y",
                                  "my run", "a+b=c,d@e", "_x", "x" * 128])
def test_good_names_pass(name):
    check_name("name", name)


@pytest.mark.parametrize("name", ["..", "a\\nb", "x" * 5000])
def test_a_run_named_to_escape_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capfd,
                                                               name):
    monkeypatch.chdir(tmp_path)
    status = run.main(["--set", f'name="{name}"', "--set", 'output_dir="out"'])
    err = [l for l in capfd.readouterr().err.splitlines() if l.strip()]
    assert status == 2 and len(err) == 1 and err[0].startswith("error: name="), err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("name", ["..", "a b\\u0007"])
def test_a_table_named_to_escape_is_one_line(tmp_path, capfd, name):
    path = tiny_table(tmp_path)
    path.write_text(path.read_text().replace('name = "tiny"', f'name = "{name}"'))
    status = run.main([str(path), "--scale", "smoke"])
    err = [l for l in capfd.readouterr().err.splitlines() if l.strip()]
    assert status == 2 and len(err) == 1 and "table.name=" in err[0], err
    assert not (tmp_path / "results").exists() and not (tmp_path.parent / "smoke").exists()


SLURM_CASES = [
    (["--partition", "gpu\necho INJECTED"], "--partition='gpu\\necho INJECTED'"),
    (["--partition", "gpu debug"], "--partition='gpu debug'"),
    (["--time", "abc"], "--time='abc'"),
    (["--time", "1:2:3:4"], "--time='1:2:3:4'"),
    (["--cpus", "0"], "--cpus=0"),
    (["--mem", ""], "--mem=''"),
    (["--mem", "32 G"], "--mem='32 G'"),
    (["--gres", "gpu:1\n#SBATCH --x"], "--gres="),
    (["--account", "a;rm"], "--account='a;rm'"),
    (["--mail-type", "SOMETIMES"], "--mail-type='SOMETIMES'"),
    (["--qos", "$(id)"], "--qos='$(id)'"),
    (["--sbatch", "--exclusive\necho x"], "--sbatch="),
    (["--sbatch", "exclusive"], "--sbatch='exclusive'"),
    (["--setup", "module load x\nrm -rf /"], "--setup="),
]


@pytest.mark.parametrize("args,needle", SLURM_CASES)
def test_slurm_fields_follow_sbatch_syntax(tmp_path, capfd, args, needle):
    path = tiny_table(tmp_path)
    status = slurm.main(["submit", str(path), "--scale", "smoke", "--dry-run", *args])
    out = capfd.readouterr()
    err = [l for l in out.err.splitlines() if l.strip()]
    assert status == 2 and len(err) == 1 and needle in err[0], err
    assert "#SBATCH" not in out.out and not (tmp_path / "results").exists()


def test_good_slurm_fields_write_the_script(tmp_path, capfd):
    path = tiny_table(tmp_path)
    status = slurm.main(["submit", str(path), "--scale", "smoke", "--dry-run",
                         "--partition", "gpu,debug", "--time", "1-02:30:00", "--mem", "16000M",
                         "--gres", "gpu:a100:2", "--mail-type", "END,FAIL",
                         "--constraint", "a100&ib", "--sbatch=--exclusive"])
    out = capfd.readouterr().out
    assert status == 0
    for line in ("#SBATCH --partition=gpu,debug", "#SBATCH --time=1-02:30:00",
                 "#SBATCH --mem=16000M", "#SBATCH --gres=gpu:a100:2",
                 "#SBATCH --mail-type=END,FAIL", "#SBATCH --constraint=a100&ib",
                 "#SBATCH --exclusive"):
        assert line in out


def test_no_path_or_name_reaches_the_script_unquoted(tmp_path, capfd):
    """Issue 76: an interpreter path with ``$(...)`` landed inside a double-quoted echo and
    ran; a table named with a space was written bare into --job-name and --output. The
    script is run by bash here (no GPU, so no environment is sourced; the interpreter is
    missing, so it stops at its check): nothing the fields hold executes."""
    path = tiny_table(tmp_path)
    path.write_text(path.read_text().replace('name = "tiny"', 'name = "my table"'))
    canary = tmp_path / "PWNED"
    evil = f"/nonexistent/x$(touch {canary})`touch {canary}`/bin/python"
    status = slurm.main(["submit", str(path), "--scale", "smoke", "--dry-run", "--gres", "",
                         "--python", evil])
    out = capfd.readouterr().out
    assert status == 0
    script = out.split("\n\n", 1)[1]
    assert "#SBATCH --job-name=my_table-smoke" in script
    output = next(l for l in script.splitlines() if l.startswith("#SBATCH --output="))
    assert output.startswith('#SBATCH --output="') and output.endswith('/%A_%a.out"')
    (tmp_path / "array.sbatch").write_text(script)
    proc = subprocess.run(["bash", str(tmp_path / "array.sbatch")], capture_output=True,
                          text=True, timeout=60, env={"PATH": os.environ["PATH"]})
    assert proc.returncode == 2 and "not found" in proc.stderr
    assert evil in proc.stderr                         # printed as text, not run
    assert not canary.exists()
