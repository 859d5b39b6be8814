"""``python -m tff_idp.bench --peers pfl``: pfl-research timed on the bench's workload in its
own environment (scripts/peer_env.sh). The environment is optional: bad flags and a missing
or broken environment are one-line errors everywhere; the peer run itself is tested only
where ``.venv-peers`` exists (it is not installed by the README's commands, nor in CI)."""
import json
import subprocess
import sys

import pytest

from tff_idp import bench

from .test_cli_conventions import _one_line_error


def _table_rows(text: str, header: str) -> list:
    """The cells (stripped) of each body row of the markdown table in ``text`` whose header
    line starts with ``header`` (the table ends at the first blank line)."""
    block = text.split("\n\n" + header)[1].split("\n\n")[0]
    return [[c.strip() for c in line.split("|")[1:-1]] for line in block.splitlines()[2:]]


@pytest.mark.parametrize("flags,needle", [
    (["--peers", "flower"], "--peers='flower': peers are pfl"),
    (["--peers", "pfl", "--model", "char_lstm_torch"],
     "--peers=pfl: its workload builds cnn2, cnn2_same, char_lstm (a target after the last "
     "character) only, not 'char_lstm_torch'"),
    (["--peers", "pfl", "--model", "char_lstm", "--sequence-targets"],
     "only, not 'char_lstm' with --sequence-targets"),
    (["--peers", "pfl", "--method", "dp_pfeddsu"], "--peers=pfl: its workload builds"),
])
def test_bad_peer_flags_are_one_line_exit_2(flags, needle, tmp_path, capfd):
    assert bench.main(flags + ["--out", str(tmp_path / "b.json")]) == 2
    _one_line_error(capfd, needle)
    assert not (tmp_path / "b.json").exists()


def test_a_missing_peer_environment_says_how_to_make_it(tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("TFF_IDP_PEER_ENV", str(tmp_path / "none"))
    assert bench.main(["--peers", "pfl", "--out", str(tmp_path / "b.json")]) == 2
    _one_line_error(capfd, "create it with: bash scripts/peer_env.sh")


def test_a_peer_environment_without_pfl_is_refused_before_any_work(tmp_path, capfd,
                                                                   monkeypatch):
    """An environment that exists but cannot import the workload's packages: its import
    error in the one line, before our runners start."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "env")],
                   check=True, timeout=120)
    monkeypatch.setenv("TFF_IDP_PEER_ENV", str(tmp_path / "env"))
    assert bench.main(["--peers", "pfl", "--out", str(tmp_path / "b.json")]) == 2
    _one_line_error(capfd, "cannot run it (ModuleNotFoundError: No module named 'numpy')")


@pytest.mark.skipif(not bench.peer_python().is_file(),
                    reason="no .venv-peers (bash scripts/peer_env.sh makes it)")
def test_the_bench_times_pfl_on_the_same_workload(tmp_path, capsys):
    """Both in one run: our fast backend and pfl on 4 clients; the JSON has pfl's seconds
    and each runner's time over pfl's."""
    out = tmp_path / "b.json"
    assert bench.main(["--only", "fast", "--clients", "4", "--steps", "2", "--rounds", "1",
                       "--warmup", "0", "--peers", "pfl", "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    assert set(got["seconds_per_round"]) == {"ours_fast", "pfl"}
    assert got["peer_tf_num_intraop_threads"] is None      # no lanes: nothing set for it
    assert got["x_pfl"]["ours_fast"] == pytest.approx(
        got["seconds_per_round"]["ours_fast"] / got["seconds_per_round"]["pfl"])
    assert "x pfl's time" in capsys.readouterr().out


def test_docs_peer_table_is_the_committed_bench_output():
    """docs/backends.md's "Against pfl-research" table: every seconds-per-round and ratio is
    read from the committed JSON the bench wrote (runs/bench/), to the printed digits."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "backends.md").read_text()
    table = page[page.index("## Against pfl-research"):].split("\n\n| runner |")[1]
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in table.splitlines()[2:] if line.startswith("|")}
    runs = [json.loads((root / "runs/bench" / f).read_text())["seconds_per_round"]
            for f in ("2026-11-28-cnn2-pfl.json", "2026-11-28-char-lstm-pfl.json")]
    keys = {'fast backend, `noise_draw = "client"`': "ours_fast",
            'fast backend, `noise_draw = "group"`': "ours_fast_group",
            "pfl-research 0.6.0 (server-drawn noise)": "pfl",
            "ceiling (plain TF 2.14, one shared model)": "ceiling"}
    assert set(rows) == set(keys)
    for label, key in keys.items():
        for setting, sec in enumerate(runs):
            cells = rows[label][3 * setting:3 * setting + 3]
            assert cells[0] == f"{sec[key]:.3f}", (label, setting)
            assert cells[1] == f"{sec[key] / sec['pfl']:.2f}", (label, setting)
            assert cells[2] == f"{sec[key] / sec['ceiling']:.2f}", (label, setting)


def test_docs_profile_tables_are_the_committed_bench_output():
    """docs/backends.md's profile (stock TFF, pfl, ours, fast_train, the ceiling; then the
    per-layer cost of per-client weights) is read from the committed JSONs."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "backends.md").read_text()
    part = page[page.index("### With stock TFF, and where the time goes"):]
    sec = json.loads((root / "runs/bench/2026-11-29-cnn2-profile.json").read_text())[
        "seconds_per_round"]
    block = part.split("\n\n| runner |")[1].split("\n\n")[0]
    rows = [line.split("|")[1:-1] for line in block.splitlines()[2:]]
    keys = ["stock_tff", "pfl", "ours_fast", "ours_fast_group", "fast_train", "ceiling"]
    assert len(rows) == len(keys)
    for key, row in zip(keys, rows):
        assert row[1].strip() == f"{sec[key]:.3f}", key
        for cell, base in zip(row[2:], ("stock_tff", "pfl", "ceiling")):
            assert cell.strip() == f"{sec[key] / sec[base]:.2f}", (key, base)
    layers = json.loads((root / "runs/bench/2026-11-29-grouped-conv-cost.json").read_text())[
        "layers"]
    table = part.split("\n\n| layer of cnn2 |")[1].split("\n\n")[0].splitlines()[2:]
    assert len(table) == len(layers)
    for line, (name, r) in zip(table, layers.items()):
        cells = [c.strip() for c in line.split("|")[1:-1]]
        assert cells[1:] == [f"{1e3 * r['grouped']:.1f} ms", f"{1e3 * r['shared']:.1f} ms",
                             f"{r['grouped_x_shared']:.2f}"], name


def test_docs_lanes_table_is_the_committed_bench_output():
    """docs/backends.md's table "With lanes": every seconds-per-round and ratio is read from
    the two committed JSONs, each ratio to the faster of the ceiling's two thread settings."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "backends.md").read_text()
    part = page[page.index("**With lanes (2026-12-02"):]
    rows = {r[0]: r[1:] for r in _table_rows(part, "| runner (32 clients a pass in 2 lanes) |")}
    keys = {"fast, each client's share": "ours_fast",
            'fast, shares summed (`fast_noise_shares = "summed"`)': "ours_fast_summed",
            'fast, server-drawn noise (`noise_draw = "group"`)': "ours_fast_group",
            "ceiling, one intra-op thread": "ceiling",
            "ceiling, TensorFlow's default threads": "ceiling_default_threads",
            "pfl-research 0.6.0 (server-drawn noise)": "pfl"}
    assert set(rows) == set(keys)
    for setting, model in enumerate(("cnn2", "cnn2_same")):
        got = json.loads((root / f"runs/bench/2026-12-02-{model}-lanes.json").read_text())
        sec = got["seconds_per_round"]
        assert got["config"]["chunks"] == [[32, 2]] and got["tf_num_intraop_threads"] == "1"
        best = min(sec["ceiling"], sec["ceiling_default_threads"])
        for label, key in keys.items():
            cells = rows[label][3 * setting:3 * setting + 3]
            assert cells == [f"{sec[key]:.3f}", f"{sec[key] / best:.2f}",
                             f"{sec[key] / sec['pfl']:.2f}"], (label, model)
            assert got["x_ceiling"][key] == sec[key] / best


def test_docs_convolution_floor_is_the_committed_script_output():
    """docs/backends.md's "convolutions' floor": every ratio of its table, the convolutions'
    sums, their share of the shared model's layers and the floor they set on a step are
    read from the two committed JSONs of scripts/grouped_conv_cost.py."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "backends.md").read_text()
    part = page[page.index("**The convolutions' floor"):].split("\n\n**")[0]
    rows = _table_rows(part, "| layer | forward |")
    got = []
    for model in ("cnn2", "cnn2_same"):
        layers = json.loads((root / f"runs/bench/2026-12-03-{model}-grouped-conv-cost.json")
                            .read_text())["layers"]
        assert layers and all(not n.startswith("conv") or "ops" in r
                              for n, r in layers.items())
        convs = [(n, r) for n, r in layers.items() if n.startswith("conv")]
        for name, r in convs:
            ops = r["ops"]
            other = r.get("one_input_channel")
            got.append([f"`{model}` " + name.replace("->", " -> "),
                        f"{ops['forward']['grouped_x_shared']:.2f}",
                        f"{ops['input_gradient']['grouped_x_shared']:.2f}"
                        if "input_gradient" in ops else "(not needed)",
                        f"{ops['filter_gradient']['grouped_x_shared']:.2f}",
                        f"{r['grouped_x_shared']:.2f}",
                        f"{other['depthwise']['x_grouped']:.2f} / "
                        f"{other['one_hot_patches']['x_grouped']:.2f}" if other else "-"])
        grouped = sum(r["grouped"] for _, r in convs)
        shared = sum(r["shared"] for _, r in convs)
        dense = next(r["shared"] for n, r in layers.items() if n.startswith("dense"))
        share = shared / (shared + dense)
        assert (f"{grouped / shared:.2f}x the shared ones on `{model}` ({1e3 * grouped:.1f} "
                f"against {1e3 * shared:.1f} ms") in " ".join(part.split()), model
        assert f"{100 * share:.0f}% (`{model}`)" in part, model
        assert f"{1e3 * dense:.1f}" in part, model
        floor = share * grouped / shared + (1 - share)
        assert (f"{share:.2f} x {grouped / shared:.2f} + {1 - share:.2f} = {floor:.2f}x"
                in " ".join(part.split())), model
    assert rows == got


def test_docs_table2_cell_cost_is_the_committed_script_output():
    """docs/backends.md's "A Table II cell, the archived path against the new one": every
    median and ratio is read from the committed JSON of scripts/cell_cost.py, whose
    variants are the ones the command in the page names, in its order."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "backends.md").read_text()
    part = page[page.index("**A Table II cell, the archived path"):].split("\n\n**")[0]
    got = json.loads((root / "runs/bench/2026-12-03-fmnist-table2-gdpfed-cell-cost.json")
                     .read_text())
    rows = _table_rows(part, "| variant |")
    names = [v["name"] for v in got["config"]["variant"]]
    assert [r[0] for r in rows] == names and len(names) == 3
    command = " ".join(part.split())
    for v in got["config"]["variant"]:
        assert f"--variant '{v['name']}: {'; '.join(v['set'])}'" in command, v["name"]
    for row, name in zip(rows, names):
        m, r = got["medians"][name], got["ratios"][name]
        assert row[1:] == [f"{m['seconds_per_round_after_first']:.3f}",
                           f"{r['seconds_per_round_after_first']:.2f}",
                           f"{m['seconds_eval']:.2f}", f"{r['seconds_eval']:.2f}",
                           f"{m['seconds_wall']:.2f}", f"{r['seconds_wall']:.2f}"], name
    assert got["config"]["rounds"] == 6 and got["config"]["repeats"] == 2
    archived = sorted(x["seconds_per_round_after_first"] for x in got["runs"][names[0]])
    assert f"({archived[0]:.2f} and {archived[1]:.2f} s a round)" in part


def test_docs_whole_cohort_lanes_table_is_the_committed_bench_output():
    """docs/backends.md's table of chunkings on the AMD machine (2026-12-04): every ratio is
    the committed JSONs' ``x_ceiling`` of the summed shares at that chunking, in the order
    the runs were made."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "backends.md").read_text()
    part = page[page.index("**The same bench on another machine, quiet"):]
    rows = {r[0]: r[1:] for r in _table_rows(part, "| summed shares, chunk |")}

    def ratios(model, runs, key):
        got = [json.loads((root / f"runs/bench/2026-12-04-amd-{model}{run}.json").read_text())
               ["x_ceiling"][key] for run in runs]
        return ", ".join(f"{r:.2f}" for r in got)

    summed = "ours_fast_summed"
    assert rows == {
        "64, default threads": [ratios("cnn2_same", [""], summed), ratios("cnn2", [""], summed)],
        "64, one thread an operation": [ratios("cnn2_same", ["-lanes"], f"{summed}@64"),
                                        ratios("cnn2", ["-lanes"], f"{summed}@64")],
        "32x2 (32 clients a pass in lanes of 16, four passes)": [
            ratios("cnn2_same", ["-lanes", "-lanes3"], f"{summed}@32x2"),
            ratios("cnn2", ["-lanes", "-lanes2", "-lanes3"], f"{summed}@32x2")],
        "60x2 (60 clients a pass in lanes of 30, two passes)": [
            ratios("cnn2_same", ["-lanes3"], f"{summed}@60x2") + ", " +
            ratios("cnn2_same", ["-60x2"], summed),
            ratios("cnn2", ["-lanes2", "-lanes3"], f"{summed}@60x2") + ", " +
            ratios("cnn2", ["-60x2"], summed)],
        "40x3 / 20x2": ["-", ratios("cnn2", ["-lanes2"], f"{summed}@40x3") + " / " +
                        ratios("cnn2", ["-lanes2"], f"{summed}@20x2")]}


def test_the_peer_runs_at_tensorflows_default_threads_beside_our_lanes(monkeypatch):
    """A bench in lanes sets one intra-op thread for its own process; the peer's process
    does not inherit it (it runs as a user runs it), while a value the user set before the
    bench (the bench then set nothing) reaches the peer too."""
    import types
    seen = {}

    def fake_run(cmd, **kw):
        seen["env"] = kw["env"]
        return types.SimpleNamespace(returncode=0, stderr="",
                                     stdout='{"seconds_per_round": 1.0, "rounds": [1.0]}')

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "1")
    args = types.SimpleNamespace(model="cnn2", clients=4, steps=2, batch=10, momentum=0.0,
                                 rounds=1, warmup=0, one_thread_per_op=True)
    assert bench._peer_round("pfl", args) == (1.0, [1.0])
    assert "TF_NUM_INTRAOP_THREADS" not in seen["env"]
    args.one_thread_per_op = False
    bench._peer_round("pfl", args)
    assert seen["env"]["TF_NUM_INTRAOP_THREADS"] == "1"
    assert "PYTHONPATH" not in bench._peer_env(True)


def test_docs_part_chunk_tables_are_the_committed_bench_output():
    """docs/backends.md's "Part chunks, padded" paragraph: its three tables and the seconds
    it quotes are the committed JSONs' (runs/bench/2026-12-04-amd-*), to the printed
    digits."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "backends.md").read_text()
    part = page[page.index("**Part chunks, padded;"):page.index("**Where issue 79 stops")]

    def got(model, name):
        return json.loads((root / f"runs/bench/2026-12-04-amd-{model}-{name}.json").read_text())

    def x(model, name, key):
        return f"{got(model, name)['x_ceiling'][key]:.2f}"

    s = "ours_fast_summed"
    chunks = {r[0]: r[1:] for r in _table_rows(part, "| summed shares, chunk (120 clients) |")}
    assert list(chunks.values()) == [
        [x(m, "chunks-lanes", f"{s}@120x2") for m in ("cnn2_same", "cnn2")],
        [x(m, "chunks-lanes", f"{s}@60x2") for m in ("cnn2_same", "cnn2")],
        [x(m, "chunks-lanes", f"{s}@128x2") for m in ("cnn2_same", "cnn2")],
        [x(m, "chunks", f"{s}@120") for m in ("cnn2_same", "cnn2")],
        [x(m, "chunks", f"{s}@64") for m in ("cnn2_same", "cnn2")]]
    seconds = {name: got("cnn2_same", name)["seconds_per_round"]
               for name in ("part-chunk-before", "part-chunk-after", "part-chunk-after-110")}
    for name, key in [("part-chunk-before", "112x2"), ("part-chunk-before", "120x2"),
                      ("part-chunk-before", "56x2"), ("part-chunk-before", "64x2"),
                      ("part-chunk-after", "112x2"), ("part-chunk-after", "120x2"),
                      ("part-chunk-after", "128x2"), ("part-chunk-after-110", "112x2"),
                      ("part-chunk-after-110", "120x2")]:
        assert f"{seconds[name][f'{s}@{key}']:.3f}" in part, (name, key)
    for model in ("cnn2_same", "cnn2"):
        assert f"{got(model, 'pfl-one-thread')['seconds_per_round']['pfl']:.3f}" in part
        assert f"{got(model, 'pfl')['seconds_per_round']['pfl']:.3f}" in part
    peers = {r[0]: r[1:] for r in _table_rows(part, "| runner | `cnn2_same` s/round |")}
    keys = {"fast, each client's share, 128x2": "ours_fast@128x2",
            "fast, shares summed, 128x2": f"{s}@128x2",
            "fast, shares summed, 120x2": f"{s}@120x2",
            "fast, server-drawn noise, 128x2": "ours_fast_group@128x2",
            "ceiling, TensorFlow's default threads": "ceiling_default_threads",
            "pfl-research 0.6.0 (its default threads)": "pfl"}
    assert set(peers) == set(keys)
    for label, key in keys.items():
        want = []
        for model in ("cnn2_same", "cnn2"):
            run = got(model, "padded-pfl")
            want += [f"{run['seconds_per_round'][key]:.3f}", f"{run['x_ceiling'][key]:.2f}",
                     f"{run['x_pfl'][key]:.2f}"]
        assert peers[label] == want, label
    cell = json.loads((root / "runs/bench/2026-12-04-amd-fmnist-table2-gdpfed-cell-cost.json")
                      .read_text())
    rows = _table_rows(part, "| variant | s a round |")
    for row, (name, med) in zip(rows, cell["medians"].items()):
        ratio = cell["ratios"][name]
        assert row[1:] == [f"{med['seconds_per_round_after_first']:.3f}",
                           f"{ratio['seconds_per_round_after_first']:.2f}",
                           f"{med['seconds_eval']:.2f}", f"{med['seconds_wall']:.2f}",
                           f"{ratio['seconds_wall']:.2f}"], name
    assert len(rows) == len(cell["medians"]) == 4


def test_docs_where_issue_79_stops_is_the_committed_output():
    """docs/backends.md's "Where issue 79 stops": the convolutions' floor on this machine
    from scripts/grouped_conv_cost.py's JSONs, the bench's ratios, the one-core timings and
    the counts of committed timings under 1.3x, all read from runs/bench/2026-12-0[45]-amd-*."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "backends.md").read_text()
    part = page[page.index("**Where issue 79 stops"):page.index("**A Table II cell")]
    flat = " ".join(part.split())

    def got(name):
        return json.loads((root / f"runs/bench/{name}.json").read_text())

    floors = {}
    want = []
    for model in ("cnn2", "cnn2_same"):
        for threads, tail in (("default", ""), ("one", "-one-thread")):
            run = got(f"2026-12-05-amd-{model}-grouped-conv-cost{tail}")
            assert run["machine"]["intra_op_threads"] == ("1" if tail else "default")
            layers = run["layers"]
            convs = [r for n, r in layers.items() if n.startswith("conv")]
            grouped = sum(r["grouped"] for r in convs)
            shared = sum(r["shared"] for r in convs)
            dense = next(r["shared"] for n, r in layers.items() if n.startswith("dense"))
            share = shared / (shared + dense)
            floors[model, threads] = share * grouped / shared + 1 - share
            want.append([f"`{model}`, {threads}", f"{1e3 * grouped:.1f}", f"{1e3 * shared:.1f}",
                         f"{grouped / shared:.2f}", f"{1e3 * dense:.1f}", f"{share:.2f}",
                         f"{floors[model, threads]:.2f}"])
    assert _table_rows(part, "| model, intra-op threads |") == want
    for model in ("cnn2", "cnn2_same"):
        low, high = sorted((floors[model, "default"], floors[model, "one"]))
        assert f"{low:.2f}-{high:.2f}x on `{model}`" in flat, model

    bench_rows = {r[0]: r[1:] for r in _table_rows(part, "| runner | `cnn2_same` x ceiling |")}
    keys = {"each client's share, 120x2": "ours_fast@120x2",
            "each client's share, 60x2": "ours_fast@60x2",
            "summed shares, 120x2": "ours_fast_summed@120x2",
            "summed shares, 60x2": "ours_fast_summed@60x2",
            "server-drawn noise, 120x2": "ours_fast_group@120x2",
            "server-drawn noise, 60x2": "ours_fast_group@60x2", "pfl-research 0.6.0": "pfl"}
    assert list(bench_rows) == list(keys)
    runs = {m: got(f"2026-12-05-amd-{m}-floor") for m in ("cnn2_same", "cnn2")}
    for label, key in keys.items():
        assert bench_rows[label] == [f"{runs[m][v][key]:.2f}" for m in ("cnn2_same", "cnn2")
                                     for v in ("x_ceiling", "x_pfl")], label
    for m, run in runs.items():
        assert f"{run['seconds_per_round']['ceiling_default_threads']:.3f}" in part, m
        assert f"{run['x_ceiling']['pfl']:.2f} / 2.5 = {run['x_ceiling']['pfl'] / 2.5:.2f}x" in flat

    cores = []
    for name in ("cnn2-one-core", "cnn2-one-core-2", "cnn2-one-core-3", "cnn2_same-one-core"):
        run = got(f"2026-12-05-amd-{name}")
        assert run["machine"]["cores"] == 1 and run["config"]["chunks"] == [[120, 1]], name
        s = run["seconds_per_round"]
        cores.append((f"{run['x_ceiling']['ours_fast_summed']:.2f}x",
                      f"{s['ours_fast_summed']:.3f}", f"{s['ceiling']:.3f}"))
    assert (f"`cnn2` {cores[0][0]}, {cores[1][0]} and {cores[2][0]} the ceiling "
            f"({cores[0][1]}, {cores[1][1]} and {cores[2][1]} s against {cores[0][2]}, "
            f"{cores[1][2]} and {cores[2][2]}), `cnn2_same` {cores[3][0]} ({cores[3][1]} "
            f"against {cores[3][2]} s)") in flat

    after = {m: got(f"2026-12-05-amd-{m}-unrolled-lanes")["x_ceiling"]
             for m in ("cnn2_same", "cnn2")}
    assert ("`cnn2_same` {:.2f}x and {:.2f}x, `cnn2` {:.2f}x and {:.2f}x (120x2 and 60x2".format(
        *(after[m][f"ours_fast_summed@{c}"] for m in ("cnn2_same", "cnn2")
          for c in ("120x2", "60x2")))) in flat
    alone = got("2026-12-05-amd-cnn2-unrolled-120x2-alone")
    assert alone["config"]["chunks"] == [[120, 2]]
    assert (f"took {alone['seconds_per_round']['ours_fast_summed']:.3f} s a round in a process "
            f"of its own") in flat
    lanes = got("2026-12-05-amd-cnn2-unrolled-lanes")["seconds_per_round"]
    assert f"against {lanes['ours_fast_summed@120x2']:.3f} here" in flat
    split = [[c] + [v for m in ("cnn2_same", "cnn2") for v in (
        f"{got(f'2026-12-05-amd-{m}-train-split')['x_ceiling'][f'fast_train@{c}']:.2f}",
        f"{got(f'2026-12-05-amd-{m}-train-split')['x_ceiling'][f'ours_fast_summed@{c}']:.2f}",
        "{:+.3f}".format(got(f"2026-12-05-amd-{m}-train-split")["seconds_per_round"][
            f"ours_fast_summed@{c}"] - got(f"2026-12-05-amd-{m}-train-split")[
            "seconds_per_round"][f"fast_train@{c}"]))] for c in ("120x2", "60x2")]
    assert _table_rows(part, "| chunk | `cnn2_same` training x ceiling |") == split

    for model, text in (("cnn2_same", "`cnn2_same` came under 1.3x in {n} of {k} ({lo}; the "
                                      "others {rest})"),
                        ("cnn2", "`cnn2` in {n} of {k} ({lo}; the others {rest})")):
        under, over = [], []
        for f in sorted(root.glob(f"runs/bench/2026-12-0[45]-amd-{model}-*.json")):
            if "unrolled" in f.name or "steps-" in f.name:   # after the steps were written out
                continue
            run = json.loads(f.read_text())
            if "ceiling_default_threads" not in run.get("seconds_per_round", {}):
                continue
            for chunk, lanes in run["config"]["chunks"]:
                if (chunk, lanes) not in ((120, 2), (60, 2)):
                    continue
                key = "ours_fast_summed" + (f"@{chunk}x{lanes}"
                                            if len(run["config"]["chunks"]) > 1 else "")
                if key in run["x_ceiling"]:
                    x = round(run["x_ceiling"][key], 2)
                    (under if x < 1.3 else over).append(x)

        def span(xs):
            return (f"{min(xs):.2f}-{max(xs):.2f}x" if min(xs) != max(xs)
                    else f"{xs[0]:.2f}x")
        assert text.format(n=len(under), k=len(under) + len(over), lo=span(under),
                           rest=span(over)) in flat, model


def test_docs_onednn_profile_is_the_committed_script_output():
    """docs/backends.md's profile by oneDNN operation (scripts/onednn_profile.py's JSONs,
    grouped by the script's own by_operation) and the processes whose pooling gradient
    oneDNN did not run."""
    import importlib.util
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("onednn_profile",
                                                  root / "scripts" / "onednn_profile.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    page = (root / "docs" / "backends.md").read_text()
    part = page[page.index("**Where issue 79 stops"):page.index("**A Table II cell")]
    flat = " ".join(part.split())

    def runners(name):
        return json.loads((root / f"runs/bench/2026-12-05-amd-{name}.json").read_text())[
            "runners"]

    same, cnn2 = runners("cnn2_same-onednn-profile"), runners("cnn2-onednn-profile")
    cols = [same["fast_summed"], same["ceiling"], runners("cnn2-onednn-profile-2")[
        "fast_summed"], cnn2["ceiling"]]
    ops = [script.by_operation(r["primitives"]) for r in cols]
    want = [[name] + [f"{o[name]:.0f}" for o in ops] for name in script.OPERATIONS
            if any(o[name] for o in ops)]
    rounds = [1e3 * sum(r["seconds_per_round"].values()) for r in cols]
    want += [["all oneDNN primitives"] + [f"{r['onednn_ms_per_round']:.0f}" for r in cols],
             ["the round"] + [f"{t:.0f}" for t in rounds],
             ["outside oneDNN"] + [f"{t - r['onednn_ms_per_round']:.0f}"
                                   for t, r in zip(rounds, cols)]]
    assert _table_rows(part, "| operation | `cnn2_same` summed shares |") == want

    def pooling_backward_calls(r):
        return sum(p["calls_per_round"] for p in r["primitives"]
                   if p["kind"] == "pooling" and p["propagation"] == "backward_data")
    slow = cnn2["fast_summed"]
    fast = [runners(f"cnn2-onednn-profile-{i}")["fast_summed"] for i in (2, 3)]
    assert pooling_backward_calls(slow) == 0
    assert [pooling_backward_calls(r) for r in fast] == [10, 10]
    s = [sum(r["seconds_per_round"].values()) for r in [slow] + fast]
    assert (f"({s[0]:.3f} s a round, `-onednn-profile`) oneDNN ran no pooling backward at "
            f"all, against 10 calls a round in `-2` and `-3` ({s[1]:.3f} and {s[2]:.3f} s)"
            in flat)
    assert f"{s[0] - max(s[1:]):.1f}-{s[0] - min(s[1:]):.1f} s longer" in flat
    after = [runners(f"cnn2-onednn-profile-unrolled-{i}")["fast_summed"] for i in range(1, 5)]
    assert [pooling_backward_calls(r) for r in after] == [10] * 4
    t = [sum(r["seconds_per_round"].values()) for r in after]
    assert f"took {min(t):.3f}-{max(t):.3f} s a round" in flat
    x = {u: [json.loads((root / f"runs/bench/2026-12-05-amd-cnn2-one-core-steps-{u}-{i}.json")
                        .read_text()) for i in (1, 2, 3)] for u in (8, 0)}
    for u, rs in x.items():
        assert all(r["config"]["unrolled_steps"] == u and r["machine"]["cores"] == 1
                   for r in rs), u
    r8, r0 = ([r["x_ceiling"]["ours_fast_summed"] for r in x[u]] for u in (8, 0))
    assert (f"{min(r8):.2f}-{max(r8):.2f}x the ceiling written out against "
            f"{min(r0):.2f}-{max(r0):.2f}x in the loop") in flat
