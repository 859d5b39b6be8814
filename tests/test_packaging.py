"""Packaging as a pip user meets it (issue 17, items 8-9): the declared dependencies cover
every third-party import of the package (TensorFlow Federated excepted, installed by the
set-up script for its broken pin), one console script dispatches to every tool, and the
Python versions claimed are the ones the set-up script accepts."""
import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
DIST = {"numpy": "numpy", "scipy": "scipy", "sklearn": "scikit-learn", "tqdm": "tqdm",
        "matplotlib": "matplotlib", "dp_accounting": "dp-accounting",
        "tensorflow": "tensorflow", "tensorflow_datasets": "tensorflow-datasets"}


PEERS = ROOT / "tff_idp" / "peers"     # run in their own environment (requirements-peers.txt)


def _third_party_imports(paths=None):
    names = set()
    for path in paths or [p for p in (ROOT / "tff_idp").rglob("*.py") if PEERS not in p.parents]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "tff_idp"}


def test_dependencies_cover_every_third_party_import():
    declared = {d.split(">")[0].split("<")[0].split("=")[0].strip()
                for d in PYPROJECT["project"]["dependencies"]}
    imported = _third_party_imports()
    assert imported - set(DIST) == {"tensorflow_federated"}     # the set-up script's
    assert {DIST[n] for n in imported if n in DIST} <= declared


def test_the_peer_workloads_imports_are_pinned_in_the_peer_requirements():
    """tff_idp/peers/ runs in .venv-peers (scripts/peer_env.sh), never with the package's
    environment: what it imports is pinned in requirements-peers.txt, TensorFlow >= 2.16."""
    pins = dict(line.split("==") for line in
                (ROOT / "requirements-peers.txt").read_text().splitlines()
                if line.strip() and not line.startswith("#"))
    pinned = {name.lower().replace("_", "-") for name in pins}
    assert _third_party_imports(sorted(PEERS.glob("*.py"))) <= {"numpy", "tensorflow", "pfl"}
    assert {"numpy", "tensorflow", "pfl", "tf-keras"} <= pinned
    assert tuple(int(x) for x in pins["tensorflow"].split(".")[:2]) >= (2, 16)


def test_the_console_script_dispatches_to_every_tool(capsys):
    assert PYPROJECT["project"]["scripts"] == {"tff-idp": "tff_idp.cli:main"}
    from tff_idp import cli
    for command in cli.COMMANDS:
        with pytest.raises(SystemExit) as e:
            cli.main([command, "--help"])
        assert e.value.code == 0
        assert "usage:" in capsys.readouterr().out
    assert cli.main(["nope"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: command='nope': choose from run, report, data, bench, slurm")


def test_python_311_only_is_claimed_and_enforced(tmp_path):
    assert PYPROJECT["project"]["requires-python"] == ">=3.11,<3.12"
    assert "Python 3.11" in (ROOT / "README.md").read_text()
    candidates = [*sorted(Path("/root/.pyenv/versions").glob("3.1[02]*/bin/python3")),
                  *filter(None, (shutil.which(n) for n in ("python3.10", "python3.12")))]
    other = next((p for p in candidates if subprocess.run(
        [str(p), "-c", "import sys; assert sys.version_info[:2] != (3, 11)"],
        capture_output=True).returncode == 0), None)      # (a pyenv shim may not run)
    if other is None:
        pytest.skip("no Python other than 3.11 on this machine")
    done = subprocess.run(["bash", str(ROOT / "scripts" / "ensure_env.sh")], capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "PYTHON": str(other),
                                          "TFF_IDP_VENV": str(tmp_path / "venv")}, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "supports Python 3.11 only" in done.stderr
    assert not (tmp_path / "venv").exists()


def _pypi_unreachable():
    from tff_idp.data.network import unreachable
    return unreachable("pypi.org", timeout=3) is not None


@pytest.mark.skipif(_pypi_unreachable(), reason="the package index is not reachable")
def test_a_bare_virtualenv_resolves_the_declared_dependencies(tmp_path):
    """``pip install .`` into a fresh virtualenv, resolved without installing (``--dry-run``,
    about 20 s here): the declared dependencies fit together and bring TensorFlow 2.14 and
    TF-Privacy, which TFF 0.87's pins need beside them."""
    import json
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    report = tmp_path / "report.json"
    done = subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--dry-run",
                           "--report", str(report), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    got = {i["metadata"]["name"].lower().replace("_", "-"): i["metadata"]["version"]
           for i in json.loads(report.read_text())["install"]}
    assert got["tensorflow"].startswith("2.14.") and "tensorflow-privacy" in got
    declared = {d.split(">")[0].split("<")[0].split("=")[0].strip().lower()
                for d in PYPROJECT["project"]["dependencies"]}
    assert declared <= set(got) and got["tff-idp"] == PYPROJECT["project"]["version"]


def test_gpu_requirements_are_tensorflows_and_cuda_extra():
    """requirements-gpu.txt (GPU=1) pins what the installed TensorFlow's "and-cuda" extra
    pins, TensorRT aside (TF-TRT only)."""
    import importlib.metadata
    import re
    extra = {}
    for req in importlib.metadata.requires("tensorflow"):
        m = re.match(r"([A-Za-z0-9_.\-]+)\s*\(?==\s*([^;)\s]+)\)?\s*;.*extra == .and-cuda.", req)
        if m:
            extra[m.group(1).lower()] = m.group(2)
    assert extra.pop("tensorrt") and len(extra) >= 10
    ours = dict(line.split("==") for line in
                (ROOT / "requirements-gpu.txt").read_text().splitlines()
                if line.strip() and not line.startswith("#"))
    assert ours == extra


def test_gpu_env_puts_the_cuda_libraries_on_the_library_path(tmp_path):
    """scripts/gpu_env.sh adds every <venv>/.../site-packages/nvidia/*/lib and nothing for a
    CPU-only environment (LD_LIBRARY_PATH left unset)."""
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "nvidia"
    for name in ("cudnn", "cublas"):
        (site / name / "lib").mkdir(parents=True)
    script = ROOT / "scripts" / "gpu_env.sh"
    env = {"PATH": os.environ["PATH"]}
    show = 'set -euo pipefail; source "$0" "$1"; echo "${LD_LIBRARY_PATH-unset}"'
    gpu = subprocess.run(["bash", "-c", show, str(script), str(tmp_path / "venv")], env=env,
                         capture_output=True, text=True, check=True).stdout.strip()
    assert sorted(gpu.split(":")) == sorted(str(site / n / "lib") for n in ("cudnn", "cublas"))
    cpu = subprocess.run(["bash", "-c", show, str(script), str(tmp_path / "none")], env=env,
                         capture_output=True, text=True, check=True).stdout.strip()
    assert cpu == "unset"


def test_the_readme_is_short_and_every_link_in_it_and_docs_resolves():
    """Issue 34: the README is the front door (at most about 200 lines); its links and the
    docs' point at files of this repository that exist (nothing outside it)."""
    import re
    readme = ROOT / "README.md"
    assert len(readme.read_text().splitlines()) <= 200
    assert "bash scripts/test.sh" in readme.read_text()        # what .ci/run calls
    for page in [readme] + sorted((ROOT / "docs").glob("*.md")):
        for link in re.findall(r"\]\(([^)]+)\)", page.read_text()):
            path = link.split("#")[0]
            if path and not path.startswith("http"):
                target = (page.parent / path).resolve()
                assert target.exists() and ROOT in target.parents, (page.name, link)


def _pins():
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def test_declared_dependencies_admit_the_pins_and_cover_tffs_run_time():
    """Issue 62 item 7: `pip install -e .` then TFF with --no-deps ended in
    ModuleNotFoundError (tensorflow_model_optimization): TFF's run-time dependencies were
    pinned in requirements.txt only. Every declared dependency admits its pin, and every pin
    but the test tools is declared."""
    from packaging.requirements import Requirement
    pins = _pins()
    declared = {}
    for dep in PYPROJECT["project"]["dependencies"]:
        req = Requirement(dep)
        declared[req.name.lower()] = req
        assert req.name.lower() in pins, f"{dep}: not pinned in requirements.txt"
        assert req.specifier.contains(pins[req.name.lower()], prereleases=True), \
            f"{dep} does not admit requirements.txt's {pins[req.name.lower()]}"
    test_tools = {"pytest", "pytest-timeout", "pytest-xdist", "execnet"}
    assert set(pins) - test_tools <= set(declared), set(pins) - test_tools - set(declared)


def test_architecture_page_names_every_registered_method_and_model():
    """Issue 62 item 8: docs/architecture.md listed 13 of 18 methods and not the model the
    Shakespeare cells use."""
    from tff_idp import models
    from tff_idp.methods import METHODS
    page = (ROOT / "docs" / "architecture.md").read_text()
    for name in list(METHODS) + list(models.MODELS):
        assert f"`{name}`" in page, name


def test_architecture_page_names_every_module():
    """Issue 58 item 6: docs/architecture.md's module table names every module under
    tff_idp/ (a new module without its line there fails here)."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    table = page[page.index("## Modules"):]
    package = ROOT / "tff_idp"
    modules = [str(f.relative_to(package)) for f in sorted(package.rglob("*.py"))
               if f.name != "__init__.py" or f.parent.name == "models"]
    missing = [m for m in modules if f"`{m}`" not in table]
    assert len(modules) > 70
    assert not missing, f"not in docs/architecture.md's module table: {missing}"


def _parameters(fn) -> int:
    """A function's parameters, ``self`` / ``cls`` of a method not counted."""
    a = fn.args
    names = [p.arg for p in a.posonlyargs + a.args]
    count = len(names) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
    return count - (1 if names and names[0] in ("self", "cls") else 0)


def test_no_function_over_8_parameters_and_no_module_over_600_lines():
    """Issue 58's acceptance: what a function needs travels in objects (RunState, LocalTraining,
    CohortData, ClientExamples, PFAProjection, ...), not in long parameter lists; no module
    under tff_idp/ grows past 600 lines."""
    import ast
    long_lists, long_modules = [], []
    for path in sorted((ROOT / "tff_idp").rglob("*.py")):
        text = path.read_text()
        name = str(path.relative_to(ROOT))
        if text.count("\n") > 600:
            long_modules.append(f"{name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    _parameters(node) > 8:
                long_lists.append(f"{name}:{node.lineno} {node.name} ({_parameters(node)})")
    assert not long_lists, long_lists
    assert not long_modules, long_modules


def _layers() -> dict:
    """Each module's row in docs/architecture.md's module table, counted from the bottom."""
    import re
    page = (ROOT / "docs" / "architecture.md").read_text()
    rows = [re.findall(r"`([^`]+\.py)`", line.split("|")[1])
            for line in page[page.index("## Modules"):].splitlines()
            if line.startswith("| `")]
    return {f"tff_idp/{m}": i for i, mods in enumerate(rows) for m in mods}


def _imports(path) -> list:
    """(line, file) of every module of the package ``path`` imports, at its top or inside a
    function (a lazy import is a dependency too); a name taken from a module is that module."""
    import ast
    rel = path.relative_to(ROOT).with_suffix("")
    here = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            name = ".".join(base + ([node.module] if node.module else []))
            names = [f"{name}.{a.name}" for a in node.names] + [name]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for n in names:
            if not n.startswith("tff_idp"):
                continue
            f = ROOT / (n.replace(".", "/") + ".py")
            f = f if f.is_file() else ROOT / n.replace(".", "/") / "__init__.py"
            if f.is_file() and f != path:
                out.append((node.lineno, f))
                break                              # the module itself, not each name
    return out


def test_every_import_runs_down_the_architecture_pages_layers():
    """Issue 58 item 5: no module imports from a layer above its own (docs/architecture.md's
    module table, bottom up; modules of one row may import each other), lazy imports
    included, so there is no import circle between rows either. A package's face
    (``__init__.py`` that only hands names on) sits on the highest layer it imports from."""
    layers = _layers()
    files = sorted((ROOT / "tff_idp").rglob("*.py"))
    faces = [f for f in files if f.name == "__init__.py" and
             str(f.relative_to(ROOT)) not in layers]

    def layer(f, seen=()):
        key = str(f.relative_to(ROOT))
        if key in layers:
            return layers[key]
        if f in seen:
            return -1
        return max([layer(g, seen + (f,)) for _, g in _imports(f)], default=-1)

    assert len(faces) >= 10 and all(f.stat().st_size < 2000 for f in faces)
    upward = [f"{f.relative_to(ROOT)}:{line} imports {g.relative_to(ROOT)}"
              for f in files if f not in faces for line, g in _imports(f)
              if layer(g) > layer(f)]
    assert not upward, upward


def test_every_method_hook_is_placed_in_a_role():
    """Issue 58 item 3: the plug-in's hooks are grouped as TFF composes a learning process
    (planner, distributor, client work, aggregator, finalizer, reporter); methods/base.py's
    docstring places each one, so a new hook has to say which role it serves."""
    import inspect
    import re
    from tff_idp.methods import base
    doc = base.__doc__
    roles = ["planner", "distributor", "client work", "aggregator", "finalizer", "reporter"]
    sections = re.split(r"\n- \*\*", "\n" + doc.split("\n\n")[1])[1:]
    assert [s.split("**")[0] for s in sections] == roles
    # build: not a hook but all of them composed, once per run (RoundSpec; issue 78 item 3)
    hooks = [n for n, v in vars(base.Method).items()
             if not n.startswith("_") and n not in ("name", "summary", "build")
             and (inspect.isfunction(v) or isinstance(v, (staticmethod, bool, str))
                  or v is None)]
    assert len(hooks) >= 20
    for hook in hooks:
        placed = [r for r, s in zip(roles, sections)
                  if re.search(rf"(Method\.|``){hook}(`|``)", s)]
        assert len(placed) == 1, (hook, placed)
