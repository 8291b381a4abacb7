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


# --------------------------------------------------------------------------- --write-doc merging

def _go(agent: str, size: str, k: float, dec: float = 0.01, step: float = 0.02,
        world: float = 5.0) -> Case:
    """A GainOverhead case whose figures grow as given powers of ``k`` (channels 300 k)."""
    return Case(GO, agent, size, channels=int(300 * k), ms_decision=dec, ms_step=step,
                ref_ms_decision=0.01, ref_ms_step=0.02, steps=20, episode_len=2000, build_s=1.0,
                peak_rss_mb=250 + world, world_mb=world)


def _grid(agents: tuple[str, ...], dec_exp: float = 1.0, step_exp: float = 1.0,
          mem_exp: float = 1.0) -> list[Case]:
    out = []
    for a in agents:
        for size, k in (("1x", 1), ("4x", 4), ("16x", 16), ("64x", 64)):
            out.append(_go(a, size, k, 0.01 * k ** dec_exp, 0.02 * k ** step_exp,
                           2.0 * k ** mem_exp))
        out.append(_go(a, "cluster", 30, 0.3, 0.6, 60.0))
    return out


def _rows(block: str) -> dict[tuple[str, str, str], str]:
    """The case rows of a written block by (env, agent, size)."""
    out = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 12 and cells[2] in bs.SIZES:
            out[(cells[0], cells[1], cells[2])] = line
    return out


def test_a_partial_run_keeps_the_other_rows_and_replaces_its_own():
    old = bs.merge_block(None, _grid(("drf", "fairness")), "day 1, load 3.0; measured all.")
    before = _rows(old)
    new = [_go("drf", "16x", 16, dec=9.0, step=8.0, world=77.0)]
    merged = bs.merge_block(bs.parse_block(old), new, "day 2, load 5.0; measured drf at 16x.")
    after = _rows(merged)
    assert set(after) == set(before) and len(after) == 10
    for key, line in before.items():
        if key != ("GainOverhead-v0", "drf", "16x"):
            assert after[key] == line  # kept as it was, run 1
    assert after[("GainOverhead-v0", "drf", "16x")] == bs.case_row(new[0]) + " 2 |"
    assert merged.splitlines()[:2] == ["run 1: day 1, load 3.0; measured all.",
                                       "run 2: day 2, load 5.0; measured drf at 16x."]
    # the row order is the doc's, the measured row in its old place
    assert list(after) == list(before)


def test_a_legacy_block_without_the_run_column_is_run_one():
    legacy = "\n".join([
        "2026-12-02 15:16 UTC, commit 8d6642f, load average 3.4; load average at the end 1.6.",
        "", bs.TABLE_HEAD,
        "| GainOverhead-v0 | drf | 1x | 315 | 0.010 | 0.98x | 0.020 | 0.99x | 276 | 0 | 0.1 s "
        "(2,000 steps) |",
        "| GainOverhead-v0 | drf | cluster | 10,822 | 0.3 | 30.00x | 1.000 | 50.00x | 290 | 14 "
        "| 2.0 s (1,440 steps) |",
        "| FluctuatingSpeed-v0 | esdp | 64x | — | refused: esdp's dynamic program needs 9 GiB | "
        "| | | 150 | 2 | |",
        "| FluctuatingSpeed-v0 | esdp | cluster | — | timed out: after 180 s | | | | | | |",
        "", "| env | agent | exponent: ms / decision | ms / env step | world MB | whole-cluster "
        "episode (extrapolated) |", "|---|---|---:|---:|---:|---|",
        "| GainOverhead-v0 | drf | 0.86 | 1.21 | 1.16 (3 sizes) | 2.0 s: within 10 min |",
        "| FluctuatingSpeed-v0 | esdp | — | — | — | timeout: timed out after 180 s |"])
    block = bs.parse_block(legacy)
    assert block.stamps == {1: legacy.splitlines()[0]}
    assert [(r.size, r.status, r.run) for r in block.rows] == [
        ("1x", "ok", 1), ("cluster", "ok", 1), ("64x", "refused", 1), ("cluster", "timeout", 1)]
    cl = block.rows[1]
    assert (cl.channels, cl.ms_decision, cl.ratio("decision"), cl.episode_len) == \
        (10822, 0.3, pytest.approx(30.0), 1440)
    assert cl.episode_min == pytest.approx(2.0 / 60)
    assert block.rows[3].reason == "timed out after 180 s"
    merged = bs.merge_block(block, [_go("drf", "1x", 1)], "now; measured drf at 1x.")
    rows = _rows(merged)
    assert rows[("FluctuatingSpeed-v0", "esdp", "64x")] == legacy.splitlines()[6] + " 1 |"
    assert rows[("GainOverhead-v0", "drf", "1x")].endswith(" 2 |")
    # esdp not re-measured: its exponent row is kept as it was
    assert legacy.splitlines()[-1] in merged.splitlines()


def test_the_exponents_of_a_re_measured_pair_are_recomputed_from_the_merged_rows():
    np = pytest.importorskip("numpy")
    old = bs.merge_block(None, _grid(("drf", "spreading"), dec_exp=1.0, step_exp=1.3,
                                     mem_exp=1.2), "day 1; measured all.")
    # spreading's exponent row as written, made recognisable: a pair not re-measured keeps it
    old = old.replace("| GainOverhead-v0 | spreading | 1.00 | 1.30 | 1.20 (4 sizes) |",
                      "| GainOverhead-v0 | spreading | 9.99 | 9.99 | 9.99 (4 sizes) |")
    new = [_go("drf", "64x", 64, dec=0.01 * 64 ** 1.5, step=0.02 * 64, world=2.0 * 64)]
    merged = bs.merge_block(bs.parse_block(old), new, "day 2; measured drf at 64x.")
    # the fit by hand over the merged drf rows: 1x, 4x, 16x as printed (ratios to 2 decimals,
    # world MB to whole MB), 64x as measured now
    x = np.log([300, 1200, 4800, 19200])
    ys = {"dec": [1.0, 4.0, 16.0, 64 ** 1.5],
          "step": [1.0, round(4 ** 1.3, 2), round(16 ** 1.3, 2), 64.0],
          "mem": [2.0, round(2 * 4 ** 1.2), round(2 * 16 ** 1.2), 128.0]}
    want = {what: np.polyfit(x, np.log(y), 1)[0] for what, y in ys.items()}
    line = next(ln for ln in merged.splitlines() if ln.startswith("| GainOverhead-v0 | drf | ")
                and "exponent" not in ln and len(ln.split("|")) == 8)
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert float(cells[2]) == pytest.approx(want["dec"], abs=0.006)
    assert float(cells[3]) == pytest.approx(want["step"], abs=0.006)
    assert float(cells[4].split()[0]) == pytest.approx(want["mem"], abs=0.006)
    assert cells[4].endswith("(4 sizes)") and want["dec"] > 1.1  # the new 64x moved it
    assert "| GainOverhead-v0 | spreading | 9.99 | 9.99 | 9.99 (4 sizes) |" in merged


def test_a_run_that_re_measures_every_row_of_a_stamp_drops_that_stamp():
    old = bs.merge_block(None, _grid(("drf",)), "day 1; measured all.")
    mid = bs.merge_block(bs.parse_block(old), _grid(("drf",))[:2], "day 2; drf at 1x, 4x.")
    new = bs.merge_block(bs.parse_block(mid), _grid(("drf",))[2:], "day 3; drf at the rest.")
    assert new.splitlines()[:2] == ["run 1: day 2; drf at 1x, 4x.",
                                    "run 2: day 3; drf at the rest."]
    runs = [line.rsplit("|", 2)[-2].strip() for line in _rows(new).values()]
    assert runs == ["1", "1", "2", "2", "2"]


def test_a_row_the_doc_lacks_goes_after_its_pair_or_its_env():
    old = bs.merge_block(None, [_go("drf", "1x", 1), _go("fairness", "1x", 1)], "day 1.")
    merged = bs.merge_block(bs.parse_block(old), [_go("drf", "4x", 4), _go("ogasched", "1x", 1)],
                            "day 2.")
    assert [k[1:] for k in _rows(merged)] == [("drf", "1x"), ("drf", "4x"), ("fairness", "1x"),
                                              ("ogasched", "1x")]


@pytest.mark.parametrize("block, why", [
    ("just a line of text\n", "no case table found"),
    (f"run 1: a\n\n{bs.DOC_HEAD}\n| GainOverhead-v0 | drf | 1x | 315 |\n", "expected 12 cells"),
    (f"run 1: a\n\n{bs.DOC_HEAD}\nprose in the table\n", "not a table row"),
    (f"run 1: a\n\n{bs.DOC_HEAD}\n| Cart-v1 | drf | 1x | 1 | 1 | 1x | 1 | 1x | 1 | 1 | "
     "0.1 s (2 steps) | 1 |\n", "env 'Cart-v1' is not one of"),
    (f"run 1: a\n\n{bs.DOC_HEAD}\n| GainOverhead-v0 | drf | 1x | 1 | 1 | 1x | 1 | 1x | 1 | 1 | "
     "0.1 s (2 steps) | 2 |\n", "rows of run 2, which no stamp line names"),
    ("run 1: a\n" + bs.DOC_HEAD + "\n" + 2 * ("| GainOverhead-v0 | drf | 1x | 1 | 1 | 1x | 1 | "
                                           "1x | 1 | 1 | 0.1 s (2 steps) | 1 |\n"),
     "a second row of GainOverhead-v0 drf 1x"),
    (f"run 1: a\n\n{bs.DOC_HEAD}\n| GainOverhead-v0 | drf | 1x | 1 | 1 | 1x | 1 | 1x | 1 | 1 | "
     "soon | 1 |\n", "episode cell 'soon'"),
    ("one stamp\nanother stamp\n", "expected one stamp line per run"),
])
def test_an_unreadable_block_is_refused_in_one_line(block, why):
    with pytest.raises(ValueError) as err:
        bs.parse_block(block, "perf.md")
    msg = str(err.value)
    assert "\n" not in msg and why in msg
    assert msg.startswith("--write-doc perf.md is invalid: its bench-scale block cannot be merged")


def _fake_run(monkeypatch) -> list[tuple[str, str, str]]:
    """``run_case`` replaced by a synthetic case per call (no process, nothing timed)."""
    calls: list[tuple[str, str, str]] = []

    def fake(env_id, agent, size, *args, **kwargs):
        calls.append((env_id, agent, size))
        return Case(env_id, agent, size, channels=100, ms_decision=1.0, ms_step=1.0,
                    ref_ms_decision=1.0, ref_ms_step=1.0, steps=20, episode_len=10,
                    build_s=1.0, peak_rss_mb=300.0, world_mb=2.0)

    monkeypatch.setattr(bs, "run_case", fake)
    return calls


def test_run_merges_a_partial_run_and_refuses_an_unreadable_block_before_running(
        tmp_path, monkeypatch):
    calls = _fake_run(monkeypatch)
    doc = tmp_path / "perf.md"
    old = bs.merge_block(None, _grid(("drf", "fairness")), "day 1; measured all.")
    doc.write_text(f"# Perf\n{bs.BEGIN}\n{old}\n{bs.END}\nafter\n")
    opts = bs.Options([GO], ["drf"], ["4x"], write_doc=str(doc))
    bs.run(opts, echo=lambda s: None)
    text = doc.read_text()
    rows = _rows(text)
    assert len(rows) == 10 and rows[("GainOverhead-v0", "drf", "4x")].endswith(" 2 |")
    assert "measured GainOverhead-v0: drf at 4x." in text and text.endswith(f"{bs.END}\nafter\n")
    assert _rows(old)[("GainOverhead-v0", "fairness", "4x")] == \
        rows[("GainOverhead-v0", "fairness", "4x")]
    # a row that another run wrote into the doc while this one ran is kept
    def other_run(*args, **kwargs):
        other = bs.merge_block(bs.parse_block(bs.read_block(doc)), [_go("ogasched", "1x", 1)],
                               "meanwhile; measured ogasched at 1x.")
        bs.write_doc(doc, other)
        return fake(*args, **kwargs)

    fake = bs.run_case
    monkeypatch.setattr(bs, "run_case", other_run)
    bs.run(bs.Options([GO], ["fairness"], ["1x"], write_doc=str(doc)), echo=lambda s: None)
    rows = _rows(doc.read_text())
    assert rows[("GainOverhead-v0", "ogasched", "1x")].endswith(" 3 |")
    assert rows[("GainOverhead-v0", "fairness", "1x")].endswith(" 4 |")
    assert rows[("GainOverhead-v0", "drf", "4x")].endswith(" 2 |") and len(rows) == 11
    monkeypatch.setattr(bs, "run_case", fake)
    doc.write_text(f"{bs.BEGIN}\nnot a table\n{bs.END}\n")
    calls.clear()
    with pytest.raises(ValueError, match="cannot be merged"):
        bs.run(opts, echo=lambda s: None)
    assert calls == [] and doc.read_text() == f"{bs.BEGIN}\nnot a table\n{bs.END}\n"


def test_a_full_run_replaces_the_whole_block(tmp_path, monkeypatch):
    calls = _fake_run(monkeypatch)
    doc = tmp_path / "perf.md"
    doc.write_text(f"{bs.BEGIN}\nan old block that cannot be read\n{bs.END}\n")
    opts = bs.Options(list(bs.ENVS.values()), None, list(bs.SIZES), write_doc=str(doc))
    assert bs.is_full(opts)
    assert not bs.is_full(bs.Options([GO], None, list(bs.SIZES)))
    assert not bs.is_full(bs.Options(list(bs.ENVS.values()), None, ["1x"]))
    bs.run(opts, echo=lambda s: None)
    text = doc.read_text()
    block = bs.parse_block(bs.read_block(doc))
    assert "an old block" not in text and list(block.stamps) == [1]
    assert [(r.env_id, r.agent, r.size) for r in block.rows] == calls
    assert {r.run for r in block.rows} == {1}
    assert len(block.fits) == len({(e, a) for e, a, _ in calls})
