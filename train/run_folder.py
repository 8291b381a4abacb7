"""A training run's folder: claimed for one run, never mixed with another, and continued only
by ``--resume``, after the checks that keep a resumed run consistent.

- :func:`claim_run_dir`: the folder ``OUT/<Env-vN>/NAME`` (or the first free ``NAME-2``,
  ``NAME-3``, ...), claimed atomically by a :data:`CLAIM` file so that concurrent runs never
  share one; ``overwrite`` clears one run's files first (:func:`clear_run`), ``resume`` goes
  on in the folder of the model it continues; :func:`release_unused_claim` gives the claim
  back when a run fails to start.
- Resume: :func:`check_resumed_evaluations` (the kind of evaluation must not change),
  :func:`evaluation_history` and :func:`read_evaluations` (the earlier ``evaluations.npz`` the
  resumed run appends to), :func:`keep_progress_log` (SB3's ``progress.csv`` of the earlier
  part is kept as ``progress.until-<steps>.csv``).
"""

from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass
from pathlib import Path

from schedgym.agents.record import RUN_RECORD, run_record
from schedgym.train.tensorboard import env_folder
from schedgym.train.train_config import TrainConfig, default_eval_draws

#: Marker file claiming a run folder for one run.
CLAIM = ".schedgym-run"
#: Files of a run folder that belong to one training run (removed by ``overwrite``).
RUN_FILES = (CLAIM, "model.zip", "best_model.zip", "evaluations.npz", "vecnormalize.pkl",
             "config.yml", RUN_RECORD, "progress.csv")
#: The evaluation history of a run folder (SB3's ``EvalCallback`` file).
EVALUATIONS = "evaluations.npz"


def run_folder_of(model_path: str | Path) -> Path:
    """The run folder a saved model belongs to (``.../run/checkpoints/x.zip`` -> ``.../run``)."""
    p = Path(model_path).resolve().parent
    return p.parent if p.name == "checkpoints" else p


def resolve_eval_draws(cfg: TrainConfig) -> TrainConfig:
    """``cfg`` with ``eval_draws`` decided: as given; else, on resume, the resumed run's own
    setting (its ``run.json``; a record that does not read back is left to
    :func:`check_resumed_evaluations` to refuse); else the env's default for the policy
    (:func:`~schedgym.train.train_config.default_eval_draws`)."""
    if cfg.eval_draws is not None:
        return cfg
    if cfg.resume is not None:
        record = run_record(run_folder_of(cfg.resume))
        before = record.get("eval_draws") if record is not None else None
        if isinstance(before, bool):
            return dataclasses.replace(cfg, eval_draws=before)
    return dataclasses.replace(cfg, eval_draws=default_eval_draws(cfg.env_id, cfg.policy))


def check_resumed_evaluations(cfg: TrainConfig) -> None:
    """Before anything in the run folder changes: the resumed run's ``evaluations.npz`` must
    read back (:func:`read_evaluations`, one line naming the file), and a resume must not
    change the kind of action its evaluations judged (``eval_draws``): the resumed run appends
    to its ``evaluations.npz``, keeps ``best_model.zip`` by the best of them all and records its
    own setting in ``run.json``, so the two kinds would be compared as one. A run folder with
    evaluations but no ``run.json`` (a run killed before it saved) has nothing to compare; a
    ``run.json`` that does not read back as a record, or whose ``eval_draws`` is not true or
    false, is refused (the check would be skipped silently)."""
    if cfg.resume is None:
        return
    folder = run_folder_of(cfg.resume)
    if read_evaluations(folder) is None:
        return  # no evaluations to append to
    meta = folder / RUN_RECORD
    if not meta.exists():
        return  # the run was stopped before it wrote its record
    record = run_record(folder)
    where = f"resume={cfg.resume!r} is refused: {meta}"
    if record is None:
        raise ValueError(f"{where} does not read back as a run record (damaged?), so the kind "
                         f"of action {EVALUATIONS} judged cannot be checked: restore it, or "
                         f"move {EVALUATIONS} away to start the evaluations afresh")
    before = record.get("eval_draws", False)
    if not isinstance(before, bool):
        raise ValueError(f"{where} has eval_draws={before!r}: must be true or false (restore "
                         f"the file, or move {EVALUATIONS} away)")
    if cfg.eval_draws is not None and before != cfg.eval_draws:  # None: the run's own
        kind = {True: "sampled actions (--eval-draws)", False: "the policy's mode"}
        raise ValueError(f"eval_draws={cfg.eval_draws} is invalid for resume={cfg.resume!r}: "
                         f"that run evaluated {kind[before]}, and best_model.zip is kept by "
                         f"the best of all its evaluations; resume with eval_draws={before}")


def claim_run_dir(cfg: TrainConfig) -> Path:
    """The run folder, created now. An existing non-empty folder is continued only by
    ``resume`` (of a model inside it or when ``name`` is given), replaced only with
    ``overwrite``, and otherwise left alone: the run goes to ``NAME-2``, ``NAME-3``, ..."""
    root = Path(cfg.out) / env_folder(cfg.env_id)
    base = root / cfg.run_name
    if cfg.resume is not None and (cfg.name is not None
                                   or run_folder_of(cfg.resume) == base.resolve()):
        base.mkdir(parents=True, exist_ok=True)
        return base
    if cfg.overwrite and base.is_dir():
        clear_run(base)
    for k in range(1, 10_000):
        cand = base if k == 1 else root / f"{cfg.run_name}-{k}"
        cand.mkdir(parents=True, exist_ok=True)
        if any(p.name != CLAIM for p in cand.iterdir()):
            continue  # holds another run
        try:
            (cand / CLAIM).open("x").close()  # atomic: concurrent runs never share a folder
        except FileExistsError:
            continue
        return cand
    raise ValueError(f"out={cfg.out!r}: too many runs named {cfg.run_name!r}; give --name")


def release_unused_claim(run_dir: Path) -> None:
    """Give back the claim on ``run_dir`` when nothing else was written there, so that a run
    that failed to start leaves a folder the next run of that name takes (a claimed folder is
    skipped: a stale claim cannot be told from a live one). The empty folder stays: removing it
    could pull it from under a concurrent claim that has just made it."""
    if {p.name for p in run_dir.iterdir()} == {CLAIM}:
        (run_dir / CLAIM).unlink(missing_ok=True)


def clear_run(run_dir: Path) -> None:
    """Remove one run's files (events, models, evaluations, checkpoints) from ``run_dir``."""
    for p in run_dir.glob("events.out.tfevents.*"):
        p.unlink()
    for p in run_dir.glob("progress*.csv"):
        p.unlink()
    for name in RUN_FILES:
        (run_dir / name).unlink(missing_ok=True)
    shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)


def keep_progress_log(run_dir: Path, steps: int) -> Path | None:
    """Before a resumed run writes into its own folder: its ``progress.csv`` (SB3's CSV log,
    which SB3's writer would truncate) becomes ``progress.until-<steps>.csv``, ``steps`` being
    the step count the resumed model starts from; returns the kept log's path (None: nothing
    to keep).

    A saved log is never replaced: when two resumes start from the same step (a second try
    after a failed one, or a branch), the later log goes to ``progress.until-<steps>-2.csv``,
    ``-3``, ... (the name is taken by a hard link or an exclusive create, which fail on an
    existing file, so a concurrent resume cannot take it either). An empty ``progress.csv``
    (a resume that failed before SB3 logged anything) holds nothing and is removed."""
    import os

    old_csv = run_dir / "progress.csv"
    if not old_csv.is_file():
        return None
    if old_csv.stat().st_size == 0:
        old_csv.unlink()
        return None
    for k in range(1, 10_000):
        kept = run_dir / (f"progress.until-{steps}.csv" if k == 1
                          else f"progress.until-{steps}-{k}.csv")
        try:
            try:
                os.link(old_csv, kept)
            except FileExistsError:
                raise
            except OSError:  # a file system without hard links: exclusive create, then copy
                with kept.open("xb") as dst:
                    dst.write(old_csv.read_bytes())
        except FileExistsError:
            continue
        old_csv.unlink()
        return kept
    raise ValueError(f"run folder {run_dir}: too many saved logs progress.until-{steps}-*.csv")


def evaluation_history(cfg: TrainConfig, run_dir: Path) -> Path:
    """The folder whose ``evaluations.npz`` (and ``best_model.zip``) the run's evaluations
    continue: its own when it has one or is no resume, else the resumed model's run folder."""
    if (run_dir / EVALUATIONS).is_file() or cfg.resume is None:
        return run_dir
    return run_folder_of(cfg.resume)


@dataclass
class Evaluations:
    """An ``evaluations.npz``: per evaluation its step count, episode returns and lengths."""

    timesteps: list[int]
    results: list[list[float]]
    lengths: list[list[int]]


def read_evaluations(folder: Path) -> Evaluations | None:
    """The ``evaluations.npz`` of ``folder``, or None when it has none; ``ValueError`` in one
    line naming the file when it does not read back as SB3's evaluation history (truncated,
    empty, not an ``.npz``, pickled objects, missing arrays, shapes that do not agree, values
    that are not finite)."""
    import numpy as np

    path = folder / EVALUATIONS
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as old:
            steps, results, lengths = (np.asarray(old[k]) for k in
                                       ("timesteps", "results", "ep_lengths"))
    except Exception as exc:  # BadZipFile, EOFError, pickled data, KeyError, OSError, ...
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(_damaged(path, reason[:160])) from None
    if steps.ndim != 1 or results.ndim != 2 or lengths.shape != results.shape \
            or len(steps) != len(results):
        raise ValueError(_damaged(path, f"timesteps {steps.shape}, results {results.shape}, "
                                        f"ep_lengths {lengths.shape} do not agree"))
    for name, arr in (("timesteps", steps), ("results", results), ("ep_lengths", lengths)):
        if arr.dtype.kind not in "iuf" or not np.all(np.isfinite(arr)):
            raise ValueError(_damaged(path, f"its {name} are not all finite numbers"))
    return Evaluations([int(t) for t in steps], [list(map(float, r)) for r in results],
                       [list(map(int, n)) for n in lengths])


def _damaged(path: Path, reason: str) -> str:
    return (f"{path} is damaged ({reason}): nothing was changed; restore it, or move it away "
            "to start the evaluations afresh")
