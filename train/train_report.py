"""What ``schedgym train`` says as it goes, and how it says why it stopped.

- :class:`TrainReport`: an SB3 callback printing lines on stdout: steps done of the target,
  steps per second, wall clock, then one per evaluation with its mean return and, when no
  progress bar shows the rate, one per :data:`REPORT_EVERY_S` seconds with the mean return of
  the last training episodes; each return with its ratio to the best classical agent when one
  was played on those instances. Printed with ``flush``, so a piped or logged run shows it as
  it happens; beside a progress bar through ``tqdm.write``, which keeps the bar whole.
- :func:`classical_reference`: that best classical agent: the ``--beside`` agents (clairvoyant
  benchmarks and the ``myopic-opt`` ceiling left out) each played, in its own mode, on the
  evaluation instances, one episode per evaluation episode, or, for a run that does not
  evaluate, on its first training instances (episode seeds ``--beside-seeds``, cycled). The
  learner's episodes are drawn by its envs' own generators (and its training episodes with
  its exploration), so a ratio compares means over different episodes of the same instances:
  a trend, not the per-episode ratio of ``schedgym compare``.
- :func:`stop_reason`: which limit ended a run (the step target, the time budget, Ctrl-C) and
  how much of the target it reached, for the closing summary.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback

#: Seconds between two progress lines when no progress bar is shown (and no evaluation spoke).
REPORT_EVERY_S = 60.0
#: Training instances the reference plays on when the run does not evaluate.
REFERENCE_INSTANCES = 5
#: Agents that are no classical rival to set a learner's score against (the online ceiling).
NOT_A_RIVAL = ("myopic-opt",)


@dataclass(frozen=True)
class Reference:
    """The best classical agent's mean return: ``agent`` (its spec), ``mean`` (env units),
    ``episodes`` (how many it played) and ``instances``: the returns it is set beside,
    ``"evaluation"`` (it played the evaluation instances) and/or ``"training"`` (it played
    training instances: a run that does not evaluate, or evaluates on its training instances)."""

    agent: str
    mean: float
    episodes: int
    instances: tuple[str, ...] = ("evaluation",)


def rival_agents(specs: Sequence[str]) -> list[str]:
    """The classical rivals among ``specs``: not learned, not clairvoyant, not the ceiling."""
    from schedgym.agents import registry
    from schedgym.agents.spec import AgentSpec

    out = []
    for spec in specs:
        agent = AgentSpec.parse(spec)
        if agent.is_learned or registry.is_benchmark(spec) or agent.key in NOT_A_RIVAL:
            continue
        out.append(spec)
    return out


def classical_reference(env_id: str, agents: Sequence[str], instances: Sequence[int],
                        episodes: int, seeds: Sequence[int], scenario: str | None,
                        env_kw: dict[str, Any], kind: tuple[str, ...] = ("evaluation",)
                        ) -> Reference | None:
    """The best of ``agents`` (:func:`rival_agents` of them) by mean return over ``episodes``
    episodes on ``instances`` (episode ``k`` on ``instances[k % len]`` with seed
    ``seeds[k % len]``), each agent in its own mode; ``None`` when no rival is given.
    ``kind``: which instances these are (:attr:`Reference.instances`)."""
    from schedgym.train.runner import build_agent, run_episode
    from schedgym.train.tensorboard import make_agent_env

    rivals = rival_agents(agents)
    if not rivals or episodes < 1 or not instances or not seeds:
        return None
    world = {k: v for k, v in env_kw.items() if k != "scenario"}
    best: Reference | None = None
    for spec in rivals:
        total = 0.0
        for k in range(episodes):
            env = make_agent_env(env_id, spec, scenario, int(instances[k % len(instances)]),
                                 world)
            try:
                res = run_episode(env, build_agent(spec, env), int(seeds[k % len(seeds)]),
                                  label=spec)
            finally:
                env.close()
            total += float(res.metrics["reward"])
        mean = total / episodes
        if best is None or mean > best.mean:
            best = Reference(spec, mean, episodes, kind)
    return best


def _say(text: str, bar: bool) -> None:
    """One line on stdout now: through ``tqdm.write`` beside a bar (the bar is redrawn below
    it), else a plain flushed print."""
    if bar:
        from tqdm.auto import tqdm

        tqdm.write(text, file=sys.stdout)
        sys.stdout.flush()
    else:
        print(text, flush=True)


def _num(x: float) -> str:
    """A return as the line shows it: 4 significant digits, thousands separated."""
    a = abs(x)
    if a >= 1e4:
        return f"{x:,.0f}"
    return f"{x:,.4g}"


class TrainReport(BaseCallback):
    """Progress lines on stdout (see the module docstring).

    ``n_steps``: the step target of this ``learn`` call; ``seconds``: the wall-clock budget (or
    None); ``evaluation``: the run's evaluation callback (SB3 ``EvalCallback``) or None;
    ``reference``: a zero-argument function returning the :class:`Reference` (called once
    when ``learn`` sets its callbacks up: Ctrl-C there saves the run like any other, and the
    time budget starts after it);
    ``bar``: a progress bar is shown (then no timed lines, the bar shows the rate);
    ``every_s``: seconds between timed lines; ``name``: the lines' prefix (the run folder's
    name, which tells the runs of ``--seeds`` apart).
    """

    def __init__(self, n_steps: int, seconds: float | None = None, evaluation: Any = None,
                 reference: Any = None, bar: bool = False,
                 every_s: float = REPORT_EVERY_S, name: str = "train",
                 verbose: int = 0) -> None:
        super().__init__(verbose)
        self.n_steps = int(n_steps)
        self.seconds = seconds
        self.evaluation = evaluation
        self.reference_fn = reference
        self.reference: Reference | None = None
        self.bar = bar
        self.every_s = float(every_s)
        self.name = name
        self.lines: list[str] = []
        self._t0 = 0.0
        self._start = 0
        self._last_line = 0.0
        self._seen = 0

    def _init_callback(self) -> None:
        """Play the reference here: inside ``learn`` (Ctrl-C saves the run), before any
        callback's training start, so neither the time budget nor the rate counts it."""
        if self.reference_fn is None:
            return
        t0 = time.perf_counter()
        try:
            self.reference = self.reference_fn()
        except Exception as exc:  # noqa: BLE001 - a reference is no reason to stop training
            self._emit(f"{self.name}: reference not played ({type(exc).__name__}: "
                       f"{' '.join(str(exc).split())}); the lines go without ratios")
            return
        if self.reference is not None:
            r = self.reference
            self._emit(f"{self.name}: reference {r.agent} returns {_num(r.mean)} on average "
                       f"over {r.episodes} episode(s) of the {' and '.join(r.instances)} "
                       "instances, the best classical agent of --beside (played in "
                       f"{time.perf_counter() - t0:.0f} s)")

    def _on_training_start(self) -> None:
        self._start = self.num_timesteps
        budget = "" if self.seconds is None else f", time budget {self.seconds / 60:g} min"
        self._emit(f"{self.name}: training to {self.n_steps:,} steps{budget}; a line per evaluation"
                   + ("" if self.bar else f" or every {self.every_s:g} s"))
        self._t0 = self._last_line = time.perf_counter()
        self._seen = self._evaluations()

    def _evaluations(self) -> int:
        ev = self.evaluation
        return 0 if ev is None else len(getattr(ev, "evaluations_timesteps", []))

    def _emit(self, text: str) -> None:
        self.lines.append(text)
        _say(text, self.bar)

    def status(self, now: float) -> str:
        """``"1,024 of 8,192 steps (12%), 85 steps/s, 12 s"``: the run's step count of its target
        (a resumed run counts on from its checkpoint), the rate since this ``learn`` began."""
        done = self.num_timesteps - self._start
        target = self._start + self.n_steps
        elapsed = max(now - self._t0, 1e-9)
        share = 100.0 * self.num_timesteps / target if target else 100.0
        return (f"{self.num_timesteps:,} of {target:,} steps ({share:.0f}%), "
                f"{done / elapsed:,.0f} steps/s, {elapsed:.0f} s")

    def evaluation_text(self) -> str:
        """``"evaluation 812.4 (0.97 x esdp-aa), best 840.1"`` of the last evaluation."""
        ev = self.evaluation
        score = float(ev.last_mean_reward)
        text = f"evaluation {_num(score)}" + self._ratio(score, "evaluation")
        best = float(getattr(ev, "best_mean_reward", float("-inf")))
        if best > float("-inf") and best != score:
            text += f", best {_num(best)}"
        return text

    def _ratio(self, score: float, instances: str) -> str:
        """`` (0.97 x esdp-aa)`` when the reference was played on these ``instances``."""
        ref = self.reference
        if ref is None or ref.mean == 0 or instances not in ref.instances:
            return ""
        return f" ({score / ref.mean:.3f} x {ref.agent})"

    def training_text(self) -> str:
        """``"training episodes 790.2 (0.94 x esdp-aa), last 12"``: the mean return of the
        training episodes SB3 keeps (its last 100, with the policy's exploration), or ``""``
        before the first one ends."""
        infos = list(getattr(self.model, "ep_info_buffer", None) or ())
        if not infos:
            return ""
        mean = sum(float(i["r"]) for i in infos) / len(infos)
        return (f"; training episodes {_num(mean)}{self._ratio(mean, 'training')}, last "
                f"{len(infos)}")

    def _report(self) -> None:
        now = time.perf_counter()
        n = self._evaluations()
        if n > self._seen:
            self._seen = n
            self._emit(f"{self.name}: {self.status(now)}; {self.evaluation_text()}")
            self._last_line = now
        elif not self.bar and now - self._last_line >= self.every_s:
            self._emit(f"{self.name}: {self.status(now)}{self.training_text()}")
            self._last_line = now

    def _on_step(self) -> bool:
        self._report()
        return True

    def _on_training_end(self) -> None:
        self._report()  # the final model's evaluation, when the evaluation callback ran it


def stop_reason(interrupted: bool, timesteps: int, target: int,
                max_minutes: float | None) -> str:
    """Which limit ended a run and how far it got, e.g. ``"stopped by the time budget
    (--max-minutes 3) at 12,288 of its 1,000,000 steps (1.2%)"``; ``target``: the step count
    the run was to reach (a resumed run's counts on from its checkpoint)."""
    share = 100.0 * timesteps / max(target, 1)
    where = f"at {timesteps:,} of its {target:,} steps ({share:.1f}%)"
    if interrupted:
        return f"interrupted by Ctrl-C {where}"
    if timesteps >= target:
        return f"reached its step target, {timesteps:,} steps"
    if max_minutes is not None:
        return f"stopped by the time budget (--max-minutes {max_minutes:g}) {where}"
    return f"stopped early {where}"


def train_report(cfg: Any, env_kw: dict[str, Any], evaluation: Any, n_steps: int,
                 seconds: float | None, episodes: int) -> TrainReport:
    """The :class:`TrainReport` of a run of ``cfg`` (a ``TrainConfig``): lines named after the
    run folder; the reference of ``cfg.beside`` on the evaluation instances when the run
    evaluates (``evaluation`` not None, ``episodes`` per evaluation), else on the first
    :data:`REFERENCE_INSTANCES` training instances (at least 3 episodes)."""

    def reference() -> Reference | None:
        if not cfg.beside:
            return None
        if evaluation is not None:
            inst = cfg.evaluation_instances()
            same = set(inst) == set(cfg.training_instances())
            return classical_reference(cfg.env_id, cfg.beside, inst, episodes,
                                       cfg.beside_seeds, cfg.scenario, env_kw,
                                       ("evaluation", "training") if same else ("evaluation",))
        inst = cfg.training_instances()[:REFERENCE_INSTANCES]
        return classical_reference(cfg.env_id, cfg.beside, inst, max(len(inst), 3),
                                   cfg.beside_seeds, cfg.scenario, env_kw, ("training",))

    return TrainReport(n_steps, seconds, evaluation, reference, bar=bool(cfg.progress),
                       name=cfg.run_name)
