"""docs/sweeps.md's whole-cluster Ray campaign: its commands parse and plan as documented
(without starting Ray), and the token file of a Ray that schedgym starts is made private (with
a stand-in for Ray that writes its token as Ray does, mode 0644)."""

from __future__ import annotations

import os
import re
import shlex
import stat
import sys
import types
from pathlib import Path

import pytest

from schedgym.agents.spec import split_specs
from schedgym.train import backend
from schedgym.train.cli import build_parser
from schedgym.train.cli_options import parse_overrides
from schedgym.train.head_to_head import compare_spec
from schedgym.train.tasks import BENCHMARK, plan

DOC = Path(__file__).resolve().parents[2] / "docs" / "sweeps.md"


def campaign_commands() -> list[list[str]]:
    """The ``schedgym compare`` commands of the campaign's second code block, as argv lists."""
    section = DOC.read_text().split("### A whole-cluster campaign", 1)[1]
    block = re.findall(r"```bash\n(.*?)```", section, flags=re.S)[1]
    joined = block.replace("\\\n", " ")
    return [shlex.split(line)[1:] for line in joined.splitlines()
            if line.strip().startswith("schedgym compare")]


def test_the_documented_campaign_parses_and_plans():
    commands = campaign_commands()
    envs = [argv[1] for argv in commands]
    assert envs == ["schedgym/DeadlineWelfare-v0", "schedgym/GainOverhead-v0",
                    "schedgym/FluctuatingSpeed-v0"]
    for argv in commands:
        args = build_parser().parse_args(argv)
        assert args.ray == "auto" and args.scenario == "alibaba-gpu-2023"
        overrides = parse_overrides(args.overrides)
        assert overrides["n_instances"] == "all" and overrides["split"] == "test"
        specs = split_specs(args.agents)
        seeds = list(range(10))
        assert args.seeds == "0-9"
        run = compare_spec(args.env_id, specs, seeds, args.scenario, [0], overrides,
                           not args.no_benchmarks)
        tasks = plan(run)
        episodes = [t for t in tasks if t.agent != BENCHMARK]
        assert len(episodes) == len(specs) * 10
        assert len(tasks) - len(episodes) == (0 if args.no_benchmarks else 10)
        assert all(t.overrides == overrides and t.scenario == "alibaba-gpu-2023" for t in tasks)
    dw = parse_overrides(build_parser().parse_args(commands[0]).overrides)
    assert dw == {"n_instances": "all", "split": "test", "horizon": 168, "n_jobs": None}
    # every classical agent of the env is in its campaign
    from schedgym.agents import registry

    for argv in commands:
        args = build_parser().parse_args(argv)
        have = set(split_specs(args.agents))
        want = {a for a in registry.names_for(args.env_id)
                if a != "random" and not registry.is_benchmark(a)}
        assert want <= have, (args.env_id, want - have)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_private_token_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    assert backend.private_token_file() == []
    assert _mode(tmp_path / ".ray") == 0o700  # created private: a new token is never exposed
    token = tmp_path / ".ray" / "auth_token"
    token.write_text("x" * 32)
    token.chmod(0o644)
    assert backend.private_token_file() == [str(token)]
    assert _mode(token) == 0o600
    assert backend.private_token_file() == []  # already private: nothing to change
    other = tmp_path / "elsewhere"
    other.write_text("y")
    other.chmod(0o640)
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(other))
    assert backend.private_token_file() == [str(other)] and _mode(other) == 0o600


def _fake_ray(home: Path) -> types.ModuleType:
    """Enough of Ray for ``backend._run_ray``: ``init`` writes the token file the way Ray 2.60
    does for a new local cluster (``open(path, "w")`` under the umask, here 0644)."""
    ray = types.ModuleType("ray")
    state = {"up": False}

    def init(address: str = "", **kw: object) -> None:
        token = home / ".ray" / "auth_token"
        token.parent.mkdir(parents=True, exist_ok=True)
        token.write_text("t" * 32)
        token.chmod(0o644)
        state["up"] = True

    class Ref:  # one object per task, as Ray's ObjectRef (hashable, never equal to another)
        def __init__(self, value: object) -> None:
            self.value = value

    def remote(**kw: object):  # noqa: ANN202 - the decorator factory
        def wrap(fn):  # noqa: ANN001, ANN202
            return types.SimpleNamespace(remote=lambda job: Ref(fn(job)))
        return wrap

    ray.is_initialized = lambda: state["up"]  # type: ignore[attr-defined]
    ray.init = init  # type: ignore[attr-defined]
    ray.remote = remote  # type: ignore[attr-defined]
    ray.wait = lambda refs, num_returns=1, timeout=None: (refs[:num_returns],  # type: ignore
                                                          refs[num_returns:])
    ray.get = lambda ref: ref.value  # type: ignore[attr-defined]
    ray.cancel = lambda ref, force=False: None  # type: ignore[attr-defined]
    ray.shutdown = lambda: state.update(up=False)  # type: ignore[attr-defined]
    return ray


def test_a_local_ray_started_by_schedgym_leaves_its_token_private(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    monkeypatch.setitem(sys.modules, "ray", _fake_ray(tmp_path))
    from schedgym.train import reaper

    monkeypatch.setattr(reaper, "start", lambda: None)  # no watchdog process for a fake Ray
    done: list[tuple[int, int]] = []
    backend.run_calls(lambda j: j * j, [1, 2, 3], lambda job, res, exc: done.append((job, res)),
                      workers=2, ray="")
    assert sorted(done) == [(1, 1), (2, 4), (3, 9)]
    assert _mode(tmp_path / ".ray" / "auth_token") == 0o600
    assert _mode(tmp_path / ".ray") == 0o700


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX file modes")
def test_a_token_of_another_user_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    token = tmp_path / ".ray" / "auth_token"
    token.parent.mkdir()
    token.write_text("z")
    token.chmod(0o644)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(token).st_uid + 1)
    assert backend.private_token_file() == [] and _mode(token) == 0o644
