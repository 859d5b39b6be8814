"""python -m tff_idp.run [CONFIG.toml] [--set key=value ...]

Runs every method of an experiment config (with no config: the embedded offline default,
P-FedAvg / DP-FedAvg / GDPFed / GDPFed+ on scikit-learn's handwritten digits) and prints the
methods side by side. Results: <output_dir>/<name>/<method>-seed<seed>/ with config.json,
metrics.csv (per round), summary.json and ledger.csv (per client epsilon vs budget).
Bad input ends with one line on stderr and exit status 2, before any work.
"""
from __future__ import annotations

import signal
import sys

import argparse
import dataclasses
import os
import textwrap
import time
from pathlib import Path

from .atomic import FolderLocked, check_writable_dir, write_failure_line
from .errors import ConfigError, RunDiverged, UnsupportedByBackend
from .runtime import StoppedInStartUp


def _key_help() -> str:
    from .config_doc import key_docs
    lines = ["config keys (TOML; override any with --set key=value, values in TOML syntax; "
             "docs/config.md):"]
    for k in key_docs():
        lines.append(f"  {k['name']:<22} default {k['default']!r}. {k['doc']}")
    return "\n".join(lines)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python -m tff_idp.run", description=__doc__.split("\n\n")[1],
        epilog=_key_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", nargs="?", help="experiment config (TOML); omit for the default")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key (repeatable; a table: in every unit, results "
                   "under <scale>+<overrides> unless the keys only place the runs: device, "
                   "fast_chunk_size, checkpoint_every, data folders)")
    p.add_argument("--list", action="store_true",
                   help="list the configs under runs/, the methods and the data sets (with "
                   "whether each is here), then exit")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--force", action="store_true",
                   help="retrain methods whose results folder is already complete with the "
                   "same config (skipped otherwise; a table: every run --only, --methods "
                   "and --seeds select)")
    p.add_argument("--output-dir", default=None,
                   help="where results go (overrides the config's output_dir; table configs: "
                   "the root of every run folder and of the default report)")
    p.add_argument("--backend", choices=["tff", "fast"],
                   help="override the config's backend (a table: as --set)")
    p.add_argument("--device", choices=["auto", "cpu", "gpu"],
                   help="override the config's device (fast backend; a table: as --set)")
    p.add_argument("--scale", default=None,
                   help="table configs (required): smoke, laptop or paper")
    p.add_argument("--jobs", type=int, default=1,
                   help="table configs: runs in parallel worker processes")
    p.add_argument("--dry-run", action="store_true",
                   help="table configs: say which runs are complete, would be copied or would "
                   "train (and from which round), and how long those would take here and on a "
                   "GPU; nothing is trained or written")
    p.add_argument("--no-report", action="store_true",
                   help="table configs: do not write the report at the end")
    p.add_argument("--only", default=None, metavar="LABELS",
                   help="table configs: only these data-set labels (comma-separated, e.g. "
                   "FMNIST)")
    p.add_argument("--axis", default=None, metavar="LABELS",
                   help="table configs: only these labels of the table's swept [axis] "
                   "(comma-separated, e.g. 0.5x,1.0x)")
    p.add_argument("--methods", default=None, metavar="NAMES",
                   help="table configs: only these of the table's methods, in this order "
                   "(comma-separated registry keys, e.g. gdpfed_plus,dp_fedavg)")
    p.add_argument("--seeds", default=None, metavar="SEEDS",
                   help="table configs: only these of the table's seeds (comma-separated, e.g. "
                   "0 to run seed 0 of every cell first; the others later by the command "
                   "without this flag); an experiment config: run it at each of these seeds "
                   "(e.g. 0,1,2) and add a mean +- std table and plot over them")
    p.add_argument("--report-dir", default=None,
                   help="table configs: write the report here (default "
                   "<output_dir>/<table>/<scale>/report)")
    return p.parse_args(argv)


def _fmt(values, digits=3):
    return "(" + ", ".join(f"{v:.{digits}g}" for v in values) + ")"


# the two observers' columns (tff_idp.privacy.threat_model)
EPS_VIEWERS = "eps vs model viewers / budget"
EPS_SERVER = "eps vs server (max)"
AUDIT = "audit est / LB: final | rounds"


OBSERVERS_LEGEND = (
    "epsilon per privacy group at the run's delta. Model viewers: add/remove one client, "
    "amplified by the sampling of clients (secret from them); budgets are checked against "
    "this one. Server: the largest client's epsilon, its clipped update released with its "
    "group's noise in each round it took part in, no amplification (the server draws the "
    "cohort), client-drawn noise under secure aggregation.")


COLUMNS_LEGEND = (
    "Columns: test_acc_% the final model's test accuracy; rates_% each privacy group's "
    "per-round sampling rate q_m (a client of group m takes part with probability q_m); "
    "sigma^2 each group's squared noise multiplier sigma_m^2 (noise std on the group's sum / "
    "clip; GDPFed Alg. 1); Lambda the noise's expected squared norm per coordinate, "
    "(C^2 / M) sum_m a_m (k_m / d) sigma_m^2 as in GDPFed's Table III (lower: less noise in "
    "the update; privacy.gdpfed.noise_magnitude); eps vs model viewers "
    "/ budget and eps vs server, each with its accountant (below); s/round training seconds a "
    "round after the first. Groups are in the order of budgets (group 0 the strictest). Per "
    "client: ledger.csv in each run folder.")


LOCAL_DP_LEGEND = (
    "MS-PAFL / LDP-FedAvg rows: record-level local DP (replace one record of one client's "
    "data), each client adding the full sigma to its own upload. The covering epsilon "
    "(each upload a Gaussian release, sensitivity 2C, composed over the client's "
    "participations without amplification) holds against the server and the model's viewers "
    "alike; Theorem 4's epsilon, the paper's, amplifies by check-in and local subsampling and "
    "does not cover MS-PAFL's private half (tff_idp.methods.mspafl).")


def _server_epsilons(priv) -> str:
    """Per group the largest client epsilon against the server, or why there is none."""
    values = [g.get("server_epsilon") for g in priv["groups"].values()]
    if any(v is None for v in values):
        return "none (server-drawn noise)"
    return _fmt(values)


def summary_rows(summaries, reference=None):
    """One row per method; with ``reference`` (the paper's accuracy per method), the paper's
    number and ours minus the paper's."""
    rows = []
    for s in summaries:
        plan, priv = s.plan, s.privacy
        eps, server = "-", "-"
        if priv.get("groups"):
            eps = _fmt([g["realised_epsilon"] for g in priv["groups"].values()]) + " / " + \
                _fmt([g["budget"] for g in priv["groups"].values()])
            eps += f" {priv.get('accountant', 'rdp')}"       # the accountant of each column
            guarantee = priv.get("guarantee", {})
            if guarantee.get("valid") is False:
                eps += " (not covered)"
            server = _server_epsilons(priv)
            if not server.startswith("none"):
                server += f" {priv.get('server_accountant', priv.get('accountant', 'rdp'))}"
        elif priv.get("table_epsilon"):      # a method with its own accounting (MS-PAFL)
            eps = priv.get("viewers_epsilon_text", priv["table_epsilon"])
            server = priv.get("server_epsilon_text", "-")
        rows.append({
            "method": s.method,
            "test_acc_%": f"{100 * s.reported_accuracy:.2f}",
            "rates_%": _fmt([100 * q for q in plan["rates"]]),
            "sigma^2": _fmt(plan["noise_multipliers_sq"])
            if priv.get("groups") or priv.get("table_epsilon") else "-",
            "Lambda": f"{plan['noise_magnitude']:.3g}" if "noise_magnitude" in plan else "-",
            EPS_VIEWERS: eps,
            EPS_SERVER: server,
            "s/round": f"{s.seconds_per_round_after_first:.2f}",
        })
        if s.audit:                       # the canary audit (tff_idp.audit.canaries)
            a = s.audit
            rows[-1][AUDIT] = " | ".join(audit_cell(a[k]) for k in ("final_model",
                                                                     "every_round"))
        if reference:
            paper = reference.get(s.method)
            ours = 100 * s.reported_accuracy
            rows[-1]["paper_%"] = "-" if paper is None else f"{paper:.2f}"
            rows[-1]["delta"] = "-" if paper is None else f"{ours - paper:+.2f}"
    return rows


def audit_cell(observer: dict) -> str:
    """One observer's audit as the run table shows it: the estimate [its bootstrap interval]
    / the lower bound (the audit's ceiling), and its verdict on the ledger's epsilon
    ("cannot detect" with the epsilon it would detect; docs/audit.md)."""
    from .audit import bounds
    bound = observer["lower_bound"]
    interval = observer.get("one_shot_interval")
    est = f"{observer['one_shot_estimate']:.2g}"
    if interval:
        est += f" [{interval[0]:.2g}, {interval[1]:.2g}]"
    text = f"{est} / {bound['epsilon']:.2g}"
    if "ceiling" in bound:
        text += f" (max {bound['ceiling']:.3g})"
    if bound.get("verdict") == bounds.LEAK:
        text += " LEAK"
    elif "verdict" in bound:
        text += " " + bounds.verdict_words(bound)
    return text


def main(argv=None) -> int:
    """Exit status: 0 done, 1 a run failed, 2 bad input, 130 / 143 stopped (Ctrl-C / SIGTERM).

    A stop request at any moment ends in one line. From the first instruction, Ctrl-C and
    SIGTERM only set a flag (``runtime.StopRequests``) that start-up checks between its steps
    and the round loop checks between rounds: an exception raised wherever the signal lands
    could be swallowed (a KeyboardInterrupt inside a garbage-collector callback of an import
    is "ignored") or turned into another error. A second request stops at once."""
    from .runtime import StopRequests
    try:
        with StopRequests() as stop:
            # python -m tff_idp.run: a request during the imports before this, recorded
            # by the package (tff_idp/__init__.py: on a loaded machine the imports take
            # longer than the quickest Ctrl-C a person can give)
            from . import EARLY_STOPS as early
            if early and stop.signum is None:
                stop.signum = early[0]
            try:
                return _main(argv, stop)
            except Exception:
                if stop.signum is None:
                    raise
                # the stop, turned by a library into an error of its own (a module the
                # stop left half-imported fails its next import with another one)
                return _stopped_line(stop)
    except KeyboardInterrupt:
        print("stopped (Ctrl-C); run the same command to resume from the last checkpoint",
              file=sys.stderr)
        return 130


def _stop_point(stop) -> None:
    """Between start-up steps: end here if a stop was requested."""
    if stop.signum is not None:
        raise StoppedInStartUp


def _stopped_line(stop) -> int:
    print(f"stopped ({'Ctrl-C' if stop.signum == signal.SIGINT else 'SIGTERM'}) during "
          "start-up; nothing was written", file=sys.stderr)
    return stop.exit_status


def _main(argv, stop) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from .runtime import quiet_tf_logs
    quiet_tf_logs()                        # before anything imports TensorFlow
    if args.list:
        from .catalog import listing
        print(listing(Path("runs")))
        return 0
    from .harness.table import is_table
    if args.config is not None and is_table(args.config):
        return _run_table(args, stop)
    try:
        with stop.immediately():     # nothing to checkpoint yet: a stop ends it now
            table_only = [f"--{k.replace('_', '-')}={v!r}" for k, v in (
                ("only", args.only), ("axis", args.axis), ("methods", args.methods),
                ("report_dir", args.report_dir),
                ("scale", args.scale),
                ("jobs", None if args.jobs == 1 else args.jobs),
                ("no_report", args.no_report or None),
                ("dry_run", args.dry_run or None)) if v is not None]
            if table_only:
                raise ConfigError(f"{table_only[0]}: a flag of table configs; "
                                  f"{args.config or 'the default'} is an experiment config "
                                  "(its methods: --set 'methods=[\"dp_fedavg\"]')")
            extra = [f"{k}={v}" for k, v in (("backend", args.backend), ("device", args.device))
                     if v is not None]
            if args.output_dir is not None:
                extra.append(f"output_dir={_toml_string(args.output_dir)}")
            from . import experiment_config
            cfg = experiment_config.load(args.config, args.overrides + extra)
            cfg = changed_run_name(cfg, args.overrides + extra)
            seeds = single_config_seeds(args.seeds)
            from .runtime import one_thread_per_op_for_lanes
            one_thread_per_op_for_lanes([cfg])     # before TensorFlow's runtime starts
            _stop_point(stop)
            from .engine.experiment import prepare
            exp = prepare(cfg, persist=False)  # the partition is stored after every check
            _stop_point(stop)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except StoppedInStartUp:
        return _stopped_line(stop)

    from .runtime import close_tff, select_device
    try:
        # TensorFlow, TFF and jax are imported with flag-only stops, then checked: a stop
        # raised by the signal handler mid-import can be caught by the package being imported
        # and leave it half-initialised (jax then fails with an AttributeError, not one line)
        import tensorflow as tf
        from .engine.loop import check_methods
        _stop_point(stop)
        with stop.immediately():     # nothing to checkpoint yet: a stop ends it now
            device = select_device(cfg.device)
            check_methods(exp)          # e.g. a split the model has not: before any write
            _check_run_folders(cfg, foreign=not args.force)
        _stop_point(stop)
        if seeds:                          # one run of the config per seed, then over them
            with tf.device(device):
                return _train_seeds(exp, args, seeds, stop)
        if exp.save_partition is not None:
            exp.save_partition()
        with tf.device(device):            # a stop from here: the round loop's clean stop
            _train_all(exp, args)
            return 0
    except (ConfigError, UnsupportedByBackend, FolderLocked) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except StoppedInStartUp:
        return _stopped_line(stop)
    except RunDiverged as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        # no space, a file-size limit, a results folder made read-only or removed while
        # the run wrote into it: one line, nothing marked complete
        line = write_failure_line(e, Path(cfg.output_dir) / cfg.name)
        if line is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        return 1
    finally:
        close_tff()


def _run_table(args, stop) -> int:
    """A table config: expand the grid at ``--scale``, run what is missing, report."""
    from .harness.reuse import still_to_train
    from .harness.runner import pending, run_table
    from .runtime import select_device
    from .harness.table import (check_data, check_selected, expand, load_table, only_axis,
                                only_datasets, only_methods, only_seeds, require_scale,
                                with_overrides)
    try:
        with stop.immediately():     # nothing to checkpoint yet: a stop ends it now
            args.scale = require_scale(args.scale)
            if args.jobs < 1:
                raise ConfigError(f"--jobs={args.jobs}: must be >= 1")
            whole = with_overrides(load_table(args.config), table_overrides(args))
            spec = only_methods(only_datasets(whole, args.only), args.methods)
            spec = only_seeds(only_axis(spec, args.axis), args.seeds)
            if args.output_dir is not None:
                check_writable_dir("--output-dir", args.output_dir)
            units = expand(spec, args.scale, args.output_dir)   # every cell validated first
            check_selected(spec, units, {"--only": args.only, "--axis": args.axis,
                                         "--methods": args.methods, "--seeds": args.seeds})
            from .runtime import one_thread_per_op_for_lanes
            one_thread_per_op_for_lanes([u.cfg for u in units])   # before TF's runtime starts
            from .atomic import run_folder_conflict
            for unit in units:
                why = run_folder_conflict(unit.folder)
                if why:
                    root = spec.out_root(args.scale, args.output_dir)
                    raise ConfigError(f"output_dir={str(root)!r}: {why}")
            if spec.kind == "train":           # the data the runs to train need is here
                to_train = units if args.force else still_to_train(
                    spec, args.scale, pending(units), args.output_dir)
                check_data(to_train)
                if any(u.cfg.device == "gpu" for u in to_train) and not args.dry_run:
                    select_device("gpu")        # one line when there is no GPU here
            if args.dry_run:
                if spec.kind != "train":
                    raise ConfigError(f"--dry-run: {args.config} is a computed table "
                                      f"(kind {spec.kind!r}), nothing to train")
                from .harness.preview import preview
                print(preview(spec, args.scale, units, args.output_dir, args.force,
                              whole=expand(whole, args.scale, args.output_dir)))
                return 0
            _stop_point(stop)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except StoppedInStartUp:
        return _stopped_line(stop)
    failed = 0
    if spec.kind == "train":
        failed = run_table(spec, args.scale, jobs=args.jobs, output_dir=args.output_dir,
                           progress=not args.quiet, force=args.force)
    if not args.no_report:
        from .report import main_table, write_report
        # the table's own report covers every cell, also after a run of some (--only,
        # --axis, --methods, --seeds); one written elsewhere (--report-dir) covers what was chosen
        try:
            with stop.immediately():     # the runs are written: a stop ends the report
                out = write_report(spec if args.report_dir else whole, args.scale,
                                   Path(args.report_dir) if args.report_dir else None,
                                   args.output_dir)
        except StoppedInStartUp:
            print("stopped while writing the report; the runs are kept (python -m "
                  f"tff_idp.report {args.config} --scale {args.scale} writes it)",
                  file=sys.stderr)
            return stop.exit_status
        print(main_table(out.read_text()))
        print(f"report: {out}", file=sys.stderr)
    return 1 if failed else 0


def table_overrides(args) -> list:
    """A table run's --set items, with --backend and --device as items of their own."""
    return list(args.overrides) + [f'{k}="{v}"' for k, v in (("backend", args.backend),
                                                            ("device", args.device)) if v]


# --set keys that change neither what a run computes nor which run it is
NAME_NEUTRAL_KEYS = ("name", "methods", "method", "reference")


def changed_run_name(cfg, items):
    """``cfg`` with ``<name>+<changes>`` as its name when ``items`` (its --set, --backend and
    --device) change what it computes and do not set the name: as a table's changed runs go
    to ``<scale>+<changes>/``, a changed single run gets its own folder, so the natural
    second command (``--backend fast``, then without) never meets the first's results.
    Keys that only place the run (``config.PLACEMENT_KEYS``) keep the name."""
    from .config import PLACEMENT_KEYS
    from .experiment_config import parse_override
    from .harness.table import override_suffix
    keys = [parse_override(item)[0] for item in items]
    if "name" in keys:
        return cfg
    computing = [item for item, key in zip(items, keys)
                 if key not in PLACEMENT_KEYS + NAME_NEUTRAL_KEYS]
    if not computing:
        return cfg
    from .config import check_name
    name = cfg.name + override_suffix(computing)
    check_name("name", name)
    return dataclasses.replace(cfg, name=name)


def _check_run_folders(cfg, foreign: bool = True) -> None:
    """One-line ConfigError when a method's results folder holds a finished run of another
    config (two configs with one ``name`` would overwrite each other), or cannot be a
    folder (a file, a link to nowhere, in its place)."""
    from .atomic import run_folder_conflict
    from .engine.fingerprint import run_fingerprint
    from .engine.finished_runs import foreign_run
    for method in cfg.methods:
        folder = Path(cfg.output_dir) / cfg.name / run_folder_name(cfg, method)
        why = run_folder_conflict(folder)
        if why:
            raise ConfigError(f"output_dir={cfg.output_dir!r}: {why}")
        for place in (folder, folder.parent):      # the run replaces its folder there
            if place.exists() and not os.access(place, os.W_OK | os.X_OK):
                raise ConfigError(f"output_dir={cfg.output_dir!r}: {place} is not writable "
                                  "(the run would replace its results there)")
        theirs = foreign_run(folder, cfg, method) if foreign else None
        if theirs is not None:
            raise ConfigError(
                f"name={cfg.name!r}: {folder} holds a {method} run of another config "
                f"(fingerprint {theirs}, this one {run_fingerprint(cfg, method)}); set another "
                "name or output_dir, or --force to replace it")


def run_folder_name(cfg, method: str) -> str:
    """<method>-seed<seed>, with -canaries<m>-group<g> for a run with the canary audit (its
    accuracy is not the plain run's, nor that of an audit of another group)."""
    audit = f"-canaries{cfg.audit_canaries}-group{cfg.audit_group}" if cfg.audit_canaries \
        else ""
    return f"{method}-seed{cfg.seed}{audit}"


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string (for a --set built from a flag)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def single_config_seeds(text):
    """The seeds of ``--seeds`` for an experiment config (comma-separated non-negative
    integers, at most a table's ``MAX_SEEDS``), or None; one line naming the flag otherwise."""
    from .harness.table import MAX_SEEDS
    if text is None:
        return None
    items = [x.strip() for x in str(text).split(",")]
    if not all(x.isdigit() for x in items) or not items or len(items) > MAX_SEEDS:
        raise ConfigError(f"--seeds={text!r}: comma-separated seeds, e.g. 0,1,2 (at most "
                          f"{MAX_SEEDS:,})")
    seeds = [int(x) for x in items]
    if len(set(seeds)) < len(seeds):
        raise ConfigError(f"--seeds={text!r}: a seed given twice")
    if any(k >= 2 ** 31 for k in seeds):
        raise ConfigError(f"--seeds={text!r}: each below 2^31")
    return seeds


def _train_seeds(exp, args, seeds, stop) -> int:
    """The config at each seed (its own folders, <method>-seed<k>), then each method's mean
    +- std over the seeds: printed, in summary-seeds<...>.csv, and convergence-seeds<...>.png
    with a +-1 std band."""
    from .engine.experiment import prepare
    from .report import mean_std, plot_run_curves
    from .results import format_table, write_csv
    base = exp.cfg
    out_root = Path(base.output_dir) / base.name
    accs = {m: [] for m in base.methods}          # per method, one accuracy per seed
    folders = {m: [] for m in base.methods}
    for k in seeds:
        if stop.signum is not None:
            return stop.exit_status
        cfg = dataclasses.replace(base, seed=k)
        with stop.immediately():
            one = exp if k == base.seed else prepare(cfg, persist=False)
            _check_run_folders(cfg, foreign=not args.force)
        if one.save_partition is not None:
            one.save_partition()
        for s in _train_all(one, args):
            accs[s.method].append(100 * s.reported_accuracy)
            folders[s.method].append(out_root / run_folder_name(cfg, s.method))
    tag = f"seeds{seeds[0]}-{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) \
        else "seeds" + "_".join(map(str, seeds))
    rows = []
    for method in base.methods:
        mean, sd = mean_std(accs[method])
        rows.append({"method": method, "seeds": len(accs[method]),
                     "test_acc_% mean": f"{mean:.2f}", "std": f"{sd:.2f}",
                     "min": f"{min(accs[method]):.2f}", "max": f"{max(accs[method]):.2f}"})
    write_csv(out_root / f"summary-{tag}.csv", rows)
    title = (f"{base.name}: mean over seeds {', '.join(map(str, seeds))} "
             f"({base.dataset}/{base.model}, budgets={base.budgets})")
    plot = plot_run_curves(folders, out_root / f"convergence-{tag}.png", title,
                           base.reference)
    print(f"\nover seeds {', '.join(map(str, seeds))} (std: the sample standard deviation "
          "over seeds):")
    print(format_table(rows, list(rows[0].keys())))
    print(f"results in {out_root}; summary-{tag}.csv; plot {plot}")
    return 0


def _train_all(exp, args) -> list:
    """Every method of ``exp`` trained (or found complete), its table and plot printed and
    written; returns the methods' run summaries."""
    from .engine.finished_runs import complete_run
    from .engine.persist import train_to_folder
    from .results import format_table, write_csv
    cfg = exp.cfg
    out_root = Path(cfg.output_dir) / cfg.name
    summaries = []
    started = time.perf_counter()
    for method in cfg.methods:
        folder = out_root / run_folder_name(cfg, method)
        done = None if args.force else complete_run(folder, cfg, method)
        if done is not None:
            print(f"{method}: already complete with this config in {folder}; skipped "
                  "(--force retrains)", file=sys.stderr)
            summaries.append(done)
            continue
        summary = train_to_folder(exp, method, folder, progress=not args.quiet)
        summaries.append(summary)
        print(f"{method}: test accuracy {100 * summary.final_test_accuracy:.2f}% "
              f"after {cfg.rounds} rounds ({summary.seconds_total:.1f} s) -> {folder}",
              file=sys.stderr)
    table_rows = summary_rows(summaries, cfg.reference)
    out_root.mkdir(parents=True, exist_ok=True)
    write_csv(out_root / f"summary-seed{cfg.seed}.csv", table_rows)
    title = (f"{cfg.name}: {cfg.dataset}/{cfg.model}, n={cfg.num_clients}, T={cfg.rounds}, "
             f"q={cfg.expected_rate}, C={cfg.clip}, budgets={cfg.budgets}, "
             f"delta={cfg.resolved_delta:.3g}, seed={cfg.seed}")
    print(title)
    print(format_table(table_rows, list(table_rows[0].keys())))
    from .report import plot_run_curves
    plot = plot_run_curves({m: out_root / run_folder_name(cfg, m) for m in cfg.methods},
                           out_root / f"convergence-seed{cfg.seed}.png", title, cfg.reference)
    print(textwrap.fill(COLUMNS_LEGEND, 100))
    if any(s.groups for s in summaries):
        print(textwrap.fill(OBSERVERS_LEGEND, 100))
    if any(s.privacy.get("table_epsilon") for s in summaries):
        print(textwrap.fill(LOCAL_DP_LEGEND, 100))
    if any(AUDIT in r for r in table_rows):
        a = summaries[0].audit
        print(textwrap.fill(
            f"Canary audit of privacy group {a['group']} ({a['canaries']} canaries, "
            f"{a['inserted']} inserted; not in the accuracy): Andrew et al.'s one-shot "
            "estimate [90% bootstrap interval] / Steinke et al.'s lower bound at "
            f"{a['confidence']:.0%} confidence family-wise (max: the largest bound this many "
            "canaries can give), for who sees the final model | every round's model; compare "
            "with the group's epsilon vs model viewers. 'no leak detected' only where the "
            "audit detects a true epsilon of twice that with probability 0.8; else 'cannot "
            "detect (detects E)': E is the smallest true epsilon it detects with probability "
            "0.8 (ideal Gaussian canaries; 'nothing' where its max is not above the claim; "
            "docs/audit.md). "
            "Per-canary scores: canaries.csv and canaries.png in each run folder.", 100))
    for s in summaries:
        why = s.guarantee.get("why_not_valid")
        if why:
            print(f"{s.method}: epsilon not covered: {why}")
    print(f"wall time {time.perf_counter() - started:.0f} s; results in {out_root}; "
          f"convergence plot {plot}")
    return summaries


if __name__ == "__main__":
    from .runtime import exit_quietly
    exit_quietly(main())
