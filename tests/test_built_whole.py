"""Mechanisms and runners are built whole (issue 78, item 3): no code assigns an attribute
of a built aggregation factory, DP query or backend runner outside its own methods. What a
caller adds (the personal part's masks, client diagnostics, the record sum, the fast
backend's mode) is a constructor argument (``methods.base.FactoryOptions``,
``engine.loop.make_runner(..., mode=)``)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILT = ("factory", "query", "runner", "backend", "aggregator")   # what a name says it holds


def _holder(node: ast.expr) -> str:
    """The name an attribute target hangs from: ``factory`` in ``factory.query.x``,
    ``runner`` in ``self.runner.x`` (the last name before the attribute)."""
    inner = node.value
    if isinstance(inner, ast.Attribute):
        return inner.attr
    if isinstance(inner, ast.Name):
        return inner.id
    return ""


def assignments_into_built(source: str):
    """(line, target) for every ``<built>.<attr> = ...`` (or ``+=``) where ``<built>`` is
    named like a factory, query, runner, backend or aggregator and is not ``self``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            for el in (t.elts if isinstance(t, ast.Tuple) else [t]):
                if isinstance(el, ast.Attribute):
                    holder = _holder(el).lower()
                    if holder != "self" and any(word in holder for word in BUILT):
                        found.append((node.lineno, ast.unparse(el)))
    return found


def test_the_rule_sees_what_it_looks_for():
    code = ("factory.client_diagnostics = True\nfactory.query.shared_masks = m\n"
            "runner.cohort_model, runner.mode = None, 'x'\nself.runner.state += 1\n"
            "self.query = q\nexecutor_factory_args = 1\nargs.mode = 'x'\n")
    assert [t for _, t in assignments_into_built(code)] == [
        "factory.client_diagnostics", "factory.query.shared_masks", "runner.cohort_model",
        "runner.mode", "self.runner.state"]


def test_no_code_changes_a_built_factory_query_or_runner():
    allowed = {"tff_idp/runtime.py"}    # TFF's executor factory module, patched by design
    hits = []
    for folder in ("tff_idp", "tests", "scripts", "examples"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in allowed or rel == "tests/test_built_whole.py":
                continue
            hits += [f"{rel}:{line}: {target}"
                     for line, target in assignments_into_built(path.read_text())]
    assert not hits, "assigned after construction:\n" + "\n".join(hits)


def test_what_a_caller_adds_is_given_at_construction():
    """The options reach the factory and its query whole; deriving a query on the shared
    coordinates leaves the original as it was."""
    import numpy as np
    from tff_idp.aggregators import GroupGaussianFactory, factory_of
    from tff_idp.methods.base import FactoryOptions
    from tff_idp.queries import GroupGaussianQuery
    masks = (np.ones((2, 2), np.float32), None)
    base = GroupGaussianQuery([1.0], [0.5], [4.0])
    shared = base.on_shared(masks)
    assert base.shared_masks is None and shared.shared_masks == list(masks)
    assert base.on_shared(None) is base
    options = FactoryOptions(shared_masks=masks, client_diagnostics=True)
    factory = factory_of(base.on_shared(options.shared_masks), **options.kwargs())
    assert factory.query.shared_masks == list(masks) and factory.client_diagnostics
    assert type(factory) is GroupGaussianFactory
    plain = GroupGaussianFactory([1.0], [0.5], [4.0], **FactoryOptions().kwargs())
    assert plain.query.shared_masks is None and not plain.client_diagnostics
    assert plain.record_aggregation_factory is None


def test_the_librarys_methods_are_those_that_say_their_round_is_fedavgs():
    """Issue 78, item 2 (part): ``tff_idp.learning``'s method list is read from the methods
    (``Method.fedavg_round``), not kept by hand; each method that says so keeps FedAvg's
    client work and finalizer, the whole model shared and no sparsified training."""
    from tff_idp.learning.plan import FEDAVG_FAMILY
    from tff_idp.methods import METHODS
    from tff_idp.methods.base import Method
    from tff_idp import experiment_config
    assert FEDAVG_FAMILY == ("p_fedavg", "dp_fedavg", "gdpfed", "gdpfed_opc", "gdpfed_plus",
                             "idp_sample", "idp_scale", "idp_fedavg", "pfa")
    cfg = experiment_config.ExperimentConfig()
    for name in FEDAVG_FAMILY:
        m = type(METHODS[name])
        assert m.client_output is Method.client_output, name
        assert m.server_update is Method.server_update, name
        assert m.phases is Method.phases and m.reparam is Method.reparam, name
        assert METHODS[name].split_spec(cfg) == "none", name
