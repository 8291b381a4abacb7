"""Several training runs at once, one per seed: ``schedgym train ... --seeds 0-4 [--ray]``.

Each seed's run is one job of :func:`schedgym.train.backend.run_calls`: a local process pool by
default (each run in its own process, one torch thread), or a Ray task with ``ray`` (``""``: a
local Ray; ``"auto"``/``"HOST:PORT"``: a cluster started with ``ray start --head``, see
``docs/sweeps.md``). A run does not depend on where it ran: it builds everything from its
:class:`~schedgym.train.train_config.TrainConfig` and seed. A failing run is reported and the
others go on; Ctrl-C reaches every run, which saves its files (``schedgym train``'s own Ctrl-C
handling) within a grace period before its worker is stopped.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from schedgym.train.backend import run_calls

#: seconds the runs get to save their files after Ctrl-C
GRACE_S = 60.0


def _train_job(job: tuple[int, Any]) -> str:
    """One seed's run (in a worker): its run folder."""
    from schedgym.train.trainer import run_one_seed

    return str(run_one_seed(job[1]))


def train_seeds(configs: Sequence[Any], ray: str | None = None,
                workers: int | None = None) -> list[Path]:
    """Train every ``TrainConfig`` of ``configs`` (one per seed); returns their run folders in
    the order given. Raises ``ValueError`` naming every failed seed and its error after the
    other runs have finished (their folders are complete)."""
    folders: dict[int, Path] = {}
    errors: list[str] = []

    def on_done(job: tuple[int, Any], res: Any, exc: BaseException | None) -> None:
        i, cfg = job
        if exc is None:
            folders[i] = Path(res)
        else:
            text = f"{type(exc).__name__}: {exc}".splitlines()[0]
            errors.append(f"seed {getattr(cfg, 'seed', i)}: {text}")

    jobs = list(enumerate(configs))
    run_calls(_train_job, jobs, on_done, workers, ray, grace=GRACE_S)
    if errors:
        done = ", ".join(str(folders[i]) for i in sorted(folders)) or "none"
        raise ValueError(f"{len(errors)} of {len(jobs)} training runs failed ("
                         + "; ".join(errors) + f"); finished runs: {done}")
    return [folders[i] for i in range(len(jobs))]
