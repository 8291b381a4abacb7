"""What runs inside ``model.learn``: SB3 callbacks that report, limit and evaluate training.

- :class:`SchedgymMetricsCallback` writes schedgym's per-step metrics to TensorBoard. The tags
  are those of :mod:`schedgym.train.tensorboard` (``schedgym/step/*``, ``schedgym/episode/*``),
  identical to what the classical-agent runner writes, so ``tensorboard --logdir runs/`` shows a
  learner beside OgaSched/ESDP/OnSocMax. Rewards are logged in the env's own units: under
  ``VecNormalize`` the callback reads ``get_original_reward()``, never the scaled reward.
- :class:`BudgetProgressBar`: the progress bar, over the steps the binding budget reaches.
- :class:`WallClockLimit`: stop after a wall-clock budget (the model is saved as usual).
- :class:`ResumableEvalCallback`: SB3's evaluation, continuing a resumed run's history.

Which of them a run uses, and how often it evaluates, is the training loop's choice
(:mod:`schedgym.train.trainer`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback, EvalCallback

from schedgym.train.run_folder import read_evaluations
from schedgym.train.tensorboard import MetricTracker, write_scalars


class SchedgymMetricsCallback(BaseCallback):
    """Log ``schedgym/step/*`` every ``log_every`` env steps (summed over parallel envs) and
    ``schedgym/episode/*`` for the episodes that ended in the window.

    ``spec``: the env's ``episode_metrics`` (read from the training env when ``None``).
    Writes into the SB3 logger's TensorBoard event file (the run folder); if the logger has no
    TensorBoard output, a ``SummaryWriter`` on the logger's folder is opened.
    """

    def __init__(self, spec: dict[str, str] | None = None, log_every: int = 1000,
                 verbose: int = 0) -> None:
        super().__init__(verbose)
        self.spec = spec
        self.log_every = max(int(log_every), 1)
        self.tracker: MetricTracker | None = None
        self._writer: Any = None
        self._own_writer = False

    def _on_training_start(self) -> None:
        from stable_baselines3.common.logger import TensorBoardOutputFormat

        env = self.training_env
        if self.spec is None:
            from schedgym.train.tensorboard import metric_spec

            self.spec = metric_spec(env.get_attr("unwrapped", [0])[0])
        self.tracker = MetricTracker(self.spec, env.num_envs)
        for fmt in self.logger.output_formats:
            if isinstance(fmt, TensorBoardOutputFormat):
                self._writer = fmt.writer
        if self._writer is None and self.logger.get_dir():
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir=self.logger.get_dir())
            self._own_writer = True

    def _on_step(self) -> bool:
        assert self.tracker is not None
        vec_norm = self.model.get_vec_normalize_env()
        rewards = (vec_norm.get_original_reward() if vec_norm is not None
                   else self.locals["rewards"])
        infos = self.locals.get("infos") or [{}] * len(rewards)
        dones = self.locals.get("dones")
        if dones is None:
            dones = np.zeros(len(rewards), dtype=bool)
        for i, (r, info, d) in enumerate(zip(rewards, infos, dones, strict=True)):
            self.tracker.step(i, float(r), info, bool(d))
        if self.tracker.window_steps >= self.log_every:
            self._flush()
        return True

    def _flush(self) -> None:
        assert self.tracker is not None
        scalars = self.tracker.pop_scalars()
        if self._writer is not None and scalars:
            write_scalars(self._writer, scalars, self.num_timesteps)
            self._writer.flush()

    def _on_training_end(self) -> None:
        if self.tracker is not None and self.tracker.window_steps:
            self._flush()
        if self._own_writer and self._writer is not None:
            self._writer.close()


class WallClockLimit(BaseCallback):
    """Stop training once ``seconds`` of wall clock have passed since ``learn`` started (the
    model is then saved as usual): a stated CPU budget instead of a step count."""

    def __init__(self, seconds: float, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.seconds = float(seconds)
        self._t0 = 0.0

    def _on_training_start(self) -> None:
        import time

        self._t0 = time.perf_counter()

    def _on_step(self) -> bool:
        import time

        return time.perf_counter() - self._t0 < self.seconds


class BudgetProgressBar(BaseCallback):
    """A progress bar over the steps the binding budget reaches: ``n_steps`` steps, or, under a
    wall-clock limit of ``seconds``, the steps the current rate reaches by then when that is
    fewer (re-estimated as training goes, so the bar ends full where the time limit stops
    training instead of aiming at steps it never reaches)."""

    def __init__(self, n_steps: int, seconds: float | None = None, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.n_steps = int(n_steps)
        self.seconds = seconds
        self.bar: Any = None
        self._t0 = 0.0
        self._start = 0

    def _on_training_start(self) -> None:
        import time

        from tqdm.auto import tqdm

        self._t0 = time.perf_counter()
        self._start = self.num_timesteps
        self.bar = tqdm(total=self.n_steps, unit="step", dynamic_ncols=True, smoothing=0.05,
                        desc="steps" if self.seconds is None else
                        f"steps ({self.seconds / 60:g} min limit)")

    def aim(self, done: int, elapsed: float) -> int:
        """The bar's total after ``done`` steps in ``elapsed`` seconds: ``n_steps``, or the
        steps reachable in the time left at the rate so far when fewer (never below ``done``)."""
        if self.seconds is None or elapsed < 1.0 or done <= 0:
            return self.n_steps
        reach = done + done / elapsed * max(self.seconds - elapsed, 0.0)
        return max(done, min(self.n_steps, int(reach)))

    def _on_step(self) -> bool:
        import time

        done = self.num_timesteps - self._start
        total = self.aim(done, time.perf_counter() - self._t0)
        if total != self.bar.total:
            self.bar.total = total
        self.bar.update(done - self.bar.n)
        return True

    def _on_training_end(self) -> None:
        if self.bar is not None:
            done = self.num_timesteps - self._start
            self.bar.total = max(done, 1) if done < self.bar.total else self.bar.total
            self.bar.update(done - self.bar.n)
            self.bar.close()


class ResumableEvalCallback(EvalCallback):
    """SB3's ``EvalCallback`` that continues an earlier run's evaluation history.

    ``history``: run folder of the earlier run (or None). Its ``evaluations.npz`` is read first, so
    the file written keeps every earlier evaluation and appends the new ones (SB3's callback would
    start the file afresh); the best mean reward recorded there is the bar a new evaluation must
    beat before ``best_model.zip`` is replaced. When ``history`` is another folder than
    ``best_model_save_path``, its ``best_model.zip`` is copied over first.
    """

    def __init__(self, eval_env: Any, history: str | Path | None = None, **kwargs: Any) -> None:
        super().__init__(eval_env, **kwargs)
        self.history = Path(history) if history is not None else None

    def _init_callback(self) -> None:
        super()._init_callback()
        old = None if self.history is None else read_evaluations(self.history)
        if self.history is None or old is None:
            return
        self.evaluations_timesteps = old.timesteps
        self.evaluations_results = old.results
        self.evaluations_length = old.lengths
        best = self.history / "best_model.zip"
        if self.evaluations_results and best.is_file():
            self.best_mean_reward = float(max(np.mean(r) for r in self.evaluations_results))
            if self.best_model_save_path is not None:
                target = Path(self.best_model_save_path) / "best_model.zip"
                if target.resolve() != best.resolve():
                    import shutil

                    shutil.copyfile(best, target)

    def _on_training_end(self) -> None:
        """Evaluate the final model too when training ended (step count or wall-clock limit
        reached) between two evaluations; not after Ctrl-C (then this is not called)."""
        if self.eval_freq > 0 and (not self.evaluations_timesteps
                                   or self.evaluations_timesteps[-1] != self.num_timesteps):
            freq, self.eval_freq = self.eval_freq, 1
            try:
                self._on_step()
            finally:
                self.eval_freq = freq
        super()._on_training_end()
