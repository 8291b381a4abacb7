"""``schedgym bench scale``: the growth-exponent fit, the tables, refusals, options and one real
tiny run (each case in its own process)."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest

import schedgym  # noqa: F401
from schedgym.train import bench_scale as bs
from schedgym.train.bench_scale import Case

GO, FS, DW = (bs.ENVS[k] for k in ("gain_overhead", "fluctuating_speed", "deadline_welfare"))


def test_fit_exponent_against_a_hand_calculation():
    # log2 x = 0, 1, 2 (mean 1); the slope is sum((lx - 1)(ly - mean)) / sum((lx - 1)^2)
    # = (-(0 - m) + (3 - m)) / 2 = 3 / 2 whatever the mean m of log2 y = (0, log2 3, 3)
    assert bs.fit_exponent([1, 2, 4], [1, 3, 8]) == pytest.approx(1.5, abs=1e-12)
    assert bs.fit_exponent([10, 40, 160, 640], [3 * x ** 1.1 for x in (10, 40, 160, 640)]) == \
        pytest.approx(1.1, abs=1e-12)
    assert bs.fit_exponent([5, 5], [1, 2]) is None  # one distinct size: nothing to fit
    # a point that cannot be logged is left out, not turned into a NaN
    assert bs.fit_exponent([1, 2, 4], [1, 2, math.nan]) == pytest.approx(1.0)


def _case(size: str, channels: int, dec: float, step: float, world: float, **kw) -> Case:
    return Case(DW, "max-first", size, channels=channels, ms_decision=dec, ms_step=step,
                ref_ms_decision=0.5, ref_ms_step=0.25, steps=20, episode_len=1000,
                build_s=6.0, peak_rss_mb=200 + world, world_mb=world, **kw)


def test_table_builder_on_a_tiny_synthetic_size_list():
    # decision ~ units^1, step ~ units^0.5, world MB ~ units^1.2 (above MIN_WORLD_MB)
    cases = [_case(f"{k}x", 100 * k, 0.5 * k, 0.25 * math.sqrt(k), 5 * k ** 1.2)
             for k in (1, 2, 4)]
    cases.append(_case("cluster", 10_000, 30.0, 6.0, 900.0))
    text = bs.table(cases)
    lines = text.splitlines()
    assert lines[0] == bs.TABLE_HEAD.splitlines()[0] and len(lines) == 2 + 4
    assert "| DeadlineWelfare-v0 | max-first | 2x | 200 | 1.000 | 2.00x | 0.354 | 1.41x |" in text
    # the cluster row: (6 s + 1000 x 36 ms) / 60 = 0.7 min = 42 s
    assert "| 42.0 s (1,000 steps) |" in lines[-1]
    fits = bs.exponents(cases)[(DW, "max-first")]
    assert fits["decision"] == pytest.approx(1.0)
    assert fits["step"] == pytest.approx(0.5)
    assert fits["memory"] == pytest.approx(1.2)
    assert fits["sizes"] == 3  # the cluster is not a point of the fit
    summary = bs.exponent_table(cases)
    assert "| DeadlineWelfare-v0 | max-first | 1.00 | 0.50 | 1.20 (3 sizes) | 42.0 s: within " \
        "10 min |" in summary
    slow = [*cases[:3], _case("cluster", 10_000, 600.0, 100.0, 900.0)]
    assert "11.8 min: over 10 min" in bs.exponent_table(slow)


def test_small_worlds_are_left_out_of_the_memory_fit():
    cases = [_case("1x", 100, 1, 1, 0.3), _case("4x", 400, 4, 1, 0.9),
             _case("16x", 1600, 16, 1, 8.0)]
    fits = bs.exponents(cases)[(DW, "max-first")]
    assert fits["memory"] is None and fits["memory_sizes"] == 1  # one size >= MIN_WORLD_MB
    assert "| 1.00 | 0.00 | — |" in bs.exponent_table(cases)


def test_a_refusal_is_a_row_and_breaks_nothing():
    reason = "esdp's dynamic program needs 9,000 MiB: above its limit of 4,096 MiB"
    cases = [_case("1x", 100, 1.0, 1.0, 5.0), _case("4x", 400, 4.0, 1.0, 20.0),
             Case(DW, "max-first", "16x", status="refused", reason=reason, peak_rss_mb=150.0,
                  world_mb=2.0),
             Case(DW, "max-first", "cluster", status="timeout", reason="timed out after 9 s")]
    text = bs.table(cases)
    assert f"| DeadlineWelfare-v0 | max-first | 16x | — | refused: {reason} | | | | 150 | 2 |" \
        in text
    assert "| cluster | — | timed out: after 9 s |" in text
    fits = bs.exponents(cases)[(DW, "max-first")]
    assert fits["sizes"] == 2 and fits["decision"] == pytest.approx(1.0)
    assert "timeout: timed out after 9 s" in bs.exponent_table(cases)


def test_a_refusal_in_the_child_process_is_a_result():
    """The real child: the reference plays, then the case's ValueError becomes its row."""
    import json

    got = bs.child(json.dumps({"env_id": DW, "agent": "max-first", "kwargs": {"n_instances": 0},
                               "steps": 2, "max_seconds": 1.0, "seed": 0}))
    assert got["status"] == "refused"
    assert got["reason"].startswith("n_instances=0 is invalid")
    assert "environment creator" not in got["reason"]
    assert got["ref_ms_decision"] > 0 and got["peak_rss_mb"] > 0


def test_one_kx_is_the_paper_default_size():
    for env_id in (GO, FS):
        paper = gym.make(env_id).unwrapped.instance.n_instances
        assert bs.size_kwargs(env_id, "1x") == {"n_instances": paper}
        assert bs.size_kwargs(env_id, "16x") == {"n_instances": 16 * paper}
        assert bs.size_kwargs(env_id, "cluster") == {"scenario": "alibaba-gpu-2023",
                                                     "n_instances": "all"}
    assert bs.size_kwargs(DW, "1x")["n_instances"] == \
        gym.make(DW).unwrapped.instance.n_instances
    assert bs.size_kwargs(DW, "cluster") == {"scenario": "alibaba-gpu-2023", "n_instances": "all",
                                             "split": "test", "horizon": 168, "n_jobs": None}
    with pytest.raises(ValueError, match=r"size='3y' is invalid: must be 'cluster' or 'Kx'"):
        bs.size_kwargs(GO, "3y")


def test_the_command_line():
    from schedgym.train import bench
    from schedgym.train.cli import build_parser

    args = build_parser().parse_args(["bench", "scale", "--envs", "fluctuating_speed",
                                      "--sizes", "1x,cluster", "--steps", "3",
                                      "--max-seconds", "0.5"])
    opts = bs.options(args)
    assert (opts.envs, opts.sizes, opts.steps, opts.max_seconds) == ([FS], ["1x", "cluster"],
                                                                     3, 0.5)
    plan = bs.plan(opts)
    assert ("schedgym/FluctuatingSpeed-v0", "esdp", "cluster") in plan
    assert all(a != "random" for _, a, _ in plan) and len(plan) == 2 * len(
        bs.classical_agents(FS))
    bad = build_parser().parse_args(["bench", "gain_overhead", "--steps", "3"])
    with pytest.raises(ValueError, match="--steps is invalid here: only for schedgym bench scale"):
        bench.main(bad)
    for argv, msg in ((["--steps", "0"], "--steps 0 is invalid"),
                      (["--max-seconds", "-1"], "--max-seconds -1.0 is invalid"),
                      (["--envs", "cartpole"], "env='cartpole' is invalid"),
                      (["--agents", "drf", "--envs", "dw_x"], "env='dw_x' is invalid")):
        with pytest.raises(ValueError, match=msg):
            bs.plan(bs.options(build_parser().parse_args(["bench", "scale", *argv])))
    with pytest.raises(ValueError, match="--agents drf is invalid: no env given has it"):
        bs.plan(bs.options(build_parser().parse_args(["bench", "scale", "--agents", "drf",
                                                      "--envs", "deadline_welfare"])))


def test_write_doc_replaces_only_between_the_markers(tmp_path):
    doc = tmp_path / "perf.md"
    doc.write_text(f"# Perf\nbefore\n{bs.BEGIN}\nold table\n{bs.END}\nafter\n")
    bs.write_doc(doc, "| new |")
    assert doc.read_text() == f"# Perf\nbefore\n{bs.BEGIN}\n| new |\n{bs.END}\nafter\n"
    doc.write_text("no markers\n")
    with pytest.raises(ValueError, match="must hold the lines"):
        bs.write_doc(doc, "x")


def test_a_tiny_run_end_to_end(tmp_path):
    """Two sizes of one env and agent, each in a fresh process: rows, exponents, the doc."""
    doc = tmp_path / "perf.md"
    doc.write_text(f"{bs.BEGIN}\n{bs.END}\n")
    opts = bs.Options([DW], ["max-first"], ["1x", "2x"], steps=3, max_seconds=1.0,
                      case_timeout=120.0, write_doc=str(doc))
    lines: list[str] = []
    cases = bs.run(opts, echo=lines.append)
    assert [c.status for c in cases] == ["ok", "ok"], [c.reason for c in cases]
    assert [c.channels for c in cases] == [240, 480]
    assert all(c.steps >= 3 and c.ms_decision > 0 and c.ms_step > 0 for c in cases)
    assert all(c.peak_rss_mb > 50 and c.world_mb >= 0 for c in cases)
    assert bs.exponents(cases)[(DW, "max-first")]["decision"] is not None
    text = doc.read_text()
    assert "| DeadlineWelfare-v0 | max-first | 2x | 480 |" in text and "exponent" in text
