"""The per-job tables built chunk by chunk equal the whole ``(N, R, T)`` arrays drawn at
once: the generator's streams read job by job (with any chunk size, skipping and going back),
a user's own arrays, and the trace scenario's jobs; the layout is ℛ_n in flat order."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedgym.envs.deadline_welfare import ENV_ID
from schedgym.envs.deadline_welfare.generator import DEFAULTS, PaperJobSampler
from schedgym.envs.deadline_welfare.tables import JobRows, chunk_bounds, job_sizes
from schedgym.envs.deadline_welfare.types import Jobs
from tests.envs.deadline_welfare.test_fast_paths import _reference_jobs

#: Chunk limits: one chunk, a few entries a chunk, one job a chunk.
LIMITS = [(1 << 20, 1 << 20), (7, 1 << 20), (1 << 20, 1)]


def _assert_rows_equal_dense(jobs: Jobs, ref: Jobs, rows: JobRows) -> None:
    """Every chunk of ``rows`` holds ``ref``'s dense values at the jobs' units, in the order of
    ``argwhere(mask)`` (job, then flat unit)."""
    U = ref.allowed.shape[1] * ref.n_slots
    want = np.argwhere(ref.mask.reshape(ref.n_jobs, U))
    got_n, got_u, got = [], [], {k: [] for k in ("capability", "coef", "weight")}
    for c in rows:
        got_n.append(np.repeat(np.arange(c.first, c.stop), np.diff(c.ptr)))
        got_u.append(c.units)
        for k in got:
            got[k].append(getattr(c, k))
    if want.size:
        np.testing.assert_array_equal(np.concatenate(got_n), want[:, 0])
        np.testing.assert_array_equal(np.concatenate(got_u), want[:, 1])
    for k, parts in got.items():
        dense = getattr(ref, k).reshape(ref.n_jobs, U)
        vals = np.concatenate(parts) if parts else np.zeros(0)
        np.testing.assert_array_equal(vals, dense[want[:, 0], want[:, 1]], err_msg=k)


@pytest.mark.parametrize("over", [{}, {"coef_scope": "job"}, {"n_jobs": None, "horizon": 5},
                                  {"locality_size": 3, "n_jobs": 30},
                                  {"n_instances": 2, "horizon": 1, "n_jobs": 3}])
@pytest.mark.parametrize("limits", LIMITS)
def test_chunks_equal_the_whole_draw(over, limits):
    p = {**DEFAULTS, **over}
    sampler = PaperJobSampler(p)
    for seed in (0, 7, 2**40 + 3):
        jobs = sampler(seed)
        ref = jobs if p["locality_size"] else _reference_jobs(sampler.params, seed)
        rows = JobRows(jobs, *limits)
        _assert_rows_equal_dense(jobs, ref, rows)
        _assert_rows_equal_dense(jobs, ref, rows)  # a second pass builds the same again


def test_locality_values_equal_the_reference_arrays():
    """With locality the job scalars come from one more stream; the values stay the streams'
    whole draw (the reference reads them as one ``(N, R, T)`` draw)."""
    p = {**DEFAULTS, "locality_size": 2, "n_instances": 5, "n_jobs": 9}
    sampler = PaperJobSampler(p)
    jobs = sampler(3)
    plain = _reference_jobs({**sampler.params, "locality_size": None}, 3)
    for k in ("capability", "coef", "weight"):
        np.testing.assert_array_equal(getattr(jobs, k), getattr(plain, k))
    _assert_rows_equal_dense(jobs, jobs, JobRows(jobs, 5, 1 << 20))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**63 - 2), R=st.integers(1, 6), T=st.integers(1, 9),
       n_jobs=st.integers(1, 25), order=st.permutations(range(25)),
       entries=st.integers(1, 60), draws=st.integers(1, 400))
def test_any_access_order_gives_the_same_jobs(seed, R, T, n_jobs, order, entries, draws):
    p = {**DEFAULTS, "n_instances": R, "horizon": T, "n_jobs": n_jobs}
    sampler = PaperJobSampler(p)
    jobs = sampler(seed)
    ref = _reference_jobs(sampler.params, seed)
    rows = JobRows(jobs, entries, draws)
    for n in [i for i in order if i < n_jobs]:
        job = rows.chunk(n).job(n)
        m = ref.mask[n].reshape(-1)
        np.testing.assert_array_equal(job.units, np.flatnonzero(m))
        for k in ("capability", "coef", "weight"):
            np.testing.assert_array_equal(getattr(job, k), getattr(ref, k)[n].reshape(-1)[m])


def test_user_arrays_and_the_jobs_own_accessor():
    gen = np.random.default_rng(0)
    N, R, T = 6, 3, 5
    arrival = np.sort(gen.integers(0, T, N))
    deadline = np.minimum(T - 1, arrival + gen.integers(0, 3, N))
    allowed = gen.random((N, R)) < 0.7
    allowed[:, 0] = True
    jobs = Jobs(arrival=arrival, deadline=deadline, workload=gen.uniform(1, 5, N),
                allowed=allowed, capability=gen.uniform(1, 3, (N, R, T)),
                coef=gen.uniform(1, 3, (N, R, T)), weight=gen.uniform(0, 1, (N, R, T)))
    _assert_rows_equal_dense(jobs, jobs, JobRows(jobs, 4, 1))
    for n in range(N):
        job = jobs.job(n)
        assert not job.units.flags.writeable and not job.coef.flags.writeable
        np.testing.assert_array_equal(job.capability, jobs.capability[n][jobs.mask[n]])
        np.testing.assert_array_equal(jobs.unit_mask(n), jobs.mask[n])
    np.testing.assert_array_equal(jobs.sizes, jobs.mask.sum(axis=(1, 2)))
    with pytest.raises(AttributeError, match="read-only"):
        jobs.workload = np.ones(N)  # type: ignore[misc]
    with pytest.raises(IndexError, match="job 6 is out of range"):
        jobs.rows.chunk(6)


def test_trace_jobs_equal_their_whole_arrays():
    env = gym.make(ENV_ID, scenario="alibaba-gpu-2023", n_instances=40, n_jobs=None).unwrapped
    for seed in (0, 5):
        jobs = env.sample_jobs(seed)
        assert jobs.n_jobs > 50
        _assert_rows_equal_dense(jobs, jobs, JobRows(jobs, 500, 1 << 20))


def test_chunk_bounds_respect_both_limits():
    sizes = np.array([3, 5, 2, 9, 1, 1, 4], dtype=np.int64)
    b = chunk_bounds(sizes, 10, 8, 25)  # at most 8 entries and 2 jobs (x 10 units) a chunk
    assert b.tolist() == [0, 2, 3, 4, 6, 7]
    for lo, hi in zip(b[:-1], b[1:], strict=True):
        assert hi - lo == 1 or (sizes[lo:hi].sum() <= 8 and (hi - lo) * 10 <= 25)
    assert chunk_bounds(np.zeros(0, dtype=np.int64), 10, 8, 25).tolist() == [0]
    allowed = np.array([[True, False, True], [False, False, False]])
    assert job_sizes(np.array([1, 0]), np.array([3, 2]), allowed).tolist() == [6, 0]
