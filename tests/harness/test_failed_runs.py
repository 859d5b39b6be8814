"""A run that failed is a result: the report lists it as failed with its error and the
rounds it kept, and ``report --archive`` keeps that record so a fresh clone says the same
(``harness.failures``)."""
import csv
import json
import shutil

from tff_idp.engine.checkpoint import write_heartbeat
from tff_idp.engine.fingerprint import run_fingerprint
from tff_idp.harness.archive import archive_folder, archive_runs, failed_runs
from tff_idp.harness.failures import RECORD, SUFFIX, describe
from tff_idp.harness.reuse import reuse_equal_runs
from tff_idp.harness.runner import pending
from tff_idp.harness.table import expand, load_table


def _complete(unit, accuracy):
    unit.folder.mkdir(parents=True)
    (unit.folder / "config.json").write_text(json.dumps(
        {"fingerprint": run_fingerprint(unit.cfg, unit.method)}))
    (unit.folder / "summary.json").write_text(json.dumps(
        {"final_test_accuracy": accuracy, "seconds_total": 2.0}))
    with open(unit.folder / "metrics.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["round", "test_accuracy"])
        w.writeheader()
        w.writerows({"round": r, "test_accuracy": accuracy} for r in (1, 2, 3))
    (unit.folder / "ledger.csv").write_text("client,group,budget,participations,epsilon\n")


def _failed(unit):
    """What the runner leaves: FAILED.txt (a traceback) and the checkpointed rows, the last
    line cut by a kill."""
    partial = unit.folder.with_name(unit.folder.name + ".partial")
    partial.mkdir(parents=True)
    (partial / "FAILED.txt").write_text(
        "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
        "numpy.linalg.LinAlgError: Eigenvalues did not converge\n")
    (partial / "checkpoint-rows.jsonl").write_text(
        json.dumps({"round": 1, "test_accuracy": 0.31}) + "\n" +
        json.dumps({"round": 2, "test_accuracy": 0.12}) + "\n" + '{"round": 3, "te')
    write_heartbeat(partial, 2, 0.5)                  # round 3 raised


def _report(spec):
    from tff_idp.report import write_report
    return write_report(spec, "paper").read_text()


def test_a_failed_run_is_reported_as_failed_and_its_record_archived(table_in_runs, tmp_path):
    spec = load_table(str(table_in_runs))
    done, broken = expand(spec, "paper")               # clip 1x and 2x, p_fedavg, seed 0
    _complete(done, 0.8)
    _failed(broken)
    line = ("Failed runs (1; each kept its metrics up to its last checkpoint: "
            "`harness.failures`): digits/2x/p_fedavg/seed0: numpy.linalg.LinAlgError: "
            "Eigenvalues did not converge in round 3; 2 rounds kept, test_accuracy 12.00% at "
            "round 2")
    md = _report(spec)
    assert line in md and "Missing runs" not in md and "1 of 2 runs complete" in md
    assert "| 80.00 (1 seed) / 80.00 (+0.00) | failed / 81.50 |" in md

    written = archive_runs(spec, "paper", [done, broken])
    dest = archive_folder(spec, "paper", broken)
    record = dest.with_name(dest.name + SUFFIX)
    assert sorted(p.name for p in written) == sorted([done.folder.name, record.name])
    kept = json.loads((record / RECORD).read_text())
    assert kept["fingerprint"] == run_fingerprint(broken.cfg, broken.method)
    assert (kept["rounds_kept"], kept["failed_in_round"]) == (2, 3)
    assert not (dest / "summary.json").exists()
    assert archive_runs(spec, "paper", [done, broken]) == []      # nothing new

    # a fresh clone: no results; the archived run is copied, the failure read from its record
    shutil.rmtree(tmp_path / "runs" / "results")
    units = expand(spec, "paper")
    reuse_equal_runs(spec, "paper", pending(units))
    assert list(failed_runs(spec, "paper", pending(units))) == ["digits/2x/p_fedavg/seed0"]
    assert pending(units) == [units[1]]               # a failure record is never reused
    fresh = _report(spec)
    assert line in fresh and "failed / 81.50" in fresh

    # the config changed since: the record is another run's, the run is missing again
    table_in_runs.write_text(table_in_runs.read_text().replace("rounds = 3", "rounds = 4"))
    changed = load_table(str(table_in_runs))
    assert failed_runs(changed, "paper", expand(changed, "paper")) == {}


def test_a_failure_line_drops_tensorflows_op_decoration_and_says_what_is_unknown():
    """TensorFlow's error lines carry the op's device path and an empty name; the report's
    line keeps the exception and its message, and names no round when no heartbeat was
    written (the run raised before its first round ended)."""
    error = ("tensorflow.python.framework.errors_impl.InvalidArgumentError: {{function_node "
             "__wrapped__SelfAdjointEigV2_device_/job:localhost/replica:0/task:0/device:CPU:0}}"
             " Self-adjoint eigen decomposition was not successful. [Op:SelfAdjointEigV2] name:")
    line = describe("c/pfa/seed0", {"error": error, "failed_in_round": None, "rounds_kept": 0})
    assert line == ("c/pfa/seed0: tensorflow.python.framework.errors_impl.InvalidArgumentError: "
                    "Self-adjoint eigen decomposition was not successful. [Op:SelfAdjointEigV2]; "
                    "0 rounds kept")


def test_a_fifo_in_a_failure_file_is_read_as_no_record(table_in_runs, tmp_path):
    """A FIFO in place of FAILED.txt, the kept rows or an archived failure.json would block
    the report's read forever; each is read only as a regular file, so the run is missing
    (no FAILED.txt), kept no rounds (no rows) or has no archived record."""
    import os
    import signal
    import threading
    from tff_idp.harness.failures import archived_failure, failure_of_partial
    spec = load_table(str(table_in_runs))
    _, broken = expand(spec, "paper")
    _failed(broken)
    partial = broken.folder.with_name(broken.folder.name + ".partial")
    record = archive_folder(spec, "paper", broken)
    archive_runs(spec, "paper", [broken])
    timer = threading.Timer(30, os.kill, (os.getpid(), signal.SIGTERM))  # a hang fails
    timer.start()
    try:
        for path in (partial / "checkpoint-rows.jsonl",
                     record.with_name(record.name + SUFFIX) / RECORD):
            path.unlink()
            os.mkfifo(path)
        assert failure_of_partial(broken)["rounds_kept"] == 0
        assert archived_failure(broken, record) is None
        (partial / "FAILED.txt").unlink()
        os.mkfifo(partial / "FAILED.txt")
        assert failure_of_partial(broken) is None
    finally:
        timer.cancel()
