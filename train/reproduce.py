"""``schedgym reproduce EXPERIMENT``: re-run a paper figure or table from ``configs/experiments``.

An experiment YAML names the env, scenario, agents, seeds, the metric and optionally parameter
sweeps with the paper's numbers. Every setting runs as a ``schedgym compare`` (common random
numbers across agents), and the command writes, into its run folder
``results/reproduce/NAME-<overrides>-<hash>/`` (``--out`` to choose another):

- ``rows.csv``: one row per (setting, agent) with our mean ± 95% CI, the reference agent's
  improvement over it ``(Q_ref / Q_agent - 1) * 100`` (per seed, then averaged), and the paper's
  value and improvement where the YAML gives them;
- ``report.md``: the same as Markdown tables, our numbers beside the paper's;
- ``plot.png``: the metric against each swept parameter (or, without sweeps, the running average
  reward against time and the reference's ratio to each agent, as the paper's Fig. 2).

Nothing is tuned to match: the paper's numbers are only printed beside ours.
"""

from __future__ import annotations

import argparse
import csv
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from schedgym.train.cli_options import (
    add_parallel_options,
    add_run_folder_options,
    add_set_option,
    check_out_folder,
    parse_overrides,
)
from schedgym.train.runner import EpisodeResult
from schedgym.train.runspec import RunSpec, Setting
from schedgym.train.stats import fmt_ci, fmt_seeds, mean_ci, parse_seeds
from schedgym.train.store import RunStore, run_folder_name

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs" / "experiments"
KEYS = {"name", "paper", "env_id", "scenario", "overrides", "agents", "reference", "seeds",
        "instance_seeds", "benchmarks", "metric", "sweeps", "paper_improvement_pct"}
SWEEP_KEYS = {"parameter", "values", "paper", "overrides", "label"}
#: Metrics read from the episode result itself rather than from the env's ``episode_metrics``.
RESULT_METRICS = ("decision_time", "wall_time")


def find_experiment(name: str) -> Path:
    """Path of an experiment given its name (``ogasched-table3``) or a YAML path."""
    p = Path(name)
    if p.suffix in (".yml", ".yaml") and p.is_file():
        return p
    cand = CONFIG_DIR / f"{name}.yml"
    if cand.is_file():
        return cand
    known = ", ".join(sorted(q.stem for q in CONFIG_DIR.glob("*.yml")))
    raise ValueError(f"experiment={name!r} is invalid: must be a YAML path or one of {known}")


def _fail(path: Path, key: str, value: Any, allowed: str) -> ValueError:
    return ValueError(f"{path}: {key}={value!r} is invalid: must be {allowed}")


def _check_str(path: Path, cfg: dict[str, Any], key: str, optional: bool = False) -> None:
    val = cfg.get(key)
    if not (isinstance(val, str) and val) and not (optional and val is None):
        raise _fail(path, key, val, "a non-empty string" + (" or null" if optional else ""))


def _check_mapping(path: Path, key: str, val: Any, values: str = "") -> dict[str, Any]:
    if val is None:
        return {}
    if not isinstance(val, dict) or not all(isinstance(k, str) for k in val):
        raise _fail(path, key, val, "a mapping with string keys" + values)
    return val


def _check_schema(path: Path, cfg: dict[str, Any]) -> None:
    """The type of every key, so that a bad file fails here, before any episode runs."""
    from schedgym.train.cli_options import check_run_name, resolve_env_id

    for key in ("name", "env_id", "metric"):
        _check_str(path, cfg, key)
    check_run_name(cfg["name"], f"{path}: name")
    try:
        cfg["env_id"] = resolve_env_id(cfg["env_id"])
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    for key in ("paper", "scenario"):
        _check_str(path, cfg, key, optional=True)
    agents = cfg["agents"]
    if not (isinstance(agents, list) and agents and all(isinstance(a, str) for a in agents)):
        raise _fail(path, "agents", agents, "a non-empty list of agent names")
    if not isinstance(cfg["reference"], str):
        raise _fail(path, "reference", cfg["reference"], "one of the agents")
    for key in ("seeds", "instance_seeds"):
        val = cfg[key]
        if isinstance(val, bool) or not isinstance(val, str | int):
            raise _fail(path, key, val, 'seeds as a string such as "0-4" or an integer')
        try:
            parse_seeds(str(val))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
    if not isinstance(cfg.get("benchmarks", False), bool):
        raise _fail(path, "benchmarks", cfg["benchmarks"], "true or false")
    cfg["overrides"] = _check_mapping(path, "overrides", cfg["overrides"])
    for agent, pct in _check_mapping(path, "paper_improvement_pct",
                                     cfg.get("paper_improvement_pct"), " and number values"
                                     ).items():
        if isinstance(pct, bool) or not isinstance(pct, int | float):
            raise _fail(path, f"paper_improvement_pct.{agent}", pct, "a number")
    sweeps = cfg.get("sweeps")
    if sweeps is not None and not (isinstance(sweeps, list) and sweeps):
        raise _fail(path, "sweeps", sweeps, "a non-empty list of sweeps")
    for i, sw in enumerate(sweeps or []):
        where = f"sweeps[{i}]"
        if not isinstance(sw, dict):
            raise _fail(path, where, sw, "a mapping with keys " + ", ".join(sorted(SWEEP_KEYS)))
        for key in sw:
            if key not in SWEEP_KEYS:
                raise ValueError(f"{path}: unknown sweep key {key!r}; allowed {sorted(SWEEP_KEYS)}")
        if not isinstance(sw.get("parameter"), str):
            raise _fail(path, f"{where}.parameter", sw.get("parameter"), "a parameter name")
        if "label" in sw and not isinstance(sw["label"], str):
            raise _fail(path, f"{where}.label", sw["label"], "a string")
        if not (isinstance(sw.get("values"), list) and sw["values"]):
            raise _fail(path, f"{where}.values", sw.get("values"), "a non-empty list")
        for val in sw["values"]:
            if isinstance(val, dict):
                _check_mapping(path, f"{where}.values", val)
        sw["overrides"] = _check_mapping(path, f"{where}.overrides", sw.get("overrides"))
        for agent, vals in _check_mapping(path, f"{where}.paper", sw.get("paper")).items():
            if not isinstance(vals, list):
                raise _fail(path, f"{where}.paper.{agent}", vals, "a list of numbers")


def load_experiment(path: Path) -> dict[str, Any]:
    """Load and validate an experiment YAML (safe YAML, no aliases, at most
    :data:`~schedgym.train.safe_yaml.MAX_BYTES`): unknown keys are errors (typos never pass) and
    every value has the type the run needs, so a bad file fails before any episode runs."""
    from schedgym.train.safe_yaml import load_yaml

    path = Path(path)
    cfg = load_yaml(path, "experiment")
    if not isinstance(cfg, dict):
        raise ValueError(f"{path}: must be a YAML mapping")
    for key in cfg:
        if key not in KEYS:
            raise ValueError(f"{path}: unknown key {key!r}; allowed keys are {sorted(KEYS)}")
    for key in ("name", "env_id", "agents", "metric"):
        if key not in cfg:
            raise ValueError(f"{path}: missing required key {key!r}")
    cfg.setdefault("scenario", None)
    cfg.setdefault("overrides", {})
    cfg.setdefault("seeds", "0-2")
    cfg.setdefault("instance_seeds", "0")
    cfg.setdefault("reference", cfg["agents"][0] if isinstance(cfg["agents"], list)
                   and cfg["agents"] else None)
    _check_schema(path, cfg)
    if cfg["reference"] not in cfg["agents"]:
        raise ValueError(f"{path}: reference {cfg['reference']!r} is not one of the agents")
    labels = []
    for sw in cfg.get("sweeps") or []:
        labels.append(sw.get("label", sw.get("parameter")))
        for agent, vals in (sw.get("paper") or {}).items():
            if len(vals) != len(sw["values"]):
                raise ValueError(f"{path}: sweep {sw['parameter']!r}: paper values of {agent!r} "
                                 f"have {len(vals)} entries, expected {len(sw['values'])}")
    if len(set(labels)) != len(labels):
        raise ValueError(f"{path}: two sweeps share the label/parameter {labels}; give each a "
                         "distinct 'label'")
    return cfg


def metric_value(result: EpisodeResult, metric: str) -> float:
    """``metric`` of one episode: an ``episode_metrics`` key or one of :data:`RESULT_METRICS`
    (``decision_time``: mean seconds per ``predict`` call; ``wall_time``: seconds)."""
    if metric in result.metrics:
        return result.metrics[metric]
    if metric in RESULT_METRICS:
        return float(getattr(result, metric))
    raise KeyError(f"metric={metric!r} is not among the episode metrics {sorted(result.metrics)} "
                   f"nor {list(RESULT_METRICS)}")


def _improvements(results: list[EpisodeResult], ref: str, agent: str, metric: str
                  ) -> list[tuple[int, float]]:
    """``(instance_seed, (Q_ref / Q_agent - 1) * 100)`` per episode of ``agent``."""
    by = {(r.agent, r.instance_seed, r.seed): r for r in results}
    out = []
    for r in results:
        other = by.get((ref, r.instance_seed, r.seed))
        if r.agent != agent or other is None:
            continue
        q_ref, q = metric_value(other, metric), metric_value(r, metric)
        if q > 0 and q_ref > 0:
            out.append((r.instance_seed, (q_ref / q - 1.0) * 100.0))
    return out


def settings(cfg: dict[str, Any], overrides: dict[str, Any]) -> list[Setting]:
    """One :class:`~schedgym.train.runspec.Setting` per swept value (``sweep`` its label,
    ``parameter``, ``value``, ``index``, ``overrides``). A sweep's ``overrides`` apply to its
    settings only (after the experiment's, before the command line's; the swept value always
    wins); a value that is a mapping sets several parameters at once (e.g. ``{n_types: 4,
    n_instances: 20}``); ``label`` names the sweep in the report (default: the parameter)."""
    out = []
    for sw in cfg.get("sweeps") or [{"parameter": None, "values": [None]}]:
        param = sw["parameter"]
        label = sw.get("label", param)
        for i, val in enumerate(sw["values"]):
            ov = {**cfg["overrides"], **(sw.get("overrides") or {}), **overrides}
            if isinstance(val, dict):
                ov.update({k: tuple(v) if isinstance(v, list) else v for k, v in val.items()})
            elif param is not None:
                ov[param] = tuple(val) if isinstance(val, list) else val
            name = f"{label}={val}" if param is not None else "-"
            out.append(Setting(name, ov, label or "-", param or "-", val, i))
    return out


def swept_keys(cfg: dict[str, Any]) -> set[str]:
    """Every parameter some sweep sets (``--set`` of one of them would be ignored)."""
    keys: set[str] = set()
    for sw in cfg.get("sweeps") or []:
        for val in sw["values"]:
            if isinstance(val, dict):
                keys.update(val)
            elif sw["parameter"] is not None:
                keys.add(sw["parameter"])
    return keys


def experiment_spec(cfg: dict[str, Any], seeds: list[int], overrides: dict[str, Any],
                    instance_seeds: list[int] | None = None, command: str = "") -> RunSpec:
    """The run description (``meta.json``) of an experiment."""
    return RunSpec(command="reproduce", experiment=cfg, cmdline=command, env_id=cfg["env_id"],
                   scenario=cfg["scenario"], agents=tuple(cfg["agents"]), seeds=tuple(seeds),
                   instance_seeds=tuple(instance_seeds or [0]), overrides=dict(overrides),
                   benchmarks=bool(cfg.get("benchmarks", False)),
                   settings=tuple(settings(cfg, overrides)))


def validate_experiment(cfg: dict[str, Any], overrides: dict[str, Any],
                        instance_seed: int = 0) -> None:
    """Build the env of every setting (and each agent once) before the first episode, so a
    bad ``--set`` value or sweep value fails at once with the env's one-line message."""
    from schedgym.train import preflight
    from schedgym.train.runner import build_agent, make_env

    preflight.check_agents(list(cfg["agents"]))
    base = make_env(cfg["env_id"], cfg["scenario"], instance_seed,
                    {**cfg["overrides"], **overrides})
    with preflight.compile_notice():  # kernels compile here, not inside a timed episode
        for spec in cfg["agents"]:
            preflight.warm_up(base, build_agent(spec, base))
    base.close()
    for st in settings(cfg, overrides):
        make_env(cfg["env_id"], cfg["scenario"], instance_seed, st.overrides).close()


def run_experiment(cfg: dict[str, Any], seeds: list[int], overrides: dict[str, Any],
                   workers: int | None, show_progress: bool,
                   instance_seeds: list[int] | None = None, store: RunStore | None = None,
                   ray: str | None = None
                   ) -> tuple[list[dict[str, Any]], dict[str, list[EpisodeResult]]]:
    """Run every setting into ``store`` (default: a temporary one); returns (rows,
    ``{setting name: results}``). A failing episode raises ``RuntimeError`` when no store is
    given (with a store it is recorded and left out of the rows)."""
    from schedgym.train.sweep import plan, run_sweep

    if store is None:
        with tempfile.TemporaryDirectory() as tmp:
            store = RunStore.create(Path(tmp) / "run", experiment_spec(
                cfg, seeds, overrides, instance_seeds))
            out = run_sweep(store, plan(store.spec), workers, None, show_progress)
            store.close()
            if out.failed:
                raise RuntimeError(f"{len(out.failed)} episodes failed, e.g. "
                                   f"{out.failed[0]['key']}: {out.failed[0]['error']}")
            return experiment_rows(store)
    run_sweep(store, plan(store.spec), workers, ray, show_progress, cfg["name"])
    return experiment_rows(store)


def experiment_rows(store: RunStore
                    ) -> tuple[list[dict[str, Any]], dict[str, list[EpisodeResult]]]:
    """Rows of the report (one per setting and agent) rebuilt from the store."""
    from schedgym.train.report import load

    cfg = store.spec.experiment
    ref, metric = cfg["reference"], cfg["metric"]
    rows: list[dict[str, Any]] = []
    runs: dict[str, list[EpisodeResult]] = {}
    sweeps = {sw.get("label", sw["parameter"]): sw for sw in cfg.get("sweeps") or []}
    for st in store.spec.settings:
        results, bench = load(store, st.name)
        add_gaps(results, bench, metric)
        runs[st.name] = results
        sw = sweeps.get(st.sweep, {})
        paper = {a: v[st.index] for a, v in (sw.get("paper") or {}).items()}
        for agent in cfg["agents"]:
            mine = [r for r in results if r.agent == agent]
            if not mine:
                continue
            row = {"sweep": st.sweep, "parameter": st.parameter, "value": st.value,
                   "agent": agent, "episodes": len(mine)}
            row.update(_spread([(r.instance_seed, metric_value(r, metric)) for r in mine],
                               metric))
            row.update(_spread(_improvements(results, ref, agent, metric),
                               "ref_improvement_pct"))
            row[f"paper_{metric}"] = paper.get(agent, float("nan"))
            row["paper_ref_improvement_pct"] = float("nan")
            row["ms_per_decision"] = 1e3 * float(np.mean([r.decision_time for r in mine]))
            if agent != ref and agent in paper and ref in paper and paper[agent] > 0:
                row["paper_ref_improvement_pct"] = (paper[ref] / paper[agent] - 1) * 100
            if st.parameter == "-" and agent in (cfg.get("paper_improvement_pct") or {}):
                row["paper_ref_improvement_pct"] = cfg["paper_improvement_pct"][agent]
            rows.append(row)
    return rows, runs


def add_gaps(results: list[EpisodeResult], bench: dict[tuple[int, int], dict[str, float]],
             metric: str) -> None:
    """For ``metric = "<benchmark>_gap"`` (e.g. ``hindsight_optimum_gap``, the regret), set it
    on every episode: the benchmark value of its (instance seed, seed) minus its return."""
    name = metric[: -len("_gap")] if metric.endswith("_gap") else None
    for r in results:
        b = bench.get((r.instance_seed, r.seed), {})
        if name is not None and name in b:
            r.metrics[metric] = b[name] - r.metrics["reward"]


def _spread(pairs: list[tuple[int, float]], name: str) -> dict[str, float]:
    """Mean ± CI over episodes, and mean ± CI, min and max of the per-instance means."""
    m, h = mean_ci([v for _, v in pairs])
    per: dict[int, list[float]] = {}
    for i, v in pairs:
        per.setdefault(i, []).append(v)
    means = [float(np.mean(v)) for v in per.values()]
    im, ih = mean_ci(means)
    nan = float("nan")
    return {name: m, f"{name}_ci": h, f"{name}_inst_mean": im, f"{name}_inst_ci": ih,
            f"{name}_inst_min": min(means) if means else nan,
            f"{name}_inst_max": max(means) if means else nan, f"{name}_instances": len(means)}


def write_report(cfg: dict[str, Any], rows: list[dict[str, Any]],
                 runs: dict[str, list[EpisodeResult]], out: Path, seeds: list[int],
                 command: str, instance_seeds: list[int] | None = None) -> None:
    """``rows.csv``, ``report.md`` and ``plot.png`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    metric, ref = cfg["metric"], cfg["reference"]
    inst = list(instance_seeds or [0])
    multi = len(inst) > 1
    with open(out / "rows.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
        w.writeheader()
        w.writerows(rows)
    lines = [f"# {cfg['name']}", "", f"Paper: {cfg.get('paper', '')}", "",
             f"Command: `{command}`", "",
             f"Env `{cfg['env_id']}`, scenario `{cfg['scenario'] or 'paper-default'}`, "
             f"seeds {fmt_seeds(seeds)} ({len(seeds)}) on instance seeds {fmt_seeds(inst)} "
             f"({len(inst)}); mean ± 95% CI over all episodes"
             + (", and min..max over instances of the per-instance mean" if multi else "")
             + f". '{ref} vs agent' = ({ref}/agent - 1) x 100 of the {metric}.", ""]
    fixed = {sw.get("label", sw["parameter"]): sw.get("overrides") or {}
             for sw in cfg.get("sweeps") or []}
    for label in dict.fromkeys(r["sweep"] for r in rows):
        lines += _section(label, [r for r in rows if r["sweep"] == label], fixed.get(label),
                          metric, ref, multi)
    (out / "report.md").write_text("\n".join(lines))
    _plot(cfg, rows, runs, out / "plot.png")


def _section(label: str, sub: list[dict[str, Any]], fixed: dict[str, Any] | None, metric: str,
             ref: str, multi: bool) -> list[str]:
    """One Markdown table of a sweep (or of the single setting)."""
    param = sub[0]["parameter"]
    lines = [f"## {label}" if label != "-" else "## result", ""]
    if fixed:
        lines += ["Fixed in this sweep: " + ", ".join(f"`{k}={v}`" for k, v in fixed.items()),
                  ""]
    spread = " | over instances" if multi else ""
    lines += [f"| {param} | agent | ours: {metric}{spread} | paper: {metric} | ours: {ref} vs "
              f"agent %{spread} | paper: {ref} vs agent % | ms/decision |",
              "|---" * (7 + 2 * multi) + "|"]
    for r in sub:
        pv, pi = r[f"paper_{metric}"], r["paper_ref_improvement_pct"]
        is_ref = r["agent"] == ref
        ours_imp = "" if is_ref else fmt_ci(r["ref_improvement_pct"],
                                            r["ref_improvement_pct_ci"], 3)
        cells = [_fmt_value(r["value"]), r["agent"], fmt_ci(r[metric], r[metric + "_ci"])]
        if multi:
            cells.append(_range(r, metric))
        cells += ["" if not np.isfinite(pv) else f"{pv:,.2f}", ours_imp]
        if multi:
            cells.append("" if is_ref else _range(r, "ref_improvement_pct"))
        cells += ["" if not np.isfinite(pi) else f"{pi:.2f}", f"{r['ms_per_decision']:.3g}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def _range(row: dict[str, Any], name: str) -> str:
    lo, hi = row.get(f"{name}_inst_min", float("nan")), row.get(f"{name}_inst_max", float("nan"))
    if not np.isfinite(lo):
        return ""
    return f"{fmt_ci(lo, float('nan'), 3)}..{fmt_ci(hi, float('nan'), 3)}"


def _fmt_value(val: Any, sep: str = ", ") -> str:
    """A sweep value for tables and ticks; a mapping prints as ``a=1, b=2``; no sweep: ``-``."""
    if isinstance(val, dict):
        return sep.join(f"{k}={v}" for k, v in val.items())
    return "-" if val is None else str(val)


def _plot(cfg, rows, runs, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric, ref = cfg["metric"], cfg["reference"]
    params = list(dict.fromkeys(r["sweep"] for r in rows))
    if params == ["-"]:
        results = next(iter(runs.values()))
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
        curves = {}
        for agent in cfg["agents"]:
            cs = np.array([r.curve for r in results if r.agent == agent])
            t = np.arange(1, cs.shape[1] + 1)
            curves[agent] = cs
            ax1.plot(t, (cs / t).mean(axis=0), label=agent)
        ax1.set(xlabel="time slot t", ylabel="running average reward Q(t)/t",
                title=cfg["name"] + ": average reward")
        for agent in cfg["agents"]:
            if agent == ref:
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = (curves[ref] / curves[agent]).mean(axis=0)
            ax2.plot(np.arange(1, len(ratio) + 1), ratio, label=f"{ref} / {agent}")
        ax2.axhline(1.0, color="grey", lw=0.8)
        ax2.set(xlabel="time slot t", ylabel="ratio of cumulative rewards",
                title=f"{ref} relative to each agent")
        ax2.set_ylim(0, min(3.0, ax2.get_ylim()[1]))
        ax1.legend(fontsize=8)
        ax2.legend(fontsize=8)
    else:
        ncol = min(3, len(params))
        nrow = -(-len(params) // ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(5.5 * ncol, 4.2 * nrow), squeeze=False)
        for ax in axes.flat[len(params):]:
            ax.set_visible(False)
        for ax, label in zip(axes.flat, params, strict=False):
            sub = [r for r in rows if r["sweep"] == label]
            vals = list(dict.fromkeys(_fmt_value(r["value"], "\n") for r in sub))
            for agent in cfg["agents"]:
                rs = [r for r in sub if r["agent"] == agent]
                ax.errorbar(range(len(rs)), [r[metric] for r in rs],
                            yerr=[0 if not np.isfinite(r[metric + "_ci"]) else r[metric + "_ci"]
                                  for r in rs], marker="o", capsize=3, label=agent)
            ax.set_xticks(range(len(vals)), vals, fontsize=7 if "\n" in vals[0] else None)
            ax.set(xlabel=sub[0]["parameter"], ylabel=metric, title=f"{cfg['name']}: {label}")
        axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reproduce", help="re-run a paper experiment from configs/experiments",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", nargs="?", help="experiment name (e.g. ogasched-table3) or a "
                   "YAML path; omit with --list or --resume")
    p.add_argument("--list", action="store_true", help="list the available experiments")
    p.add_argument("--seeds", default=None, help="override the experiment's seeds, e.g. 0-1")
    p.add_argument("--instance-seeds", default=None,
                   help="override the experiment's instance seeds, e.g. 0-9")
    add_set_option(p, "override a scenario parameter in every setting (e.g. horizon=500); "
                   "a parameter the experiment sweeps cannot be set")
    add_parallel_options(p)
    add_run_folder_options(p, "results/reproduce/NAME-<overrides>-<hash>")
    p.set_defaults(func=main)


def _new_store(args: argparse.Namespace) -> RunStore:
    cfg = load_experiment(find_experiment(args.experiment))
    seeds = parse_seeds(args.seeds or str(cfg["seeds"]))
    inst = parse_seeds(args.instance_seeds or str(cfg["instance_seeds"]))
    overrides = parse_overrides(args.overrides)
    clash = sorted(set(overrides) & swept_keys(cfg))
    if clash:
        raise ValueError(f"--set {clash[0]}={overrides[clash[0]]!r} is invalid: experiment "
                         f"{cfg['name']!r} sweeps {clash[0]}, so the value would be ignored; "
                         "edit the sweep in a copy of the YAML instead")
    if args.out is not None:
        check_out_folder(args.out)  # before the warm-up: a bad --out costs nothing
    validate_experiment(cfg, overrides, inst[0])
    cmd = " ".join(["schedgym reproduce", args.experiment]
                   + ([f"--seeds {args.seeds}"] if args.seeds else [])
                   + ([f"--instance-seeds {args.instance_seeds}"] if args.instance_seeds else [])
                   + [f"--set {o}" for o in args.overrides or []])
    spec = experiment_spec(cfg, seeds, overrides, inst, cmd)
    if args.out is not None:
        out = check_out_folder(args.out)
    else:  # the default folder: a repeated command gets NAME-2, ... (never overwrites)
        out = Path("results/reproduce") / run_folder_name(
            cfg["name"], None, overrides, spec.to_json()).replace("-paper-default", "", 1)
        if not args.overwrite:  # the next free name, also when another run takes one first
            return RunStore.create_free(check_out_folder(out), spec)
    return RunStore.create(out, spec, overwrite=args.overwrite)


def report_reproduce(store: RunStore, quiet: bool = False, out: Path | None = None
                     ) -> list[dict[str, Any]]:
    """Rebuild ``rows.csv``, ``report.md`` and ``plot.png`` of a reproduce run from its store,
    into ``out`` (default: the run folder)."""
    spec, out = store.spec, out or store.path
    rows, runs = experiment_rows(store)
    if not rows:
        print(f"{store.path}: no finished episode yet")
        return rows
    write_report(spec.experiment, rows, runs, out, list(spec.seeds), spec.cmdline,
                 list(spec.instance_seeds))
    if not quiet:
        print((out / "report.md").read_text())
        print(f"wrote {out}/rows.csv, report.md, plot.png")
    return rows


def main(args: argparse.Namespace) -> int:
    from schedgym.train.sweep import finish_message, plan, run_sweep

    if args.resume:
        if args.overwrite:
            raise ValueError("give either --resume or --overwrite, not both")
        store = RunStore.open(args.resume)
    elif args.list or not args.experiment:
        for q in sorted(CONFIG_DIR.glob("*.yml")):
            cfg = load_experiment(q)
            print(f"{q.stem:28s} {cfg.get('paper', '')}")
        return 0
    else:
        store = _new_store(args)
    t0 = time.perf_counter()
    try:
        print(f"run folder: {store.path}")
        outcome = run_sweep(store, plan(store.spec), args.workers, args.ray, not args.quiet,
                            store.spec.experiment["name"])
    finally:
        store.close()
    if not outcome.interrupted:
        report_reproduce(store)
        print(f"({time.perf_counter() - t0:.1f} s)")
    return finish_message("reproduce", store, outcome)
