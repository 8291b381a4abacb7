"""``schedgym train`` reports as it goes (a line per evaluation, or per interval without a bar),
also with ``--no-progress`` and piped, and its closing line says which limit ended the run."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train.cli import main
from schedgym.train.train_report import Reference, TrainReport, rival_agents, stop_reason

#: a tiny GainOverhead (12-slot episodes) and a tiny A2C: evaluations every 32 steps
TINY = ["--set", "n_types=3", "--set", "n_instances=3", "--set", "horizon=12",
        "--hp", "n_steps=8", "--hp", "n_envs=2", "--eval-freq", "32", "--eval-episodes", "1",
        "--checkpoint-freq", "0", "--no-progress"]


class _Eval:
    """What TrainReport reads of SB3's EvalCallback."""

    def __init__(self) -> None:
        self.evaluations_timesteps: list[int] = []
        self.last_mean_reward = float("-inf")
        self.best_mean_reward = float("-inf")

    def add(self, step: int, score: float) -> None:
        self.evaluations_timesteps.append(step)
        self.last_mean_reward = score
        self.best_mean_reward = max(self.best_mean_reward, score)


class _Model:
    num_timesteps = 0


def _report(**kw) -> tuple[TrainReport, _Model]:
    rep = TrainReport(1000, **kw)
    model = _Model()
    rep.model = model  # what init_callback sets; num_timesteps is read from it
    return rep, model


def test_a_line_per_evaluation_with_the_ratio_to_the_reference(capsys):
    ev = _Eval()
    rep, model = _report(evaluation=ev, reference=lambda: Reference("esdp-aa", 200.0, 5),
                         every_s=1e9)
    rep.init_callback(model)
    rep.on_training_start({}, {})
    assert "reference esdp-aa returns 200" in capsys.readouterr().out
    model.num_timesteps = 100
    rep.on_step()
    assert capsys.readouterr().out == ""  # nothing new: no line
    ev.add(100, 150.0)
    model.num_timesteps = 120
    rep.on_step()
    line = capsys.readouterr().out.strip()
    assert line.startswith("train: 120 of 1,000 steps (12%), ") and "steps/s" in line, line
    assert line.endswith("evaluation 150 (0.750 x esdp-aa)"), line
    ev.add(200, 120.0)
    rep.on_training_end()  # the final model's evaluation is reported too
    assert capsys.readouterr().out.strip().endswith("evaluation 120 (0.600 x esdp-aa), best 150")


def test_without_a_bar_a_line_per_interval_even_with_no_evaluation(capsys):
    rep, model = _report(every_s=0.0, reference=lambda: Reference("drf", 50.0, 3, ("training",)))
    rep.init_callback(model)
    rep.on_training_start({}, {})
    assert "over 3 episode(s) of the training instances" in capsys.readouterr().out
    model.num_timesteps = 10
    rep.on_step()
    assert "training episodes" not in capsys.readouterr().out  # no episode ended yet
    model.ep_info_buffer = [{"r": 40.0, "l": 12}, {"r": 50.0, "l": 12}]
    rep.on_step()
    line = capsys.readouterr().out.strip()
    assert line.startswith("train: 10 of 1,000 steps (1%)"), line
    assert line.endswith("; training episodes 45 (0.900 x drf), last 2"), line
    barred, model = _report(every_s=0.0, bar=True)
    barred.on_training_start({}, {})
    capsys.readouterr()
    model.num_timesteps = 10
    barred.on_step()
    assert capsys.readouterr().out == ""  # the bar shows the rate; only evaluations speak


def test_the_reference_is_a_classical_rival():
    assert rival_agents(["random", "myopic-opt", "ppo:model.zip", "drf"]) == ["random", "drf"]


def test_stop_reason_names_the_limit_and_the_share_reached():
    assert stop_reason(False, 1024, 1000, None) == "reached its step target, 1,024 steps"
    assert stop_reason(False, 12_288, 1_000_000, 3.0) == (
        "stopped by the time budget (--max-minutes 3) at 12,288 of its 1,000,000 steps (1.2%)")
    assert stop_reason(True, 500, 1000, 3.0) == "interrupted by Ctrl-C at 500 of its 1,000 steps " \
        "(50.0%)"


def test_train_reports_before_its_closing_line(tmp_path, capsys):
    rc = main(["train", "a2c", GO, *TINY, "--timesteps", "64", "--out", str(tmp_path),
               "--beside", "drf", "--beside-seeds", "100"])
    assert rc == 0
    lines = capsys.readouterr().out.splitlines()
    done = next(i for i, s in enumerate(lines) if s.startswith("done: "))
    progress = [i for i, s in enumerate(lines) if "steps/s" in s and "evaluation" in s]
    assert progress and max(progress) < done, lines
    assert all(" x drf)" in lines[i] for i in progress), lines  # its ratio to --beside's best
    assert "reached its step target, 64 steps" in lines[done]


def test_train_no_progress_prints_while_it_runs(tmp_path):
    """Piped and without a bar, the first progress line arrives while training goes on (a
    time budget keeps it going), and the closing line names the time budget."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "schedgym.train.cli", "train", "a2c", GO, *TINY,
         "--timesteps", "10000000", "--max-minutes", "0.1", "--out", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=Path(__file__).parents[2])
    assert proc.stdout is not None
    t0 = time.monotonic()
    running_at_first_line = None
    for line in proc.stdout:
        if "steps/s" in line:
            running_at_first_line = proc.poll() is None
            break
        assert time.monotonic() - t0 < 240, "no progress line"
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    assert running_at_first_line, "the first progress line came only at the end"
    assert "stopped by the time budget (--max-minutes 0.1) at " in out, out


def test_a_reference_that_fails_is_said_and_training_goes_on(capsys):
    def broken():
        raise RuntimeError("agent crashed\nin its second decision")

    rep, model = _report(reference=broken)
    rep.init_callback(model)
    rep.on_training_start({}, {})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("train: reference not played (RuntimeError: agent crashed in its second "
                      "decision); the lines go without ratios"), out
    assert rep.reference is None and out[1].startswith("train: training to 1,000 steps")
