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
