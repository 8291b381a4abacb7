"""The sweep engine shared by ``schedgym compare`` and ``schedgym reproduce``.

A run is described by its :class:`~schedgym.train.runspec.RunSpec` (written to the run
folder's ``meta.json``): the env, the agents, the episode seeds, the instance seeds and a list
of *settings* (one for ``compare``; one per swept value for ``reproduce``), each with its env
overrides. :func:`~schedgym.train.tasks.plan` turns it into
:class:`~schedgym.train.tasks.EpisodeTask` s, :func:`run_sweep` runs the ones not yet in the
store (so ``--resume`` runs only what is missing) and appends each outcome to the store the
moment it ends. Ctrl-C stops the workers, keeps every finished episode and reports how to
resume; failing episodes are recorded and counted.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedgym.train.backend import error_outcome, execute, run_calls
from schedgym.train.store import RunStore
from schedgym.train.tasks import BENCHMARK, EpisodeTask, plan, tuples

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "SweepOutcome", "finish_message", "plan",
           "run_sweep", "tuples"]

#: exit status of an interrupted run (the shell's convention for SIGINT)
EXIT_INTERRUPTED = 130
#: exit status of a run in which some episodes failed
EXIT_FAILED = 1


@dataclass
class SweepOutcome:
    """What a :func:`run_sweep` call did: tasks run now, skipped (already in the store),
    failed (their error records) and whether Ctrl-C stopped it."""

    ran: int = 0
    skipped: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False
    #: agents' episodes finished now, of ``episodes_todo`` to play (what the progress bar
    #: counts: the offline benchmark tasks are no episode of an agent)
    episodes_done: int = 0
    episodes_todo: int = 0


def run_sweep(store: RunStore, tasks: list[EpisodeTask], workers: int | None = None,
              ray: str | None = None, show_progress: bool = True, desc: str = "") -> SweepOutcome:
    """Run the tasks missing from ``store`` and append each outcome at once. Never raises on
    Ctrl-C: the outcome says it was interrupted (the store holds everything finished)."""
    done = store.done()
    todo = [t for t in tasks if t.key not in done]
    out = SweepOutcome(skipped=len(tasks) - len(todo),
                       episodes_todo=sum(t.agent != BENCHMARK for t in todo))
    # the bar counts agents' episodes only (benchmark tasks are no episode of an agent)
    bar = _progress(out.episodes_todo, show_progress, desc)

    def on_done(task: EpisodeTask, res: Any, exc: BaseException | None) -> None:
        if exc is not None:
            res = error_outcome(task, exc)
        store.add(res["record"], res.get("curve"), res.get("steps"))
        out.ran += 1
        if res["record"]["status"] != "ok":
            out.failed.append(res["record"])
        if task.agent != BENCHMARK:
            out.episodes_done += 1
            bar.update(1)

    try:
        run_calls(execute, todo, on_done, workers, ray)
    except KeyboardInterrupt:
        out.interrupted = True
    finally:
        bar.close()
    return out


def interrupted_line(store: RunStore, out: SweepOutcome) -> str:
    """``interrupted: 7 of 24 episodes finished (...)``: the agents' episodes as the progress bar
    counts them (this invocation's, of those it had to play), then what the run folder keeps in
    all, offline benchmarks included."""
    tasks = plan(store.spec)
    done = store.done()
    episodes = [t for t in tasks if t.agent != BENCHMARK]
    kept = sum(t.key in done for t in episodes)
    benches = [t for t in tasks if t.agent == BENCHMARK]
    text = f"interrupted: {out.episodes_done} of {out.episodes_todo} episodes finished"
    rest = [f"{kept} of {len(episodes)} episodes of the run"] if kept != out.episodes_done or \
        len(episodes) != out.episodes_todo else []
    if benches:
        rest.append(f"{sum(t.key in done for t in benches)} of {len(benches)} offline "
                    "benchmarks")
    return text + (f" ({', '.join(rest)})" if rest else "") + f", kept in {store.path}"


def finish_message(command: str, store: RunStore, out: SweepOutcome) -> int:
    """Print the end-of-run summary to stderr (interrupt: the resume command; failures: one
    line each); returns the exit status (0, :data:`EXIT_FAILED`, :data:`EXIT_INTERRUPTED`)."""
    total = len(plan(store.spec))
    if out.interrupted:
        print(f"\n{interrupted_line(store, out)}\n"
              f"resume with: schedgym {command} --resume {store.path}", file=sys.stderr)
        return EXIT_INTERRUPTED
    # an agent declining this size (NotComputed) is no failure: the report says it is not
    # computed, once per agent (summary.not_computed_lines)
    failed = [rec for rec in out.failed if not rec.get("not_computed")]
    if failed:
        print(f"{len(failed)} of {total} tasks failed (recorded in "
              f"{Path(store.path) / 'episodes.jsonl'}; the table leaves them out):",
              file=sys.stderr)
        for rec in failed[:20]:
            setting, agent, inst, seed = rec["key"]
            where = f"{setting}: " if setting else ""
            print(f"  {where}{agent} instance_seed={inst} seed={seed}: {rec['error']}",
                  file=sys.stderr)
        if len(failed) > 20:
            print(f"  ... and {len(failed) - 20} more", file=sys.stderr)
        print(f"retry the failed ones with: schedgym {command} --resume {store.path}",
              file=sys.stderr)
        return EXIT_FAILED
    return 0


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, show: bool, desc: str) -> Any:
    if not show or not total:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="episode", smoothing=0.1, mininterval=1.0)
