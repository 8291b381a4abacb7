"""build_trace_problem on a hand-made ten-row trace (hand-computed result) and on the sample."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedgym.data import load_gpu_v2023, load_sample
from schedgym.data.alibaba import Trace
from schedgym.data.trace_mapping import (
    _dhondt,
    _kmeans,
    build_trace_problem,
    class_allowed_nodes,
    task_classes,
)

NODES = """sn,cpu_milli,memory_mib,gpu,model
n0,32000,131072,0,
n1,64000,262144,4,T4
n2,96000,393216,8,G2
n3,16000,65536,2,P100
"""
# name, cores, GB, num_gpu, gpu_milli, gpu_spec, creation_time
TEN = [
    ("d", 8, 32, 1, 1000, "", 100),
    ("e", 8, 32, 1, 1000, "", 650),
    ("f", 8, 30, 1, 1000, "", 1300),
    ("g", 2, 4, 1, 500, "", 1250),
    ("h", 2, 4, 1, 500, "", 200),
    ("a", 4, 8, 0, 0, "", 0),
    ("b", 32, 64, 0, 0, "", 700),
    ("i", 4, 16, 1, 1000, "T4", 900),
    ("i2", 4, 16, 1, 1000, "T4", 950),
    ("j", 16, 64, 2, 1000, "P100|G2", 1500),
]


@pytest.fixture
def ten_row_trace(tmp_path):
    (tmp_path / "nodes.csv").write_text(NODES)
    lines = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
             "deletion_time,scheduled_time"]
    for name, c, m, n, gm, spec, t in TEN:
        lines.append(f"{name},{c * 1000},{m * 1024},{n},{gm},{spec},LS,Running,{t},{t + 100},{t}")
    (tmp_path / "pods.csv").write_text("\n".join(lines) + "\n")
    return load_gpu_v2023(tmp_path / "nodes.csv", tmp_path / "pods.csv")


def test_ten_rows_loaded_in_common_units(ten_row_trace):
    tr = ten_row_trace
    np.testing.assert_allclose(tr.node_resources, [[32, 128, 0], [64, 256, 4], [96, 384, 8],
                                                   [16, 64, 2]])
    assert list(tr.node_model) == ["", "T4", "G2", "P100"]
    np.testing.assert_allclose(tr.task_requests[3], [2, 4, 0.5])  # gpu_milli 500 of one GPU
    np.testing.assert_allclose(tr.task_requests[9], [16, 64, 2])  # num_gpu 2
    assert tr.task_gpu_spec[9] == "G2|P100"  # canonical: sorted
    np.testing.assert_allclose(tr.task_duration, 100.0)
    assert list(task_classes(tr)) == ["any-gpu"] * 5 + ["any"] * 2 + ["gpu:T4"] * 2 + [
        "gpu:G2|P100"]
    np.testing.assert_array_equal(class_allowed_nodes(tr, "gpu:G2|P100"), [0, 0, 1, 1])


def test_ten_rows_hand_computed(ten_row_trace):
    # D'Hondt over classes (any-gpu 5, any 2, gpu:T4 2, gpu:G2|P100 1) with 4 types:
    # 5 -> any-gpu; 2.5 -> any-gpu; tie 2 vs 2 -> any (earlier); 1.67 vs 1 vs 2 -> gpu:T4.
    # any-gpu k-means (k=2) on log2(1+x): first centre (2,4,.5) (heaviest, lexicographically
    # first of the tie), second (8,32,1) (2 * d^2 = 20.2 > 9.6 for (8,30,1)); (8,30,1) joins it.
    tp = build_trace_problem(n_instances=4, n_types=4, slot_seconds=600, seed=0,
                             trace=ten_row_trace)
    assert tp.type_class == ("any-gpu", "any-gpu", "any", "gpu:T4")
    np.testing.assert_allclose(tp.requests, [[8, 32, 1], [2, 4, 0.5], [4, 8, 0], [4, 16, 1]])
    np.testing.assert_array_equal(tp.type_tasks, [3, 2, 2, 2])
    np.testing.assert_array_equal(tp.task_type, [0, 0, 0, 1, 1, 2, 2, 3, 3, -1])
    assert tp.coverage == pytest.approx(0.9)
    np.testing.assert_array_equal(tp.node_index, [0, 1, 2, 3])
    np.testing.assert_array_equal(tp.mask, [[0, 1, 1, 1], [0, 1, 1, 1], [1, 1, 1, 1],
                                            [0, 1, 0, 0]])
    # slots of 600 s over [0, 1500] -> 3 slots
    np.testing.assert_array_equal(tp.arrival_counts, [[1, 1, 1, 0], [1, 0, 1, 2], [1, 1, 0, 0]])
    np.testing.assert_allclose(tp.type_duration, 100.0)
    np.testing.assert_array_equal(tp.edges[:3], [[0, 1], [0, 2], [0, 3]])
    assert any("G2|P100" in n for n in tp.notes)


def test_ten_rows_node_sample_keeps_every_type_reachable(ten_row_trace):
    for seed in range(10):
        tp = build_trace_problem(n_instances=2, n_types=4, slot_seconds=600, seed=seed,
                                 trace=ten_row_trace)
        assert tp.mask.any(axis=1).all()
        assert 1 in tp.node_index  # the only T4 node
        assert tp.n_instances == 2


def test_ten_rows_degree_cap_and_window(ten_row_trace):
    tp = build_trace_problem(n_instances=4, n_types=4, slot_seconds=600, seed=3,
                             trace=ten_row_trace, degree_cap=1)
    np.testing.assert_array_equal(tp.mask.sum(axis=1), [1, 1, 1, 1])
    assert tp.mask[3, 1]  # T4 type keeps its only node
    tp = build_trace_problem(n_instances=4, n_types=4, slot_seconds=600, trace=ten_row_trace,
                             time_window=(600, 1300))
    assert tp.n_slots == 2  # floor(700 / 600) + 1
    # window tasks e, b, i, i2, g, f: classes any-gpu 3 (3 distinct), gpu:T4 2 (1), any 1 (1);
    # D'Hondt: any-gpu, gpu:T4, any-gpu (1.5 > 1), then any-gpu 1 ties any 1 -> any-gpu.
    assert tp.type_class == ("any-gpu",) * 3 + ("gpu:T4",)
    assert tp.arrival_counts.sum() == tp.type_tasks.sum() == 5  # b unused
    assert tp.task_type[6] == -1


def test_ten_rows_errors(ten_row_trace):
    with pytest.raises(ValueError, match="n_types=8"):
        build_trace_problem(n_instances=4, n_types=8, trace=ten_row_trace)  # 7 distinct pairs
    with pytest.raises(ValueError, match="n_instances=5"):
        build_trace_problem(n_instances=5, n_types=2, trace=ten_row_trace)
    with pytest.raises(ValueError, match="time_window"):
        build_trace_problem(n_instances=4, n_types=2, trace=ten_row_trace,
                            time_window=(2000, 3000))
    with pytest.raises(ValueError, match="slot_seconds"):
        build_trace_problem(n_instances=4, n_types=2, trace=ten_row_trace, slot_seconds=0)


def test_constraints_off_merges_constrained_tasks(ten_row_trace):
    tp = build_trace_problem(n_instances=4, n_types=2, trace=ten_row_trace, constraints=False)
    assert set(tp.type_class) == {"any-gpu"}
    assert tp.coverage == pytest.approx(0.8)  # 8 GPU tasks of 10


def test_sample_arrivals_window_and_thinning(ten_row_trace):
    tp = build_trace_problem(n_instances=4, n_types=4, slot_seconds=600, trace=ten_row_trace)
    ind = tp.arrival_indicators
    rng = np.random.default_rng(1)
    x = tp.sample_arrivals(rng, 7)
    offset = int(np.random.default_rng(1).integers(0, 3))
    np.testing.assert_array_equal(x, ind[(offset + np.arange(7)) % 3])
    xs = np.stack([tp.sample_arrivals(np.random.default_rng(s), 3, prob=0.5) for s in range(400)])
    assert np.all(xs <= 1) and np.all(xs >= 0)
    # thinned arrivals happen only where the trace has one, about half of the time
    frac = xs.sum() / (400 * ind.sum())
    assert 0.4 < frac < 0.6


def test_dhondt_and_kmeans_units():
    assert _dhondt([5, 2, 2, 1], [3, 2, 1, 1], 4) == [2, 1, 1, 0]
    assert _dhondt([5, 2, 2, 1], [1, 2, 1, 1], 4) == [1, 2, 1, 0]  # caps respected
    X = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.0, 5.2], [9.0, 0.0]])
    lab = _kmeans(X, np.ones(5), 3)
    assert lab[0] == lab[1] and lab[2] == lab[3] and len(set(lab.tolist())) == 3


# -------------------------------------------------------------- shipped sample
def test_sample_problem_valid_and_reproducible():
    tp = build_trace_problem(n_instances=64, n_types=10, slot_seconds=1800, seed=5)
    again = build_trace_problem(n_instances=64, n_types=10, slot_seconds=1800, seed=5)
    for name in ("capacities", "requests", "mask", "arrival_counts", "node_index"):
        np.testing.assert_array_equal(getattr(tp, name), getattr(again, name))
    other = build_trace_problem(n_instances=64, n_types=10, slot_seconds=1800, seed=6)
    assert not np.array_equal(tp.node_index, other.node_index)
    np.testing.assert_array_equal(tp.requests, other.requests)  # types do not depend on seed
    assert tp.mask.any(axis=1).all()  # every type reachable
    assert (tp.capacities[:, :2] > 0).all()  # every node has cores and memory
    tr = load_sample()
    # locality respected: GPU types only on GPU nodes, constrained types only on their models
    for l, cls in enumerate(tp.type_class):
        nodes = tp.node_index[tp.mask[l]]
        if cls != "any":
            assert (tr.node_gpu[nodes] > 0).all()
        if cls.startswith("gpu:"):
            assert set(tr.node_model[nodes]) <= set(cls[4:].split("|"))
    assert (tp.requests[:, 2] > 0).sum() == sum(c != "any" for c in tp.type_class)
    assert tp.n_slots == int(np.floor((tr.task_time.max() - tr.task_time.min()) / 1800)) + 1
    assert tp.arrival_counts.sum() == tp.type_tasks.sum() == int(round(tp.coverage * tr.n_tasks))


def test_sample_arrivals_fixed_start_and_per_type_prob(ten_row_trace):
    tp = build_trace_problem(n_instances=4, n_types=4, slot_seconds=600, trace=ten_row_trace)
    ind = tp.arrival_indicators
    x = tp.sample_arrivals(np.random.default_rng(0), 4, start=2)
    np.testing.assert_array_equal(x, ind[[2, 0, 1, 2]])
    x = tp.sample_arrivals(np.random.default_rng(0), 3, prob=np.array([1.0, 0.0, 1.0, 0.0]),
                           start=0)
    np.testing.assert_array_equal(x, ind * [1, 0, 1, 0])
    with pytest.raises(ValueError, match="prob"):
        tp.sample_arrivals(np.random.default_rng(0), 3, prob=np.ones(3))
    with pytest.raises(ValueError, match="start"):
        tp.sample_arrivals(np.random.default_rng(0), 3, start=3)


# ------------------------------------------------------------ property test
MODELS = ("", "T4", "G2", "P100")


@st.composite
def small_traces(draw):
    M = draw(st.integers(2, 8))
    models = [draw(st.sampled_from(MODELS)) for _ in range(M)]
    models[0] = ""  # at least one CPU node
    gpus = [0.0 if m == "" else float(draw(st.integers(1, 8))) for m in models]
    N = draw(st.integers(1, 40))
    cpu = [float(draw(st.sampled_from([1, 2, 4, 8, 16]))) for _ in range(N)]
    mem = [float(draw(st.sampled_from([2, 8, 32, 64]))) for _ in range(N)]
    gpu = [float(draw(st.sampled_from([0, 0.5, 1, 2]))) for _ in range(N)]
    spec = [draw(st.sampled_from(["", "", "T4", "G2|T4", "A100"])) if g > 0 else ""
            for g in gpu]
    time = sorted(float(draw(st.integers(0, 5000))) for _ in range(N))
    return Trace(node_cpu=[32.0] * M, node_mem=[128.0] * M, node_gpu=gpus,
                 node_model=np.array(models), task_time=time, task_cpu=cpu, task_mem=mem,
                 task_gpu=gpu, task_gpu_spec=np.array(spec), task_duration=[60.0] * N)


@settings(max_examples=40, deadline=None)
@given(tr=small_traces(), L=st.integers(1, 6), seed=st.integers(0, 5),
       dt=st.sampled_from([100.0, 600.0, 3600.0]))
def test_mapping_invariants(tr, L, seed, dt):
    try:
        tp = build_trace_problem(n_instances=tr.n_nodes, n_types=L, slot_seconds=dt,
                                 seed=seed, trace=tr)
    except ValueError as exc:  # too few distinct shapes, or no reachable class: said clearly
        assert "n_types" in str(exc) or "n_instances" in str(exc)
        return
    assert tp.n_types == L and tp.mask.any(axis=1).all()
    cls = task_classes(tr)
    for l in range(L):
        ok = class_allowed_nodes(tr, tp.type_class[l])[tp.node_index]
        assert not (tp.mask[l] & ~ok).any()  # locality respected
        members = tp.task_type == l
        assert members.sum() == tp.type_tasks[l] > 0
        assert set(cls[members]) == {tp.type_class[l]}
        # the representative is a real request of one of its tasks
        assert (np.abs(tr.task_requests[members] - tp.requests[l]).sum(axis=1) == 0).any()
    assert tp.arrival_counts.sum() == (tp.task_type >= 0).sum()
    assert tp.n_slots == int((tr.task_time.max() - tr.task_time.min()) // dt) + 1
