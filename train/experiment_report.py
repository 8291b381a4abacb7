"""A reproduce run's numbers beside the paper's: ``rows.csv``, ``report.md`` and ``plot.png``,
rebuilt from its store at any time (``schedgym reproduce`` at its end, ``schedgym report``
later). One row per (setting, agent): our mean ± 95% CI of the experiment's metric, the
reference agent's improvement over the agent ``(Q_ref / Q_agent - 1) * 100`` (per episode,
then averaged), and the paper's value and improvement where the YAML gives them.
"""

from __future__ import annotations

import csv
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from schedgym.train.experiments import experiment_spec
from schedgym.train.runner import EpisodeResult
from schedgym.train.stats import fmt_ci, fmt_seeds, mean_ci
from schedgym.train.store import RunStore
from schedgym.train.summary import load
from schedgym.train.sweep import plan, run_sweep

#: Metrics read from the episode result itself rather than from the env's ``episode_metrics``.
RESULT_METRICS = ("decision_time", "wall_time")




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


def run_experiment(cfg: dict[str, Any], seeds: list[int], overrides: dict[str, Any],
                   workers: int | None, show_progress: bool,
                   instance_seeds: list[int] | None = None, store: RunStore | None = None,
                   ray: str | None = None
                   ) -> tuple[list[dict[str, Any]], dict[str, list[EpisodeResult]]]:
    """Run every setting into ``store`` (default: a temporary one); returns (rows,
    ``{setting name: results}``). A failing episode raises ``RuntimeError`` when no store is
    given (with a store it is recorded and left out of the rows)."""
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
