"""The generated fault matrix, generated scripts (issue 76): every field and path that
``slurm submit`` writes into its batch script (each #SBATCH field, the interpreter, the
task's --only / --methods / --set items, the table's name and the table file's folder)
times each injection (a space, quotes, ``$(...)``, backticks, a newline, a semicolon). The
contract: refused in one line (exit 2), or the script, run by bash here with a stand-in
``srun`` that records its arguments, executes nothing the field holds (the canary file is
never made) and hands the task its arguments whole. ``--setup`` lines are excluded: they
are shell lines by design (each must be a single line: tests/test_names_and_fields.py)."""
import os
import subprocess

import pytest

from tff_idp import slurm

from ..harness.conftest import tiny_table

INJECTIONS = {
    "space": "a b",
    "single quote": "a'; touch {canary}; '",
    "double quote": 'a"; touch {canary}; "',
    "command substitution": "a$(touch {canary})",
    "backticks": "a`touch {canary}`",
    "newline": "a\ntouch {canary}",
    "semicolon": "a; touch {canary}",
}
FIELDS = ["--partition", "--gres", "--gpus", "--qos", "--constraint", "--account",
          "--mail-type", "--time", "--mem", "--sbatch", "--python", "--only", "--axis",
          "--methods", "--set", "table name", "table folder"]


def _case(tmp_path, field, text):
    """(slurm arguments, table path) with ``text`` in ``field``."""
    folder = tmp_path / (text.replace("/", "_") if field == "table folder" else "t")
    folder.mkdir(parents=True, exist_ok=True)
    table = tiny_table(folder)
    if field == "table name":
        table.write_text(table.read_text().replace(
            'name = "tiny"', 'name = "' + text.replace("\\", "\\\\").replace('"', '\\"')
            .replace("\n", "\\n") + '"'))
    python = tmp_path / "bin" / "python"            # passes the script's interpreter check
    python.parent.mkdir(exist_ok=True)
    python.write_text("#!/bin/sh\nexit 0\n")
    python.chmod(0o755)
    args = ["submit", str(table), "--scale", "smoke", "--dry-run", "--python", str(python)]
    if field == "--set":
        args += ["--set", "data_dir=" + str(tmp_path / text)]
    elif field not in ("table name", "table folder"):
        args = [a for a in args if a not in ("--python", str(python))] if \
            field == "--python" else args
        args += [field, text]
    return args, table


@pytest.mark.parametrize("injection", list(INJECTIONS))
@pytest.mark.parametrize("field", FIELDS)
def test_a_field_never_executes(tmp_path, capfd, field, injection):
    canary = tmp_path / "PWNED"
    text = INJECTIONS[injection].format(canary=canary)
    args, table = _case(tmp_path, field, text)
    status = slurm.main(args)
    out = capfd.readouterr()
    if status != 0:
        lines = [l for l in out.err.splitlines() if l.strip()]
        assert status == 2 and len(lines) == 1 and "Traceback" not in out.err, (status, lines)
        assert not canary.exists()
        return
    script = out.out.split("\n\n", 1)[1]
    path = tmp_path / "array.sbatch"
    path.write_text(script)
    fake = tmp_path / "fakebin"                     # srun: records its arguments
    fake.mkdir()
    (fake / "srun").write_text('#!/bin/bash\nprintf "%s\\n" "$@" > "$SRUN_ARGS"\n')
    (fake / "srun").chmod(0o755)
    (fake / "hostname").write_text("#!/bin/sh\necho node\n")
    (fake / "hostname").chmod(0o755)
    env = {"PATH": f"{fake}:{os.environ['PATH']}", "SRUN_ARGS": str(tmp_path / "args.txt"),
           "SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_JOB_ID": "1"}
    proc = subprocess.run(["bash", str(path)], capture_output=True, text=True, timeout=60,
                          env=env, cwd=tmp_path)
    assert not canary.exists(), (field, injection, script)
    if field == "--python":                          # the interpreter is not there
        assert proc.returncode == 2 and text.splitlines()[0] in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    got = (tmp_path / "args.txt").read_text()
    if field == "table folder":
        assert str(table.resolve()) in got
    if field == "--set":
        assert "data_dir=" + str(tmp_path / text) in got
