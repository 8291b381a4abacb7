"""docs/sweeps.md's two-machine recipe, as written, on one machine: two ``ray start`` nodes,
each with its own home folder as on two machines (Ray keeps its token in ``~/.ray``), token
authentication as Ray 2.60 turns it on, and a ``compare --ray HOST:PORT`` through the cluster
whose records equal the local process pool's."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train.reaper import _table, descendants
from schedgym.train.store import RunStore

pytest.importorskip("ray")
if not Path("/proc/self/stat").exists():  # pragma: no cover - the teardown reads /proc
    pytest.skip("needs Linux's /proc", allow_module_level=True)

ROOT = Path(__file__).parents[2]
HELPER = str(Path(__file__).with_name("sweep_cli.py"))
RAY = [sys.executable, "-c", "from ray.scripts.scripts import main; main()"]
SMALL = ["--set", "n_types=3", "--set", "n_instances=3", "--set", "horizon=12"]
TIMING = ("decision_ms", "wall_s", "curve")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(home: Path) -> dict[str, str]:
    """A machine's environment: its own home folder, and the recipe's ``RAY_AUTH_MODE``."""
    return {**os.environ, "HOME": str(home), "RAY_AUTH_MODE": "token",
            "RAY_USAGE_STATS_ENABLED": "0"}


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``ray start ... --block`` (it stays the parent of the node's processes), waiting until
    the node runs."""
    fh = open(log, "wb")  # noqa: SIM115 - kept open for the process's life
    proc = subprocess.Popen([*RAY, "start", *args, "--block"], env=env, stdout=fh,
                            stderr=subprocess.STDOUT, cwd=ROOT)
    deadline = time.monotonic() + 120
    while b"Ray runtime started" not in log.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(log.read_text()[-2000:])
        time.sleep(0.3)
    return proc


def _stop(roots: list[subprocess.Popen[bytes]]) -> None:
    """End the nodes' processes (never ``ray stop``: it ends every Ray on the machine),
    deepest first, so each dead one is reaped by its parent."""
    table = _table()
    tree = {r.pid: table[r.pid][1] for r in roots if r.pid in table}
    for r in roots:
        tree.update(descendants(r.pid, table))

    def depth(pid: int) -> int:
        d = 0
        while pid in table and pid not in (r.pid for r in roots):
            pid, d = table[pid][0], d + 1
        return d

    for pid in sorted(tree, key=depth, reverse=True):
        if pid in (r.pid for r in roots):
            continue
        if _table().get(pid, (0, -1))[1] == tree[pid]:
            os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
    for r in roots:
        r.kill()
        r.wait(timeout=30)


def _forget(port: int) -> None:
    """Remove Ray's note of the head this test started (``ray stop`` would), so that no later
    ``ray.init()`` on this machine looks for the stopped cluster."""
    import ray._private.utils as ray_utils

    try:
        note = Path(ray_utils.get_ray_address_file(None))
        if note.read_text().strip().endswith(f":{port}"):
            note.unlink()
    except (OSError, AttributeError, TypeError):
        pass


def _records(run: Path) -> dict:
    store = RunStore.open(run, lock=False)
    return {tuple(r["key"]): ({k: v for k, v in r.items() if k not in TIMING},
                              store.curve(r) if "curve" in r else None)
            for r in store.records()}


@pytest.mark.slow  # 31 s on 2 loaded cores: two Ray nodes start, then two compares
def test_a_two_node_cluster_with_token_auth_gives_the_local_pools_records(tmp_path):
    home_a, home_b = tmp_path / "machine-a", tmp_path / "machine-b"
    home_a.mkdir()
    home_b.mkdir()
    env_a, env_b = _env(home_a), _env(home_b)
    # on A, once: a token (~/.ray/auth_token), then the head
    subprocess.run([*RAY, "get-auth-token", "--generate"], env=env_a, check=True,
                   capture_output=True, cwd=ROOT)
    token = home_a / ".ray" / "auth_token"
    assert token.stat().st_size > 0
    port = _free_port()
    nodes = []
    try:
        nodes.append(_start(["--head", "--node-ip-address=127.0.0.1", f"--port={port}",
                             f"--ray-client-server-port={_free_port()}", "--num-cpus=1",
                             "--include-dashboard=false"], env_a, tmp_path / "head.log"))
        # the token goes to B (scp in the recipe), then B joins
        (home_b / ".ray").mkdir()
        shutil.copy(token, home_b / ".ray" / "auth_token")
        nodes.append(_start([f"--address=127.0.0.1:{port}", "--node-ip-address=127.0.0.1",
                             "--num-cpus=1"], env_b, tmp_path / "node-b.log"))
        count = subprocess.run(
            [sys.executable, "-c", f"import ray; ray.init(address='127.0.0.1:{port}', "
             "log_to_driver=False); print(sum(n['Alive'] for n in ray.nodes()))"],
            env=env_a, capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert count.stdout.strip().splitlines()[-1] == "2", count.stderr[-2000:]
        # the driver on A: every record ok
        argv = ["compare", GO, "--agents", "drf,random", "--seeds", "0-1", *SMALL,
                "--quiet", "--no-plots"]
        viaray = subprocess.run([sys.executable, HELPER, *argv, "--out",
                                 str(tmp_path / "ray"), "--ray", f"127.0.0.1:{port}"],
                                env=env_a, capture_output=True, text=True, cwd=ROOT,
                                timeout=300)
        assert viaray.returncode == 0, viaray.stderr[-3000:]
    finally:
        _stop(nodes)
        _forget(port)
    pool = subprocess.run([sys.executable, HELPER, *argv, "--out", str(tmp_path / "pool"),
                           "--workers", "2"], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert pool.returncode == 0, pool.stderr[-3000:]
    a, b = _records(tmp_path / "pool"), _records(tmp_path / "ray")
    assert set(a) == set(b) and len(a) == 6
    for key, (rec, curve) in a.items():
        assert rec["status"] == "ok" and rec == b[key][0], key
        if curve is not None:
            np.testing.assert_array_equal(curve, b[key][1])
    assert json.loads((tmp_path / "ray" / "meta.json").read_text())["agents"] == ["drf",
                                                                                 "random"]
