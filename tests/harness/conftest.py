import textwrap

import pytest


def tiny_table(tmp_path, name="tiny", methods='["p_fedavg", "dp_fedavg"]', seeds=2, extra="",
               backend="fast"):
    """A small table on the offline digits set: 2 methods x 2 clip scales x seeds. On the
    fast backend unless asked (the harness's tests are of the harness: the backends train
    the same numbers, tests/engine/test_backends.py; the TFF backend builds its iterative
    process anew in every run, several seconds of each)."""
    path = tmp_path / f"{name}.toml"
    path.write_text(textwrap.dedent(f'''
        [table]
        name = "{name}"
        title = "Tiny table"
        source = "test"
        kind = "train"
        layout = "dataset/method x axis"
        methods = {methods}
        seeds = {seeds}
        figures = ["convergence"]
        {extra}

        [base]
        output_dir = "{tmp_path / 'results'}"
        backend = "{backend}"
        model = "logistic"
        rounds = 3
        num_clients = 60
        expected_rate = 0.2
        budgets = [1.0, 2.0, 4.0]

        [datasets.digits]
        dataset = "digits"

        [axis]
        key = "clip"
        mode = "scale"
        labels = ["1x", "2x"]
        values = [1.0, 2.0]

        [reference.digits.p_fedavg]
        "1x" = 80.0
        "2x" = 81.5
        '''))
    return path


@pytest.fixture
def table(tmp_path):
    return tiny_table(tmp_path)


@pytest.fixture
def table_in_runs(tmp_path):
    """The tiny table (one method, one seed) as a repository keeps it: under a runs/ folder,
    whose archive is runs/archive/."""
    runs = tmp_path / "runs"
    runs.mkdir()
    return tiny_table(runs, methods='["p_fedavg"]', seeds=1)
