"""``dynamics.score_batch(..., threads=k)``: the copies split over k threads give the same bits
as one call, whatever k (also more threads than copies), and a bad ``threads`` is refused."""

from __future__ import annotations

import numpy as np
import pytest

from schedgym.envs.gain_overhead import dynamics
from schedgym.envs.gain_overhead.generator import DEFAULTS, generate

FIELDS = ("y", "utilization", "distance", "gain", "penalty")


@pytest.mark.parametrize("copies", [1, 5, 16])
def test_threads_give_the_same_bits(copies):
    inst = generate({**DEFAULTS, "n_instances": 32, "utility": "mixed"}, 4)
    rng = np.random.default_rng(copies)
    z = rng.uniform(-0.2, 1.2, (copies, *inst.edge_caps.shape)) * inst.edge_caps
    x = (rng.random((copies, inst.n_types)) < 0.7).astype(float)
    one = dynamics.score_batch(inst, z, x)
    for threads in (2, 3, 32):
        out = dynamics.score_batch(inst, z, x, threads=threads)
        for f in FIELDS:
            assert getattr(out, f).tobytes() == getattr(one, f).tobytes(), (threads, f)
    # and each copy as a batch of one (the single env's formula)
    for i in range(copies):
        alone = dynamics.score_batch(inst, z[i:i + 1], x[i:i + 1])
        assert alone.y.tobytes() == one.y[i:i + 1].tobytes()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_threads_is_refused(bad):
    inst = generate({**DEFAULTS, "n_instances": 8}, 0)
    z = np.zeros((2, *inst.edge_caps.shape))
    with pytest.raises(ValueError, match=r"threads=.* is invalid: must be an integer >= 1"):
        dynamics.score_batch(inst, z, np.zeros((2, inst.n_types)), threads=bad)


def test_vector_env_with_threads_equals_one_thread():
    """The native vector env with ``num_threads=3`` gives the same observations, rewards, flags
    and infos as with one thread, across an autoreset."""
    import gymnasium as gym

    import schedgym  # noqa: F401

    kw = dict(num_envs=5, vectorization_mode="vector_entry_point", n_instances=16, horizon=3)
    one = gym.make_vec("schedgym/GainOverhead-v0", **kw)
    three = gym.make_vec("schedgym/GainOverhead-v0", num_threads=3, **kw)
    assert (one.unwrapped.num_threads, three.unwrapped.num_threads) == (1, 3)
    a, b = one.reset(seed=4), three.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(5):  # the fourth step autoresets every copy
        act = rng.uniform(-1.2, 1.2, one.action_space.shape).astype(np.float32)
        a, b = one.step(act), three.step(act)
        for x, y in zip(a[1:4], b[1:4], strict=True):  # rewards, terminated, truncated
            assert x.tobytes() == y.tobytes()
        for i in (0, 4):  # observations, infos
            assert a[i].keys() == b[i].keys()
            for k in a[i]:
                assert np.asarray(a[i][k]).tobytes() == np.asarray(b[i][k]).tobytes(), k


def test_vector_env_refuses_bad_num_threads():
    import gymnasium as gym

    import schedgym  # noqa: F401

    with pytest.raises(ValueError, match="num_threads"):
        gym.make_vec("schedgym/GainOverhead-v0", num_envs=2,
                     vectorization_mode="vector_entry_point", num_threads=0)
