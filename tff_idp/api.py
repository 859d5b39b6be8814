"""The suite from Python (docs/library.md, "Runs from Python"): the objects the CLI and the
table harness use, without a config file or a shell.

    import tff_idp
    exp = tff_idp.Experiment.from_dict({"dataset": "digits", "methods": ["gdpfed"],
                                        "rounds": 3, "num_clients": 60})
    run = exp.run("gdpfed")               # rows, summary, ledger; nothing written
    run = exp.run("gdpfed", folder="results/mine/gdpfed-seed0")   # the CLI's run folder
    again = tff_idp.read_run("results/mine/gdpfed-seed0")

``from_dict`` takes the keys of a config file (docs/config.md) and, optionally, your own data
(``data=``: ``tff_idp.data.own.from_arrays(...)`` or ``from_client_data(...)``). Every
refusal a config file gets (one line naming the key, ``tff_idp.config.ConfigError``) comes
before any training, as from ``python -m tff_idp.run``. TFF's worker process (the TFF
backend) is stopped when Python exits (``tff_idp.runtime``).
"""
from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path
from typing import Dict, List, Optional

from .algorithms.plan import MethodPlan
from .atomic import regular_file
from .privacy.threat_model import SERVER_CSV
from .config import ConfigError
from .experiment_config import ExperimentConfig, from_mapping, validate
from .data.types import ArrayData
from .results import RunSummary
from .results.manifest import manifest_problem


def _number(text: str):
    """A CSV cell as the number it was written from (int, float), or the text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


@dataclasses.dataclass
class RunResult:
    """One method's run: ``rows`` (one dict per round: metrics.csv's columns and
    server.csv's cohort sizes, which only the server may see: the folder's observers.json),
    ``summary``
    (summary.json as a :class:`~tff_idp.results.RunSummary`: accuracy, privacy by observer,
    cost; ``summary.to_dict()`` for the JSON), ``ledger`` (ledger.csv: one dict per
    client: its group, budget, participations and epsilon against each observer) and the
    run folder it was written to or read from (None: kept in memory only)."""
    method: str
    rows: List[Dict]
    summary: RunSummary
    ledger: List[Dict]
    folder: Optional[Path] = None

    @property
    def final_test_accuracy(self) -> float:
        return float(self.summary.final_test_accuracy)

    @property
    def privacy(self) -> Dict:
        """The summary's privacy block: per group ``realised_epsilon`` (against those who see
        the released models) and ``server_epsilon`` (against the server), and what each is a
        guarantee of (``guarantee``)."""
        return self.summary.privacy


def read_run(folder) -> RunResult:
    """A run folder written by ``python -m tff_idp.run``, the table harness or
    :meth:`Experiment.run`, read back (numbers as numbers). One-line error when it is not a
    complete run folder."""
    folder = Path(folder)
    try:
        made = json.loads(regular_file(folder / "config.json").read_text())
        summary = RunSummary.from_dict(
            json.loads(regular_file(folder / "summary.json").read_text()))
        tables = {}
        for name in ("metrics.csv", "ledger.csv", SERVER_CSV):
            if name == SERVER_CSV and not (folder / name).exists():     # runs made before
                continue                                               # issue 75
            with open(regular_file(folder / name), newline="") as f:
                tables[name] = [{k: _number(v) for k, v in row.items()}
                                for row in csv.DictReader(f)]
        by_round = {r["round"]: r for r in tables.get(SERVER_CSV, [])}
        rows = [{**row, **by_round.get(row["round"], {})} for row in tables["metrics.csv"]]
    except (OSError, ValueError, KeyError, TypeError, csv.Error) as e:
        raise ValueError(f"folder={str(folder)!r}: not a complete run folder ({e})") from None
    problem = manifest_problem(folder, bool(summary.manifest))
    if problem is not None:
        raise ValueError(f"folder={str(folder)!r}: {problem}")
    return RunResult(made.get("method", ""), rows, summary,
                     tables["ledger.csv"], folder)


class Experiment:
    """A checked config with its data loaded, clients partitioned and every method planned
    (``tff_idp.engine.experiment.prepare``): run its methods, one at a time."""

    def __init__(self, prepared):
        self.prepared = prepared            # tff_idp.engine.experiment.Experiment

    @classmethod
    def from_dict(cls, values: Dict, data: Optional[ArrayData] = None) -> "Experiment":
        """``values``: config keys (docs/config.md; the embedded default's for the rest).
        ``data``: your own (``tff_idp.data.own``); ``dataset`` is then its name."""
        if not isinstance(values, dict):
            raise ConfigError(f"values={values!r}: must be a dict of config keys")
        if data is not None:
            if not isinstance(data, ArrayData):
                raise ConfigError(f"data={type(data).__name__}: must be an ArrayData "
                                  "(tff_idp.data.own.from_arrays or from_client_data)")
            if "dataset" in values:
                raise ConfigError(f"dataset={values['dataset']!r}: leave it out with data= "
                                  f"(it is the data's name, {data.name})")
            values = {**values, "dataset": data.name}
        from .engine.experiment import prepare
        cfg = validate(from_mapping(values), data)
        return cls(prepare(cfg, persist=True, data=data))

    @property
    def config(self) -> ExperimentConfig:
        return self.prepared.cfg

    @property
    def plans(self) -> Dict[str, MethodPlan]:
        """Per method: its per-group rates, noise multipliers, clips, keep fractions."""
        return dict(self.prepared.plans)

    def run(self, method: str, folder=None, backend: Optional[str] = None,
            progress: bool = False) -> RunResult:
        """Train ``method`` (one of the config's ``methods``) for ``rounds`` rounds.
        ``folder``: also write the run folder there (config.json, metrics.csv, server.csv,
        ledger.csv, summary.json, observers.json; resumable from its checkpoint, as the
        CLI's); None: nothing written.
        ``backend``: "tff" or "fast" (default: the config's)."""
        if method not in self.prepared.plans:
            raise ConfigError(f"method={method!r}: not among this experiment's methods "
                              f"({', '.join(self.prepared.plans)})")
        if backend is not None and backend not in ("tff", "fast"):
            raise ConfigError(f"backend={backend!r}: must be 'tff' or 'fast'")
        prepared = self.prepared
        if backend is not None and backend != prepared.cfg.backend:
            prepared = dataclasses.replace(
                prepared, cfg=dataclasses.replace(prepared.cfg, backend=backend))
        if folder is not None:
            from .engine.persist import train_to_folder
            train_to_folder(prepared, method, Path(folder), progress=progress)
            return read_run(folder)
        from .engine.loop import run_method
        rows, summary, ledger = run_method(prepared, method, progress=progress)
        return RunResult(method, rows, summary, list(ledger.client_rows()))


__all__ = ["Experiment", "RunResult", "read_run"]
