"""scripts/onednn_profile.py: a bench round's CPU time by oneDNN primitive, from oneDNN's
verbose lines, per round, one bench process a runner."""
import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "onednn_profile.py"
spec = importlib.util.spec_from_file_location("onednn_profile", SCRIPT)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)

LINES = """onednn_verbose,info,cpu,runtime:OpenMP
onednn_verbose,exec,cpu,convolution,jit:avx512_core,backward_weights,src_f32::blocked:acdb::f0 wei_f32::blocked:Acdb16a::f0,,alg:convolution_direct,mb10_ic1oc32_ih28oh24kh5,2.5
onednn_verbose,exec,cpu,reorder,jit:uni,undef,src_f32::blocked:decab::f0 dst_f32::blocked:aCdeb32c::f0,,,120x64x32x5x5,10.0
onednn_verbose,exec,cpu,convolution,jit:avx512_core,backward_weights,src_f32::blocked:acdb::f0,,,mb10,1.5
onednn_verbose,1701.5,primitive,exec,cpu,reorder,jit:uni,undef,src_f32::blocked:decab::f0 dst_f32::blocked:aCdeb32c::f0,,,120x64x32x5x5,4.0
onednn_verbose,create:cache_miss,cpu,convolution,jit:avx512_core,forward_training,,,,,0.3
onednn_verbose,exec,cpu,pooling,jit:avx512_core,forward_training,src,,,mb10,not-a-number
not a verbose line
""".splitlines()


def test_verbose_lines_are_summed_by_primitive_and_reorders_by_layout():
    """v2 and v3 exec lines (the latter with a timestamp and "primitive"); creation lines,
    other lines and a time that is not a number are skipped."""
    primitives, reorders = mod.parse(LINES)
    assert primitives == {("convolution", "jit:avx512_core", "backward_weights"): [4.0, 2],
                          ("reorder", "jit:uni", "undef"): [14.0, 2]}
    assert reorders == {("decab", "aCdeb32c", "120x64x32x5x5"): [14.0, 2]}


def test_bad_runners_and_flags_the_script_sets_are_one_line_exit_2(capsys):
    for argv, needle in ((["--runners", "fast_sumed"], "--runners='fast_sumed': each must"),
                         (["--", "--only", "fast"], "--only after '--'")):
        with pytest.raises(SystemExit) as e:
            mod.main(argv)
        assert e.value.code == 2
        err = capsys.readouterr().err.strip()
        assert needle in err and len(err.splitlines()) == 1


def test_a_small_bench_is_profiled_per_round(tmp_path, capsys):
    """Two runners of a 4-client CNN round: each runner's own process, its convolutions
    among the primitives (this CPU's TensorFlow runs them through oneDNN), per round over
    the warm-up and the timed round."""
    out = tmp_path / "p.json"
    assert mod.main(["--runners", "fast_summed,ceiling", "--out", str(out), "--",
                     "--model", "cnn2", "--clients", "4", "--steps", "1", "--rounds", "1",
                     "--warmup", "1"]) == 0
    got = json.loads(out.read_text())
    assert list(got["runners"]) == ["fast_summed", "ceiling"]
    for runner, r in got["runners"].items():
        assert r["rounds_executed"] == 2
        kinds = {p["kind"] for p in r["primitives"]}
        assert "convolution" in kinds, runner
        assert r["onednn_ms_per_round"] == pytest.approx(
            sum(p["ms_per_round"] for p in r["primitives"]))
        # two convolutions a step, each with its filters' gradient, once a round
        conv_w = [p for p in r["primitives"] if p["kind"] == "convolution"
                  and p["propagation"] == "backward_weights"]
        assert sum(p["calls_per_round"] for p in conv_w) == 2, runner
    assert set(got["runners"]["fast_summed"]["seconds_per_round"]) == {"ours_fast_summed"}
    assert "fast_summed: " in capsys.readouterr().out


def test_primitives_are_grouped_into_operations():
    rows = [{"kind": "convolution", "propagation": "backward_weights", "ms_per_round": 2.0},
            {"kind": "convolution", "propagation": "forward_training", "ms_per_round": 1.0},
            {"kind": "gemm_api", "propagation": "undef", "ms_per_round": 0.5},
            {"kind": "inner_product", "propagation": "forward_training", "ms_per_round": 0.25},
            {"kind": "reorder", "propagation": "undef", "ms_per_round": 4.0},
            {"kind": "eltwise", "propagation": "forward_training", "ms_per_round": 8.0}]
    got = mod.by_operation(rows)
    assert list(got) == list(mod.OPERATIONS)
    assert (got["convolution backward to the filters"], got["convolution forward"],
            got["matrix products"], got["reorders (layouts)"], got["other"],
            got["pooling backward"]) == (2.0, 1.0, 0.75, 4.0, 8.0, 0.0)
