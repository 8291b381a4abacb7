"""``schedgym reproduce EXPERIMENT``: re-run a paper figure or table from ``configs/experiments``.

An experiment YAML names the env, scenario, agents, seeds, the metric and optionally parameter
sweeps with the paper's numbers. Every setting runs as a ``schedgym compare`` (common random
numbers across agents), and the command writes, into ``results/reproduce/<name>/``:

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
from pathlib import Path
from typing import Any

import numpy as np

from schedgym.train.compare import parse_overrides, run_compare
from schedgym.train.stats import fmt_ci, mean_ci, parse_seeds

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs" / "experiments"
KEYS = {"name", "paper", "env_id", "scenario", "overrides", "agents", "reference", "seeds",
        "metric", "sweeps", "paper_improvement_pct"}
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


def load_experiment(path: Path) -> dict[str, Any]:
    """Load and validate an experiment YAML; unknown keys are errors (typos never pass)."""
    import yaml

    cfg = yaml.safe_load(Path(path).read_text())
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
    cfg.setdefault("reference", cfg["agents"][0])
    if cfg["reference"] not in cfg["agents"]:
        raise ValueError(f"{path}: reference {cfg['reference']!r} is not one of the agents")
    labels = []
    for sw in cfg.get("sweeps") or []:
        for key in sw:
            if key not in SWEEP_KEYS:
                raise ValueError(f"{path}: unknown sweep key {key!r}; allowed {sorted(SWEEP_KEYS)}")
        labels.append(sw.get("label", sw.get("parameter")))
        for agent, vals in (sw.get("paper") or {}).items():
            if len(vals) != len(sw["values"]):
                raise ValueError(f"{path}: sweep {sw['parameter']!r}: paper values of {agent!r} "
                                 f"have {len(vals)} entries, expected {len(sw['values'])}")
    if len(set(labels)) != len(labels):
        raise ValueError(f"{path}: two sweeps share the label/parameter {labels}; give each a "
                         "distinct 'label'")
    return cfg


def metric_value(result, metric: str) -> float:
    """``metric`` of one episode: an ``episode_metrics`` key or one of :data:`RESULT_METRICS`
    (``decision_time``: mean seconds per ``predict`` call; ``wall_time``: seconds)."""
    if metric in result.metrics:
        return result.metrics[metric]
    if metric in RESULT_METRICS:
        return float(getattr(result, metric))
    raise KeyError(f"metric={metric!r} is not among the episode metrics {sorted(result.metrics)} "
                   f"nor {list(RESULT_METRICS)}")


def _improvements(results, ref: str, agent: str, metric: str) -> list[float]:
    by = {(r.agent, r.seed): r for r in results}
    out = []
    for r in results:
        if r.agent != agent or (ref, r.seed) not in by:
            continue
        q_ref, q = metric_value(by[(ref, r.seed)], metric), metric_value(r, metric)
        if q > 0 and q_ref > 0:
            out.append((q_ref / q - 1.0) * 100.0)
    return out


def run_experiment(cfg: dict[str, Any], seeds: list[int], overrides: dict[str, Any],
                   workers: int | None, show_progress: bool):
    """Run every setting; returns (rows, {setting label: results}).

    A sweep's ``overrides`` apply to its settings only (after the experiment's, before the
    command line's; the swept value always wins); a value that is a mapping sets several
    parameters at once (e.g. ``{n_types: 4, n_instances: 20}``); ``label`` names the sweep in
    the report (default: the parameter), so two sweeps over one parameter under different fixed
    settings can coexist."""
    sweeps = cfg.get("sweeps") or [{"parameter": None, "values": [None]}]
    ref, metric = cfg["reference"], cfg["metric"]
    rows: list[dict[str, Any]] = []
    runs: dict[str, Any] = {}
    for sw in sweeps:
        param = sw["parameter"]
        label = sw.get("label", param)
        for i, val in enumerate(sw["values"]):
            ov = {**cfg["overrides"], **(sw.get("overrides") or {}), **overrides}
            if isinstance(val, dict):
                ov.update({k: tuple(v) if isinstance(v, list) else v for k, v in val.items()})
            elif param is not None:
                ov[param] = tuple(val) if isinstance(val, list) else val
            results, _ = run_compare(cfg["env_id"], cfg["agents"], seeds, cfg["scenario"], 0, ov,
                                     workers, benchmarks=False, show_progress=show_progress)
            runs[f"{label}={val}" if label != param else f"{param}={val}"] = results
            paper = {a: v[i] for a, v in (sw.get("paper") or {}).items()}
            for agent in cfg["agents"]:
                mine = [r for r in results if r.agent == agent]
                m, h = mean_ci([metric_value(r, metric) for r in mine])
                imp, imp_h = mean_ci(_improvements(results, ref, agent, metric))
                row = {"sweep": label or "-", "parameter": param or "-", "value": val,
                       "agent": agent,
                       metric: m, f"{metric}_ci": h, "ref_improvement_pct": imp,
                       "ref_improvement_pct_ci": imp_h,
                       f"paper_{metric}": paper.get(agent, float("nan")),
                       "paper_ref_improvement_pct": float("nan"),
                       "ms_per_decision": 1e3 * float(np.mean([r.decision_time for r in mine]))}
                if agent != ref and agent in paper and ref in paper and paper[agent] > 0:
                    row["paper_ref_improvement_pct"] = (paper[ref] / paper[agent] - 1) * 100
                if param is None and agent in (cfg.get("paper_improvement_pct") or {}):
                    row["paper_ref_improvement_pct"] = cfg["paper_improvement_pct"][agent]
                rows.append(row)
    return rows, runs


def write_report(cfg: dict[str, Any], rows: list[dict[str, Any]], runs: dict[str, Any],
                 out: Path, seeds: list[int], command: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    metric, ref = cfg["metric"], cfg["reference"]
    with open(out / "rows.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = [f"# {cfg['name']}", "", f"Paper: {cfg.get('paper', '')}", "",
             f"Command: `{command}`", "",
             f"Env `{cfg['env_id']}`, scenario `{cfg['scenario'] or 'paper-default'}`, "
             f"seeds {seeds[0]}..{seeds[-1]} ({len(seeds)}), mean ± 95% CI. "
             f"'{ref} vs agent' = ({ref}/agent - 1) x 100 of the {metric}.", ""]
    fixed = {sw.get("label", sw["parameter"]): sw.get("overrides") or {}
             for sw in cfg.get("sweeps") or []}
    for label in dict.fromkeys(r["sweep"] for r in rows):
        sub = [r for r in rows if r["sweep"] == label]
        param = sub[0]["parameter"]
        lines += [f"## {label}" if label != "-" else "## result", ""]
        if fixed.get(label):
            lines += ["Fixed in this sweep: " + ", ".join(f"`{k}={v}`" for k, v in
                                                          fixed[label].items()), ""]
        lines += [f"| {param} | agent | ours: {metric} | paper: {metric} | ours: {ref} vs agent % "
                  f"| paper: {ref} vs agent % | ms/decision |", "|---|---|---|---|---|---|---|"]
        for r in sub:
            pv = r[f"paper_{metric}"]
            pi = r["paper_ref_improvement_pct"]
            ours_imp = "" if r["agent"] == ref else fmt_ci(r["ref_improvement_pct"],
                                                            r["ref_improvement_pct_ci"], 3)
            lines.append(
                f"| {_fmt_value(r['value'])} | {r['agent']} | "
                f"{fmt_ci(r[metric], r[metric + '_ci'])} | "
                f"{'' if not np.isfinite(pv) else f'{pv:,.2f}'} | {ours_imp} | "
                f"{'' if not np.isfinite(pi) else f'{pi:.2f}'} | {r['ms_per_decision']:.3g} |")
        lines.append("")
    (out / "report.md").write_text("\n".join(lines))
    _plot(cfg, rows, runs, out / "plot.png")


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
                   "YAML path; omit with --list")
    p.add_argument("--list", action="store_true", help="list the available experiments")
    p.add_argument("--seeds", default=None, help="override the experiment's seeds, e.g. 0-1")
    p.add_argument("--set", dest="overrides", action="append", metavar="KEY=VALUE",
                   help="override a scenario parameter in every setting (e.g. horizon=500)")
    p.add_argument("--workers", type=int, default=None, help="parallel worker processes")
    p.add_argument("--out", default=None, help="output folder (default results/reproduce/NAME)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    if args.list or not args.experiment:
        for q in sorted(CONFIG_DIR.glob("*.yml")):
            cfg = load_experiment(q)
            print(f"{q.stem:28s} {cfg.get('paper', '')}")
        return 0
    path = find_experiment(args.experiment)
    cfg = load_experiment(path)
    seeds = parse_seeds(args.seeds or str(cfg["seeds"]))
    overrides = parse_overrides(args.overrides)
    rows, runs = run_experiment(cfg, seeds, overrides, args.workers, not args.quiet)
    out = Path(args.out or f"results/reproduce/{cfg['name']}")
    cmd = "schedgym reproduce " + args.experiment + (f" --seeds {args.seeds}" if args.seeds
                                                       else "") + "".join(
        f" --set {o}" for o in args.overrides or [])
    write_report(cfg, rows, runs, out, seeds, cmd)
    print((out / "report.md").read_text())
    print(f"wrote {out}/rows.csv, report.md, plot.png")
    return 0
