"""Issue 76 item 3: a model whose weights stop being finite (a step size that overflows
float32) never runs to the end to report chance as a result: the round loop stops at the
first such round, one line naming the keys that set the step, exit status 1, nothing marked
complete, no lock left. The overflow is made by writing NaN into the fast backend's model
after round 2 (a learning rate within the CLI's bound does not overflow the digits models
in a few rounds); the check itself is the run's own."""
import numpy as np

from tff_idp import run
from tff_idp.engine import loop


def test_a_run_stops_at_its_first_non_finite_round(tmp_path, monkeypatch, capfd):
    real = loop.round_step

    def overflowing(ctx, state, rnd):
        row = real(ctx, state, rnd)
        if rnd == 1:
            runner = state.runner
            runner.restore([np.full_like(x, np.nan) if i == 0 else x
                            for i, x in enumerate(runner.snapshot())])
        return row

    monkeypatch.setattr(loop, "round_step", overflowing)
    status = run.main(["--set", 'methods=["p_fedavg"]', "--set", 'backend="fast"',
                       "--set", "rounds=4", "--set", f'output_dir="{tmp_path}"', "--quiet"])
    err = [l for l in capfd.readouterr().err.splitlines() if l.strip()]
    assert status == 1, err
    assert len(err) == 1 and "round 2 of 4: the model's weights are no longer finite" in \
        err[0] and "local_lr=" in err[0], err
    folders = list(tmp_path.glob("*/*"))
    assert not any(f.name == "p_fedavg-seed0" for f in folders), folders   # not complete
    assert not list(tmp_path.rglob("*.lock"))
