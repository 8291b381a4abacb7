"""An agent that declines the size (a :class:`~schedgym.core.limits.NotComputed`, here ESDP's
dynamic program beyond its memory limit) does not stop ``compare``: the others play, and the
refused agent is said once as not played."""

from __future__ import annotations

import json

from schedgym.envs.fluctuating_speed import ENV_ID

from .sweep_cli import main as cli


def test_compare_goes_on_when_an_agent_declines_the_size(tmp_path, capsys):
    out = tmp_path / "cmp"
    code = cli(["compare", ENV_ID, "--agents", "esdp[memory_limit_mb=0.01],hauf", "--seeds", "0",
                "--set", "horizon=10", "--out", str(out), "--workers", "1", "--quiet",
                "--no-plots", "--no-benchmarks"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    played = {r["key"][1] for r in records if r.get("metrics")}
    assert "hauf" in played and "esdp[memory_limit_mb=0.01]" not in played
    assert "not played" in printed.out + printed.err
