"""A compare run's results as a table, files and plots, rebuilt from its store.

:func:`load` reads the finished episodes of a run folder, :func:`summarise` turns them into one
row per agent (means with 95% CIs, ratios to the reference and the ceiling, gaps to the offline
benchmarks), :func:`print_table` prints the key columns, :func:`write_outputs` writes
``episodes.csv``, ``summary.csv``, ``summary.json`` and ``curves.npz``, and
:func:`report_compare` does all of it (with the plots, :mod:`schedgym.train.plots`). ``compare``
calls it at its end and ``schedgym report`` at any time, so a resumed run's table is an
uninterrupted run's. How the ratios run and what the reference and the ceiling are: the
``schedgym report`` help (:mod:`schedgym.train.report`).
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from schedgym.agents.registry import is_benchmark
from schedgym.agents.spec import AgentSpec
from schedgym.train.runner import EpisodeResult
from schedgym.train.runspec import RunSpec
from schedgym.train.stats import fmt_ci, fmt_seeds, mean_ci
from schedgym.train.store import RunStore, write_atomic
from schedgym.train.tasks import BENCHMARK

#: agents that are an env's online ceiling (the exact per-step optimum)
CEILING_AGENTS = ("myopic-opt",)
#: offline benchmark name -> its label, for the envs whose benchmark is the online ceiling
CEILING_BENCHMARKS = {"oracle": "oracle", "optimum": "OPT"}


def load(store: RunStore, setting: str | None = None
         ) -> tuple[list[EpisodeResult], dict[tuple[int, int], dict[str, float]]]:
    """The ``ok`` episode results (as :class:`EpisodeResult`, curves loaded) and the offline
    benchmark values keyed by ``(instance_seed, seed)``, of one setting (default: all)."""
    results: list[EpisodeResult] = []
    bench: dict[tuple[int, int], dict[str, float]] = {}
    for rec in store.records():
        sett, agent, inst, seed = rec["key"]
        if rec.get("status") != "ok" or (setting is not None and sett != setting):
            continue
        if agent == BENCHMARK:
            bench[(inst, seed)] = dict(rec["metrics"])
            continue
        results.append(EpisodeResult(agent, seed, int(rec["steps"]), dict(rec["metrics"]),
                                     store.curve(rec), rec["decision_ms"] / 1e3,
                                     rec["wall_s"], instance_seed=inst))
    order = {a: i for i, a in enumerate(store.spec.agents)}
    results.sort(key=lambda r: (order.get(r.agent, len(order)), r.instance_seed, r.seed))
    return results, bench


def not_computed(store: RunStore) -> dict[str, dict[str, Any]]:
    """The reference values the run did not compute at its size, by label (``OPT``,
    ``myopic-opt``, ...): ``{"reason": first reason, "episodes": how many, "of": episodes in
    the run, "reasons": every distinct reason, "kind": "benchmark" or "agent"}``, from the
    offline benchmark records (``not_computed``) and the agents' records refused with
    :class:`~schedgym.core.limits.NotComputed`."""
    out: dict[str, dict[str, Any]] = {}
    n_episodes = len(store.spec.instance_seeds) * len(store.spec.seeds) * len(
        store.spec.settings)

    def add(label: str, reason: str, kind: str) -> None:
        entry = out.setdefault(label, {"reason": reason, "episodes": 0, "of": n_episodes,
                                       "reasons": [], "kind": kind})
        entry["episodes"] += 1
        if reason not in entry["reasons"]:
            entry["reasons"].append(reason)

    for rec in store.records():
        agent = rec["key"][1]
        if agent == BENCHMARK and rec.get("status") == "ok":
            for name, reason in (rec.get("not_computed") or {}).items():
                add(CEILING_BENCHMARKS.get(name, name), str(reason), "benchmark")
        elif rec.get("status") == "error" and rec.get("not_computed"):
            add(agent, str(rec.get("error", "")), "agent")
    return out


def not_computed_lines(skipped: dict[str, dict[str, Any]]) -> list[str]:
    """One line per value of :func:`not_computed`: ``OPT: not computed (3 of 3 episodes):
    REASON``; an agent that declined: ``esdp: not played (...)``."""
    lines = []
    for label, e in skipped.items():
        more = len(e["reasons"]) - 1
        what = "not played" if e["kind"] == "agent" else "not computed"
        lines.append(f"{label}: {what} ({e['episodes']} of {e['of']} episodes): "
                     f"{e['reason']}" + (f" (and {more} other reasons in summary.json)"
                                         if more else ""))
    return lines


def _base(spec: str) -> str:
    return AgentSpec.parse(spec).key


def ceiling_of(agents: Sequence[str], bench_names: Sequence[str]) -> tuple[str, str] | None:
    """``("agent", spec)`` or ``("benchmark", name)`` of the run's ceiling, or ``None``."""
    for a in agents:
        if _base(a) in CEILING_AGENTS:
            return "agent", a
    for b in CEILING_BENCHMARKS:
        if b in bench_names:
            return "benchmark", b
    return None


def best_reference(results: Sequence[EpisodeResult], reference: str | None = None) -> str:
    """``reference`` if given (must be in the run), else the best classical agent."""
    agents = list(dict.fromkeys(r.agent for r in results))
    if reference is not None:
        if reference not in agents:
            raise ValueError(f"reference={reference!r} is invalid: must be one of the agents "
                             f"with results: {', '.join(agents)}")
        return reference
    pool = [a for a in agents if not AgentSpec.parse(a).is_learned and not is_benchmark(a)
            and _base(a) not in CEILING_AGENTS] or agents
    return max(pool, key=lambda a: np.mean([r.metrics["reward"] for r in results
                                            if r.agent == a]))


def _ratio_stats(pairs: Sequence[tuple[int, float]], prefix: str) -> dict[str, float]:
    """Mean ± CI over episodes, and min/max of the per-instance means, of ``(instance, ratio)``
    pairs; keys ``prefix``, ``prefix_ci``, ``prefix_min``, ``prefix_max``, ``prefix_inst_ci``."""
    vals = [v for _, v in pairs]
    m, h = mean_ci(vals)
    per_inst: dict[int, list[float]] = {}
    for i, v in pairs:
        per_inst.setdefault(i, []).append(v)
    means = [float(np.mean(v)) for v in per_inst.values()]
    _, hi = mean_ci(means)
    return {prefix: m, prefix + "_ci": h,
            prefix + "_min": min(means) if means else float("nan"),
            prefix + "_max": max(means) if means else float("nan"), prefix + "_inst_ci": hi}


def summarise(results: Sequence[EpisodeResult], bench: dict[tuple[int, int], dict[str, float]],
              reference: str | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One row per agent (means ± 95% CI over every (instance seed, seed) episode, ratios to the
    reference and the ceiling with their spread over instances, gaps to each offline
    benchmark) and a legend ``{"reference", "ceiling", "instances", "columns"}``."""
    agents = list(dict.fromkeys(r.agent for r in results))
    ref = best_reference(results, reference)
    bench_names = sorted({k for b in bench.values() for k in b})
    ceil = ceiling_of(agents, bench_names)
    by = {(r.agent, r.instance_seed, r.seed): r.metrics["reward"] for r in results}

    def ceiling(r: EpisodeResult) -> float | None:
        if ceil is None:
            return None
        if ceil[0] == "agent":
            return by.get((ceil[1], r.instance_seed, r.seed))
        return bench.get((r.instance_seed, r.seed), {}).get(ceil[1])

    rows = []
    for a in agents:
        rs = [r for r in results if r.agent == a]
        row: dict[str, Any] = {"agent": a, "episodes": len(rs),
                               "instances": len({r.instance_seed for r in rs})}
        for m in rs[0].metrics:
            row[m], row[m + "_ci"] = mean_ci([r.metrics[m] for r in rs])
        pairs = [(r.instance_seed, r.metrics["reward"] / by[(ref, r.instance_seed, r.seed)])
                 for r in rs if by.get((ref, r.instance_seed, r.seed), 0) != 0]
        row.update(_ratio_stats(pairs, "ratio_to_ref"))
        if ceil is not None:
            cs = [(r, ceiling(r)) for r in rs]
            row.update(_ratio_stats([(r.instance_seed, r.metrics["reward"] / c)
                                     for r, c in cs if c is not None and c > 0],
                                    "ratio_to_ceiling"))
            row["ceiling_gap"], row["ceiling_gap_ci"] = mean_ci(
                [c - r.metrics["reward"] for r, c in cs if c is not None])
        for name in bench_names:
            got = [(r, bench[(r.instance_seed, r.seed)][name]) for r in rs
                   if name in bench.get((r.instance_seed, r.seed), {})]
            row[f"{name}_gap"], row[f"{name}_gap_ci"] = mean_ci([b - r.metrics["reward"]
                                                                 for r, b in got])
            row[f"{name}_ratio"], row[f"{name}_ratio_ci"] = mean_ci(
                [r.metrics["reward"] / b for r, b in got if b > 0])
        row["decision_ms"] = 1e3 * float(np.mean([r.decision_time for r in rs]))
        rows.append(row)
    ceil_label = None if ceil is None else (ceil[1] if ceil[0] == "agent"
                                            else CEILING_BENCHMARKS[ceil[1]])
    legend = {"reference": ref, "ceiling": ceil_label,
              "instances": sorted({r.instance_seed for r in results}),
              "columns": column_legend(ref, ceil_label, bench_names),
              "metrics": {k: v for k, v in METRIC_NOTES.items() if k in results[0].metrics}}
    return rows, legend


def column_legend(ref: str, ceil: str | None, bench_names: Sequence[str]) -> dict[str, str]:
    """Displayed column name -> what it is (the table's footnotes)."""
    cols = {"cum. reward": "return of the episode (sum of rewards)",
            "avg reward/step": "return / episode length",
            f"agent/{ref}": f"per-episode ratio of returns, agent / {ref} (the reference: best "
                            "classical agent unless --reference); > 1 = better than it"}
    if ceil is not None:
        cols[f"agent/{ceil}"] = (f"per-episode ratio of returns, agent / {ceil} (the ceiling "
                                 "of online policies); 1 = optimal")
        cols[f"{ceil} - agent"] = f"per-episode {ceil} return minus the agent's"
    for b in bench_names:
        what = BENCHMARK_LABELS.get(b, f"offline benchmark {b}")
        cols[f"{b}_gap (files)"] = f"{what} minus the return, per episode"
        cols[f"{b}_ratio (files)"] = (f"return / {b}, agent / benchmark like every ratio here "
                                      "(the competitive ratio OPT/ALG is its inverse)")
    cols["ms/decision"] = "mean wall-clock ms per agent.predict call"
    return cols


#: what an offline benchmark is, where its name alone misleads (``hindsight_optimum`` is the
#: best FIXED allocation in hindsight, which an online agent adapting slot by slot can beat)
BENCHMARK_LABELS = {
    "hindsight_optimum": "best fixed allocation in hindsight (the regret benchmark; an online "
                         "agent can beat it, giving a negative gap)",
    "oracle": "oracle's realised return (knows the hidden means)",
    "optimum": "offline optimum OPT (knows every job in advance)",
}

#: metrics whose name invites a wrong reading, explained in ``summary.json``'s legend
METRIC_NOTES = {
    "oracle_value": "sum over slots of the oracle's EXPECTED value theta^T x*(t) (the "
                    "pseudo-regret's reference); the realised oracle return is the benchmark "
                    "'oracle', so oracle_value - reward differs from oracle_gap",
    "pseudo_regret": "oracle_value - expected_reward, summed over slots",
    "realised_regret": "oracle's realised return minus the agent's (= oracle_gap)",
}


def _display(rows: list[dict[str, Any]], legend: dict[str, Any]) -> list[tuple[str, str]]:
    """(row key, displayed name) of the terminal's key columns."""
    ref, ceil = legend["reference"], legend["ceiling"]
    cols = [("reward", "cum. reward"), ("avg_reward", "avg reward/step"),
            ("ratio_to_ref", f"agent/{ref}")]
    if ceil is not None:
        cols += [("ratio_to_ceiling", f"agent/{ceil}"), ("ceiling_gap", f"{ceil} - agent")]
    return cols


#: Table width when stdout is not a terminal (no wrapping; rich does not pad to it).
PIPE_WIDTH = 1000


def display_names(agents: Sequence[str]) -> dict[str, str]:
    """Each agent's label in the printed table: a learned ``ALGO:path/to/run/model.zip[opts]``
    as ``ALGO:…/run/model.zip[opts]`` (its folder and file; the full path stays in the files;
    :meth:`~schedgym.agents.spec.AgentSpec.short_label`), unless two agents would then read the
    same; every other agent as it is."""
    short = {a: AgentSpec.parse(a).short_label() for a in agents}
    clash = {v for v in short.values() if list(short.values()).count(v) > 1}
    return {a: (a if v in clash else v) + _play_note(a) for a, v in short.items()}


def _play_note(agent: str) -> str:
    """`` (plays its draws)`` / `` (plays its mode)`` after a learned agent whose spec does not
    say ``deterministic=``: the play recorded at training, which ``compare`` follows."""
    from schedgym.agents.record import learned_play

    spec = AgentSpec.parse(agent)
    if (not spec.is_learned or spec.path is None or not Path(spec.path).is_file()
            or spec.learned_options()["deterministic"] is not None):
        return ""
    play = learned_play(spec)
    return {"sampled": " (plays its draws)", "mode": " (plays its mode)"}.get(play or "", "")


def print_table(rows: list[dict[str, Any]], legend: dict[str, Any], title: str,
                files: str = "", width: int | None = None) -> None:
    """The key columns as a table that fits the terminal (``width``: default its width; piped
    into a file or another program, which has no width, the table is never wrapped: a header
    folded mid-word would break ``grep``/``awk``); every column is in the files
    (``summary.csv``)."""
    import sys

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    if width is None:
        width = (shutil.get_terminal_size((100, 24)).columns if sys.stdout.isatty()
                 else PIPE_WIDTH)
    multi = len(legend["instances"]) > 1
    cols = _display(rows, legend)
    table = Table(title=escape(title), show_lines=False)
    table.add_column("agent", style="bold", overflow="fold")
    for _, name in cols:
        table.add_column(escape(name), justify="right", overflow="fold")
    if multi:
        table.add_column("over instances min..max", justify="right", overflow="fold")
    table.add_column("ms/decision", justify="right", overflow="fold")
    label = display_names([row["agent"] for row in rows])
    for row in rows:
        cells = [fmt_ci(row.get(k, float("nan")), row.get(k + "_ci", float("nan")), 3)
                 for k, _ in cols]
        if multi:
            cells.append(f"{row['ratio_to_ref_min']:.3f}..{row['ratio_to_ref_max']:.3f}")
        table.add_row(escape(label[row["agent"]]), *cells, f"{row['decision_ms']:.3g}")
    Console(width=width, soft_wrap=False).print(table)
    n_inst = len(legend["instances"])
    print(f"mean ± 95% CI (Student t) over {rows[0]['episodes']} episodes"
          + (f" ({n_inst} instance seeds x seeds)" if multi else "") + ". Ratios are agent / "
          f"reference: agent/{legend['reference']} (best classical agent unless --reference)"
          + (f", agent/{legend['ceiling']} (the ceiling)" if legend["ceiling"] else "")
          + (f"; 'over instances' = min..max of the per-instance mean of agent/"
             f"{legend['reference']}" if multi else "")
          + (f". Full table: {files}" if files else "."))


def write_outputs(out: Path, results: Sequence[EpisodeResult], rows: list[dict[str, Any]],
                  bench: dict[tuple[int, int], dict[str, float]], spec: RunSpec,
                  legend: dict[str, Any]) -> list[str]:
    """``episodes.csv``, ``summary.csv``, ``summary.json`` (with the run's ``meta.json`` as
    ``"meta"``), ``curves.npz`` into ``out``, each whole or not at all (a full disk leaves no
    partial file; ``schedgym report`` writes them again from the store)."""
    metric_names = list(results[0].metrics)
    bench_names = sorted({k for b in bench.values() for k in b})
    episodes = io.StringIO(newline="")
    w = csv.writer(episodes)
    w.writerow(["agent", "instance_seed", "seed", "steps", *metric_names, *bench_names,
                "decision_ms", "wall_s"])
    for r in results:
        b = bench.get((r.instance_seed, r.seed), {})
        w.writerow([r.agent, r.instance_seed, r.seed, r.steps,
                    *[r.metrics.get(m, "") for m in metric_names],
                    *[b.get(n, "") for n in bench_names], 1e3 * r.decision_time, r.wall_time])
    summary = io.StringIO(newline="")
    dw = csv.DictWriter(summary, fieldnames=list(dict.fromkeys(k for row in rows for k in row)))
    dw.writeheader()
    dw.writerows(rows)
    bench_json = {f"{i}|{s}": v for (i, s), v in sorted(bench.items())}
    summary_json = json.dumps(
        {"meta": spec.to_json(), "legend": legend, "summary": rows, "benchmarks": bench_json},
        indent=2, default=str)
    curves = {f"{r.agent}|{r.instance_seed}|{r.seed}": r.curve for r in results}
    write_atomic(out / "episodes.csv", lambda fh: fh.write(episodes.getvalue().encode()))
    write_atomic(out / "summary.csv", lambda fh: fh.write(summary.getvalue().encode()))
    write_atomic(out / "summary.json", lambda fh: fh.write(summary_json.encode()))
    write_atomic(out / "curves.npz",
                 lambda fh: np.savez_compressed(fh, **curves))  # type: ignore[arg-type]
    return ["episodes.csv", "summary.csv", "summary.json", "curves.npz"]


def compare_title(spec: RunSpec) -> str:
    """``schedgym/GainOverhead-v0, scenario paper-default, instance seeds 0, seeds 0-2, ...``"""
    ov = "".join(f", {k}={v}" for k, v in spec.overrides.items())
    return (f"{spec.env_id}, scenario {spec.scenario or 'paper-default'}, "
            f"instance seeds {fmt_seeds(spec.instance_seeds)}, seeds "
            f"{fmt_seeds(spec.seeds)}{ov}")


def report_compare(store: RunStore, plots: bool = True, quiet: bool = False,
                   width: int | None = None, out: Path | None = None) -> list[dict[str, Any]]:
    """Rebuild a compare run's table, files and plots from its store into ``out`` (default: the
    run folder); returns the rows."""
    spec, out = store.spec, out or store.path
    results, bench = load(store)
    if not results:
        print(f"{store.path}: no finished episode yet")
        return []
    rows, legend = summarise(results, bench, spec.reference)
    skipped = not_computed(store)
    if skipped:
        legend["not_computed"] = skipped
    files = write_outputs(out, results, rows, bench, spec, legend)
    if not quiet:
        print_table(rows, legend, compare_title(spec), f"{out}/summary.csv", width)
        for line in not_computed_lines(skipped):
            print(line)
    if plots:
        from schedgym.train.plots import curves_from_results, plot_curves

        paths = plot_curves(curves_from_results(results), out, compare_title(spec),
                            reference=spec.reference)
        files += [p.name for p in paths]
    if not quiet:
        print(f"wrote {out}/: " + ", ".join(files))
    return rows
