"""Where the tasks of a sweep run: in this process, a local process pool, or Ray.

One *task* is one episode of one agent (or the offline benchmark of one episode) on one
``(instance_seed, seed)``: :class:`~schedgym.train.tasks.EpisodeTask`. :func:`execute` plays
it and returns an *outcome* (a record for the :mod:`~schedgym.train.store`, plus the episode's
curve); it never raises, so a failing episode is a record with ``status="error"`` and the sweep
goes on.

:func:`run_calls` maps any picklable function over a list of jobs with one of three backends:

- ``workers <= 1`` and no Ray: in this process, one after another;
- a local ``spawn`` process pool of ``workers`` processes (workers ignore SIGINT; on Ctrl-C
  the main process terminates them, so the run stops within about a second rather than after
  the running episodes end);
- Ray (``ray=""`` starts a local Ray with ``workers`` CPUs; ``ray="auto"`` or
  ``"HOST:PORT"`` joins a cluster started with ``ray start --head``): every job is a Ray task
  (``max_retries=0``: a failure is reported, not retried); a task that dies (worker crash) is
  reported through ``on_done`` as an exception like any other.

Results do not depend on the backend: every task builds its own env and agent from its
arguments and seeds (common random numbers), so the same task gives the same record anywhere.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from schedgym.agents.record import PLAY_KEYS
from schedgym.agents.spec import is_learned
from schedgym.train.tasks import BENCHMARK, EpisodeTask, task_config

__all__ = ["PLAY_KEYS", "EpisodeTask", "WorkerDiedError", "error_outcome", "execute",
           "import_ray", "run_calls", "task_config"]

OnDone = Callable[[Any, Any, BaseException | None], None]


def error_outcome(task: EpisodeTask, exc: BaseException) -> dict[str, Any]:
    """The outcome of a task that failed with ``exc`` (one-line error text; an agent that
    declines this size, :class:`~schedgym.core.limits.NotComputed`, is marked
    ``"not_computed": true`` so the run reports it as not computed rather than as a bug)."""
    from schedgym.core.limits import NotComputed

    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    rec = {"key": list(task.key), "status": "error", "error": text[0] if text
           else type(exc).__name__, **task_config(task)}
    if isinstance(exc, NotComputed):
        rec.update(error=exc.reason, not_computed=True)
    return {"record": rec}


def execute(task: EpisodeTask) -> dict[str, Any]:
    """Play one task; returns ``{"record": ..., "curve": array | None, "steps": ...}``.
    Exceptions become an error outcome (with the traceback's last lines in ``"trace"``)."""
    try:
        if task.agent == BENCHMARK:
            return _benchmark(task)
        return _episode(task)
    except Exception as exc:  # noqa: BLE001 - every failure is recorded, the sweep goes on
        out = error_outcome(task, exc)
        out["record"]["trace"] = traceback.format_exc(limit=-3)
        return out


def _benchmark(task: EpisodeTask) -> dict[str, Any]:
    from schedgym import offline
    from schedgym.train.runner import make_env

    t0 = time.perf_counter()
    env = make_env(task.env_id, task.scenario, task.instance_seed, task.overrides)
    env.reset(seed=task.seed)
    skipped: dict[str, str] = {}
    try:
        values = offline.episode_benchmarks(env)
    except offline.NotComputed as exc:  # beyond the solver's sizes: said, not an error
        values, skipped = {}, {exc.benchmark or "benchmark": exc.reason}
    finally:
        env.close()
    rec = {"key": list(task.key), "status": "ok", "metrics": values,
           "wall_s": time.perf_counter() - t0, **task_config(task),
           **({"not_computed": skipped} if skipped else {})}
    return {"record": rec}


def _episode(task: EpisodeTask) -> dict[str, Any]:
    from schedgym.train.runner import build_agent, make_env, run_episode

    if is_learned(task.agent):
        import torch

        torch.set_num_threads(1)  # one small network per worker process
    env = make_env(task.env_id, task.scenario, task.instance_seed, task.overrides,
                   **task.env_kwargs)
    agent = build_agent(task.agent, env)
    rec_steps = None
    if task.record_steps:
        from schedgym.train.tensorboard import StepRecorder, metric_spec

        rec_steps = StepRecorder(metric_spec(env))
    res = run_episode(env, agent, task.seed, label=task.agent, step_callback=rec_steps)
    env.close()
    record = {"key": list(task.key), "status": "ok", "steps": res.steps,
              "metrics": res.metrics, "decision_ms": 1e3 * res.decision_time,
              "wall_s": res.wall_time, **task_config(task)}
    steps = None
    if rec_steps is not None:
        names = sorted({k for s in rec_steps.steps for k in s})
        steps = {k: np.array([s.get(k, np.nan) for s in rec_steps.steps]) for k in names}
    return {"record": record, "curve": res.curve, "steps": steps}


# -- backends --------------------------------------------------------------------------------
class WorkerDiedError(RuntimeError):
    """A task's worker process died while it ran the task (killed, out of memory, a crash in
    native code): the task is recorded as failed, the others go on."""


#: in a pool worker: ``started[i] = 1`` when job ``i`` begins (shared memory, see _run_pool)
_STARTED: Any = None
#: seconds between two looks at the parent process where Linux's parent-death signal is missing
PARENT_POLL_S = 0.5


def die_with_parent(parent: int) -> None:
    """End this process (``SIGKILL``) as soon as process ``parent`` dies, so that a ``kill
    -9`` of the command leaves no worker behind: Linux's ``PR_SET_PDEATHSIG`` (through libc's
    ``prctl``), else a daemon thread that polls ``os.getppid()`` every
    :data:`PARENT_POLL_S` seconds. Exits at once if ``parent`` is already gone."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            pr_set_pdeathsig = 1
            if libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) == 0:
                if os.getppid() != parent:  # it died before the signal was armed
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True,
                     name="schedgym-parent-watch").start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def _worker_init(started: Any = None, parent: int | None = None,
                 ignore_sigint: bool = True) -> None:
    """Pool worker setup: die with the parent process, mark the jobs it starts in
    ``started``, and ignore Ctrl-C (the main process decides and terminates the workers)
    unless the jobs save their work on Ctrl-C themselves (``ignore_sigint=False``)."""
    global _STARTED
    _STARTED = started
    if parent is not None:
        die_with_parent(parent)
    if ignore_sigint:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _tracked(fn: Callable[[Any], Any], index: int, job: Any) -> Any:
    """``fn(job)`` in a pool worker, after marking job ``index`` as started."""
    if _STARTED is not None:
        _STARTED[index] = 1
    return fn(job)


def run_calls(fn: Callable[[Any], Any], jobs: Sequence[Any], on_done: OnDone,
              workers: int | None = None, ray: str | None = None, grace: float = 0.0) -> None:
    """Call ``fn(job)`` for every job; ``on_done(job, result, exc)`` in this process as each
    ends (``exc`` set if it raised or its worker died). ``ray``: ``None`` = no Ray, ``""`` =
    a local Ray, ``"auto"``/``"HOST:PORT"`` = a cluster. Ctrl-C (``KeyboardInterrupt``) stops
    the workers and propagates. ``grace`` (seconds, > 0 for jobs that save their work on
    Ctrl-C, e.g. training): workers receive the interrupt too and get that long to return
    before they are terminated; their results still reach ``on_done``."""
    if not jobs:
        return
    if ray is not None:
        _run_ray(fn, jobs, on_done, workers, ray, grace)
        return
    workers = workers or min(os.cpu_count() or 1, len(jobs))
    if workers <= 1:
        for job in jobs:
            try:
                res = fn(job)
            except Exception as exc:  # noqa: BLE001
                on_done(job, None, exc)
            else:
                on_done(job, res, None)
        return
    _run_pool(fn, jobs, on_done, workers, grace)


def _run_pool(fn: Callable[[Any], Any], jobs: Sequence[Any], on_done: OnDone,
              workers: int, grace: float = 0.0) -> None:
    """A ``spawn`` process pool whose workers die with this process. A worker that dies
    breaks the pool (``BrokenProcessPool`` for every unfinished job): the jobs it had not
    started go on in a new pool; each job that had started runs once more alone, in a
    one-worker pool, and if its worker dies again it alone is reported, as a
    :class:`WorkerDiedError`."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    started = ctx.RawArray("b", len(jobs))
    todo = list(range(len(jobs)))
    stalls = 0
    while todo:
        suspects, rest = _pool_round(ctx, started, fn, jobs, todo, on_done, workers, grace,
                                     alone=False)
        stalls = stalls + 1 if not suspects and len(rest) == len(todo) else 0
        if stalls >= 3:  # the workers die before any job starts (e.g. in their start-up)
            for i in rest:
                on_done(jobs[i], None, WorkerDiedError(
                    "the pool's worker processes died before starting this task, 3 times"))
            return
        for i in suspects:  # a worker that died before starting it: back to the others
            started[i] = 0
            rest += _pool_round(ctx, started, fn, jobs, [i], on_done, 1, grace, alone=True)[1]
        todo = sorted(rest)


def _died_text(codes: list[int | None]) -> str:
    code = next((c for c in codes if c), None)
    how = ("" if code is None else f" (killed by signal {-code})" if code < 0
           else f" (exit status {code})")
    return (f"its worker process died{how} while running this task, twice (the second time "
            "alone); the other tasks went on")


def _pool_round(ctx: Any, started: Any, fn: Callable[[Any], Any], jobs: Sequence[Any],
                indices: list[int], on_done: OnDone, workers: int, grace: float, alone: bool
                ) -> tuple[list[int], list[int]]:
    """Run ``jobs[i]`` for ``i`` in ``indices`` in one pool. Returns, if a worker died,
    ``(started, not started)`` of the jobs the broken pool did not finish, else ``([], [])``.
    ``alone``: the second run of one job, alone in its pool; if its worker dies, the job is
    reported as failed (:class:`WorkerDiedError`) instead."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(max_workers=min(workers, len(indices)), mp_context=ctx,
                               initializer=_worker_init,
                               initargs=(started, os.getpid(), grace <= 0))
    futs: dict[Any, int] = {}
    procs: dict[Any, Any] = {}
    broken: list[int] = []
    try:
        for i in indices:
            futs[pool.submit(_tracked, fn, i, jobs[i])] = i
        procs = dict(getattr(pool, "_processes", None) or {})
        pending = set(futs)
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for f in done:
                exc = f.exception()
                if isinstance(exc, BrokenProcessPool):
                    broken.append(futs[f])
                    continue
                on_done(jobs[futs[f]], None if exc else f.result(), exc)
    except BaseException:
        # Ctrl-C (or a failing callback): stop now, do not wait for running episodes (or,
        # with a grace period, let the running jobs save and return first).
        if grace > 0:
            _collect({f: jobs[i] for f, i in futs.items()}, on_done, grace)
        procs = dict(getattr(pool, "_processes", None) or procs)
        for p in procs.values():
            p.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        for p in procs.values():
            p.join(timeout=2)
        raise
    pool.shutdown(wait=True)
    if not broken:
        return [], []
    broken.sort()
    begun = [i for i in broken if started[i]]
    rest = [i for i in broken if not started[i]]
    if alone and begun:
        on_done(jobs[begun[0]], None,
                WorkerDiedError(_died_text([p.exitcode for p in procs.values()])))
        return [], rest
    return begun, rest


def _collect(futs: dict[Any, Any], on_done: OnDone, grace: float) -> None:
    """After Ctrl-C: report the jobs that return within ``grace`` seconds."""
    from concurrent.futures import wait

    for f in futs:
        f.cancel()
    running = [f for f in futs if not f.cancelled() and not f.done()]
    done, _ = wait(running, timeout=grace)
    for f in done:
        exc = f.exception()
        on_done(futs[f], None if exc else f.result(), exc)


def import_ray() -> Any:
    """The ``ray`` module; ``ValueError`` (one line at the command line) where Ray, an
    optional extra, is not installed."""
    try:
        import ray
    except ModuleNotFoundError as exc:
        if exc.name != "ray":
            raise
        raise ValueError("--ray is invalid here: Ray is not installed (an optional extra: "
                         "pip install 'schedgym[ray]'); run without --ray for a local process "
                         "pool") from None
    return ray


def private_token_file() -> list[str]:
    """Make the token file of a Ray that this process starts readable by its owner only.

    A new local Ray turns token authentication on and writes its token to
    ``~/.ray/auth_token`` (or ``$RAY_AUTH_TOKEN_PATH``) with the process's umask, usually
    0644, and whoever reads the token can run code on the cluster. Called before
    ``ray.init`` (``~/.ray`` is created 0700 where missing, so a new token is never readable
    by others) and after it (an existing file of ours gets 0600). Returns the files changed."""
    home = os.path.join(os.path.expanduser("~"), ".ray")
    if not os.path.exists(home):
        os.makedirs(home, mode=0o700, exist_ok=True)
    changed = []
    for path in {os.path.join(home, "auth_token"), os.environ.get("RAY_AUTH_TOKEN_PATH", "")}:
        try:
            st = os.stat(path)
            if st.st_uid == os.getuid() and st.st_mode & 0o077:
                os.chmod(path, st.st_mode & 0o700)
                changed.append(path)
        except OSError:  # no such file (yet), or not ours to change
            continue
    return changed


def _run_ray(fn: Callable[[Any], Any], jobs: Sequence[Any], on_done: OnDone,
             workers: int | None, address: str, grace: float = 0.0) -> None:
    ray = import_ray()
    from schedgym.train import reaper

    started = False
    watchdog = None
    if not ray.is_initialized():
        if address:
            ray.init(address=address, log_to_driver=False)
        else:  # a local Ray: its processes must not outlive a kill -9 of this one
            watchdog = reaper.start()
            try:  # "local": a new Ray of our own, even where `ray start` left a cluster
                private_token_file()
                ray.init(address="local", num_cpus=workers or os.cpu_count() or 1,
                         include_dashboard=False, log_to_driver=False)
                private_token_file()
            except BaseException:
                if watchdog is not None:
                    watchdog.stop()
                raise
        started = True
    refs: dict[Any, Any] = {}
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(fn)
        refs = {remote.remote(job): job for job in jobs}
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1, timeout=0.5)
            for ref in ready:
                job = refs.pop(ref)
                try:
                    res = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a task failure is recorded
                    on_done(job, None, exc)
                else:
                    on_done(job, res, None)
    except BaseException:
        for ref in refs:  # force=False delivers a KeyboardInterrupt to the running task
            ray.cancel(ref, force=grace <= 0)
        if grace > 0:
            ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=grace)
            for ref in ready:
                try:
                    on_done(refs[ref], ray.get(ref), None)
                except Exception as exc:  # noqa: BLE001 - cancelled or failed: reported
                    on_done(refs[ref], None, exc)
        raise
    finally:
        if started:
            ray.shutdown()
        if watchdog is not None:
            watchdog.stop()
