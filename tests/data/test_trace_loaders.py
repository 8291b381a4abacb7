"""Trace readers: the shipped sample, users' gpu-v2023 / gpu-v2020 / v2018 files, bad files."""

from __future__ import annotations

import gzip
import importlib.util
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from schedgym.data import (
    TraceFormatError,
    load_gpu_v2020,
    load_gpu_v2023,
    load_sample,
    load_v2018,
)
from schedgym.data.alibaba import SAMPLE_FILES

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = Path("/work/shared/data/alibaba-gpu-v2023")


# ------------------------------------------------------------------ the sample
def test_sample_loads_with_expected_content():
    tr = load_sample()
    assert tr.n_nodes == 1523 and tr.n_tasks == 8126
    assert tr.task_time.min() == 0.0 and np.all(np.diff(tr.task_time) >= 0)
    assert (tr.node_cpu > 0).all() and (tr.node_mem > 0).all()
    assert set(tr.node_model[tr.node_gpu > 0]) == {"A10", "G2", "G3", "P100", "T4", "V100M16",
                                                   "V100M32"}
    assert (tr.node_model[tr.node_gpu == 0] == "").all()
    assert (tr.task_gpu <= 8).all() and ((tr.task_gpu < 1) & (tr.task_gpu > 0)).any()
    assert (tr.task_gpu_spec[tr.task_gpu == 0] == "").all()
    assert int((tr.task_gpu_spec != "").sum()) == 2381
    assert load_sample() is tr  # cached
    plain = load_sample(constraints=False)
    assert (plain.task_gpu_spec == "").all()
    np.testing.assert_array_equal(plain.task_requests, tr.task_requests)


def test_sample_is_small_and_shipped_as_package_data():
    base = resources.files("schedgym.data")
    total = sum(len(base.joinpath(f).read_bytes()) for f in SAMPLE_FILES)
    assert total < 300_000
    assert "research or study" in base.joinpath("NOTICE.md").read_text()
    text = (REPO / "pyproject.toml").read_text()
    assert '"data/*"' in text  # package-data ships schedgym/data/*


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason="upstream gpu-v2023 files not available")
def test_sample_reproducible_from_upstream():
    spec = importlib.util.spec_from_file_location("make_sample",
                                                  REPO / "scripts" / "make_alibaba_sample.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["make_sample"] = mod
    spec.loader.exec_module(mod)
    made = mod.derive(UPSTREAM)
    base = resources.files("schedgym.data")
    for name, data in made.items():
        assert data == base.joinpath(name).read_bytes(), name


# ---------------------------------------------------------------- helpers
def _write(path: Path, text: str, gz: bool = False) -> Path:
    if gz:
        path = path.with_suffix(path.suffix + ".gz")
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


V2023_NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,8000,32768,0,\nn1,96000,393216,8,G2\n"
V2023_PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
              "deletion_time,scheduled_time\n"
              "p0,4000,8192,1,250,,LS,Running,10,70,10\n"
              "p1,2000,1024,0,0,,BE,Failed,20,25,20\n"
              "p2,16000,65536,2,1000,G2|G2,LS,Pending,30,90,\n")


def test_v2023_units_and_filters(tmp_path):
    nodes = _write(tmp_path / "nodes.csv", V2023_NODES, gz=True)
    pods = _write(tmp_path / "pods.csv", V2023_PODS)
    tr = load_gpu_v2023(nodes, pods)
    np.testing.assert_allclose(tr.node_resources, [[8, 32, 0], [96, 384, 8]])
    np.testing.assert_allclose(tr.task_requests, [[4, 8, 0.25], [2, 1, 0], [16, 64, 2]])
    np.testing.assert_allclose(tr.task_time, [10, 20, 30])
    np.testing.assert_allclose(tr.task_duration, [60, 5, 60])
    assert list(tr.task_gpu_spec) == ["", "", "G2"]
    assert load_gpu_v2023(nodes, pods, phases=("Running",)).n_tasks == 1
    assert load_gpu_v2023(nodes, pods, qos=("LS",)).n_tasks == 2
    assert list(load_gpu_v2023(nodes, pods, constraints=False).task_gpu_spec) == ["", "", ""]


V2020_MACHINES = "m0,T4,96,512,2\nm1,CPU,64,256,0\nm2,V100,96,512,8\n"
V2020_TASKS = ("j1,worker,2,Terminated,100.0,400.0,600,29.3,50,T4\n"
               "j2,worker,1,Failed,120.0,130.0,200,10,,\n"
               "j3,ps,1,Terminated,,,100,2,,\n"
               "j4,worker,1,Terminated,200.0,260.0,1200,100,800,MISC\n")


def test_v2020_headerless_units(tmp_path):
    tr = load_gpu_v2020(_write(tmp_path / "pai_machine_spec.csv", V2020_MACHINES),
                        _write(tmp_path / "pai_task_table.csv", V2020_TASKS, gz=True))
    np.testing.assert_allclose(tr.node_resources, [[96, 512, 2], [64, 256, 0], [96, 512, 8]])
    assert list(tr.node_model) == ["T4", "", "V100"]
    # j2 filtered (Failed), j3 dropped (no start_time)
    np.testing.assert_allclose(tr.task_requests, [[6, 29.3, 0.5], [12, 100, 8]])
    assert list(tr.task_gpu_spec) == ["T4", ""]  # MISC = unconstrained
    np.testing.assert_allclose(tr.task_duration, [300, 60])
    assert any("kept 2 of 4" in n for n in tr.notes)
    assert load_gpu_v2020(tmp_path / "pai_machine_spec.csv", tmp_path / "pai_task_table.csv.gz",
                          statuses=None).n_tasks == 3


def test_v2020_with_header(tmp_path):
    header = "machine,gpu_type,cap_cpu,cap_mem,cap_gpu\n"
    theader = ("job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,"
               "plan_gpu,gpu_type\n")
    tr = load_gpu_v2020(_write(tmp_path / "m.csv", header + V2020_MACHINES),
                        _write(tmp_path / "t.csv", theader + V2020_TASKS))
    assert tr.n_nodes == 3 and tr.n_tasks == 2


V2018_MACHINES = ("m_1,0,1,a,96,100,USING\nm_1,500,1,a,96,100,USING\n"
                  "m_2,0,2,b,64,50,USING\n")
V2018_TASKS = ("M1,10,j_1,1,Terminated,100,200,50,0.39\n"
               "R2_1,5,j_1,1,Terminated,150,400,200,1.5\n"
               "M1,3,j_2,2,Failed,160,170,100,1\n")


def test_v2018_headerless_units(tmp_path):
    tr = load_v2018(_write(tmp_path / "machine_meta.csv", V2018_MACHINES),
                    _write(tmp_path / "batch_task.csv", V2018_TASKS), mem_gb_per_unit=5.12)
    np.testing.assert_allclose(tr.node_resources, [[96, 512, 0], [64, 256, 0]])  # first row/id
    np.testing.assert_allclose(tr.task_requests, [[0.5, 0.39 * 5.12, 0], [2, 1.5 * 5.12, 0]])
    np.testing.assert_allclose(tr.task_time, [100, 150])
    assert (tr.node_model == "").all() and (tr.task_gpu_spec == "").all()


# ------------------------------------------------------------ malformed files
def test_missing_column_names_file_and_column(tmp_path):
    nodes = _write(tmp_path / "nodes.csv", V2023_NODES)
    bad = _write(tmp_path / "pods.csv", V2023_PODS.replace("memory_mib", "mem"))
    with pytest.raises(TraceFormatError, match=r"pods\.csv: missing column 'memory_mib'"):
        load_gpu_v2023(nodes, bad)
    bad = _write(tmp_path / "pai_task_table.csv",
                 "job_name,task_name,inst_num,status,start_time,end_time,plan_mem,plan_gpu\n"
                 "j,t,1,Terminated,1,2,3,4\n")
    with pytest.raises(TraceFormatError, match=r"pai_task_table\.csv: missing column 'plan_cpu'"):
        load_gpu_v2020(_write(tmp_path / "m.csv", V2020_MACHINES), bad)
    bad = _write(tmp_path / "batch_task.csv", "M1,10,j_1,1,Terminated,100\n")
    with pytest.raises(TraceFormatError, match=r"batch_task\.csv: no header and 6 fields"):
        load_v2018(_write(tmp_path / "mm.csv", V2018_MACHINES), bad)


def test_non_numeric_value_names_file_column_and_line(tmp_path):
    nodes = _write(tmp_path / "nodes.csv", V2023_NODES.replace("96000", "96k"))
    pods = _write(tmp_path / "pods.csv", V2023_PODS)
    msg = r"nodes\.csv: column 'cpu_milli', line 3: value '96k' is not a number"
    with pytest.raises(TraceFormatError, match=msg):
        load_gpu_v2023(nodes, pods)
    bad = _write(tmp_path / "batch_task.csv", V2018_TASKS.replace("0.39", "lots"))
    with pytest.raises(TraceFormatError, match=r"batch_task\.csv: column 'plan_mem', line 1"):
        load_v2018(_write(tmp_path / "mm.csv", V2018_MACHINES), bad)


def test_bad_unit_is_reported(tmp_path):
    nodes = _write(tmp_path / "nodes.csv", V2023_NODES)
    pods = _write(tmp_path / "pods.csv", V2023_PODS.replace(",250,", ",2500,"))
    with pytest.raises(TraceFormatError, match=r"column 'gpu_milli', line 2: value '2500' is "
                                               r"outside \[0, 1000\]"):
        load_gpu_v2023(nodes, pods)
    mm = _write(tmp_path / "mm.csv", V2018_MACHINES.replace(",100,", ",256,"))
    with pytest.raises(TraceFormatError, match=r"mm\.csv: column 'mem_size'.*normalised"):
        load_v2018(mm, _write(tmp_path / "bt.csv", V2018_TASKS))
    with pytest.raises(TraceFormatError, match=r"column 'plan_cpu'.*-5"):
        load_gpu_v2020(_write(tmp_path / "m.csv", V2020_MACHINES),
                       _write(tmp_path / "t.csv", V2020_TASKS.replace(",600,", ",-5,")))


def test_no_rows_after_filtering(tmp_path):
    nodes = _write(tmp_path / "nodes.csv", V2023_NODES)
    pods = _write(tmp_path / "pods.csv", V2023_PODS)
    with pytest.raises(TraceFormatError, match=r"pods\.csv: no rows left after filtering on "
                                               r"column 'pod_phase'.*Running"):
        load_gpu_v2023(nodes, pods, phases=("Succeeded",))
    with pytest.raises(TraceFormatError, match=r"pai_task_table\.csv: no rows left after "
                                               r"filtering on column 'status'"):
        load_gpu_v2020(_write(tmp_path / "m.csv", V2020_MACHINES),
                       _write(tmp_path / "pai_task_table.csv", V2020_TASKS),
                       statuses=("Running",))
    empty_pods = _write(tmp_path / "e.csv", V2023_PODS.splitlines()[0] + "\n")
    with pytest.raises(TraceFormatError, match=r"e\.csv: no rows left after filtering"):
        load_gpu_v2023(nodes, empty_pods)


def test_unreadable_files(tmp_path):
    with pytest.raises(TraceFormatError, match="file not found"):
        load_gpu_v2023(tmp_path / "nope.csv", tmp_path / "nope2.csv")
    nodes = _write(tmp_path / "nodes.csv", "")
    with pytest.raises(TraceFormatError, match=r"nodes\.csv: the file is empty"):
        load_gpu_v2023(nodes, nodes)
    (tmp_path / "x.csv.gz").write_bytes(b"not gzip")
    with pytest.raises(TraceFormatError, match=r"x\.csv\.gz: cannot be read"):
        load_gpu_v2023(tmp_path / "x.csv.gz", nodes)
    with pytest.raises(ValueError, match="mem_gb_per_unit"):
        load_v2018(nodes, nodes, mem_gb_per_unit=0)


def test_row_with_a_missing_middle_field_is_refused(tmp_path):
    """Dropping the empty gpu_spec of p0 used to shift qos/pod_phase/times one column left
    (duration -40750, gpu_spec='LS' in the real trace)."""
    nodes = _write(tmp_path / "nodes.csv", V2023_NODES)
    pods = _write(tmp_path / "pods.csv", V2023_PODS.replace("250,,LS", "250,LS"))
    msg = (r"pods\.csv: line 2, columns 'name'..'scheduled_time': the row has 10 fields, the "
           r"header has 11: a field is missing")
    with pytest.raises(TraceFormatError, match=msg):
        load_gpu_v2023(nodes, pods)
    bad = _write(tmp_path / "batch_task.csv", V2018_TASKS.replace("150,400,200", "150,200"))
    with pytest.raises(TraceFormatError, match=r"batch_task\.csv: line 2, .*a field is missing"):
        load_v2018(_write(tmp_path / "mm.csv", V2018_MACHINES), bad)


def test_row_with_extra_fields_is_refused(tmp_path):
    nodes = _write(tmp_path / "nodes.csv", V2023_NODES.replace("n0,8000,32768,0,",
                                                               "n0,8000,32768,0,,x"))
    with pytest.raises(TraceFormatError, match=r"nodes\.csv: line 2, columns 'sn'..'model': the "
                                               r"row has 6 fields, the header has 5: extra"):
        load_gpu_v2023(nodes, _write(tmp_path / "pods.csv", V2023_PODS))
    tasks = V2020_TASKS.replace("800,MISC", "800,MISC,oops")
    with pytest.raises(TraceFormatError, match=r"t\.csv: line 4, .*extra fields"):
        load_gpu_v2020(_write(tmp_path / "m.csv", V2020_MACHINES),
                       _write(tmp_path / "t.csv", tasks))


def test_corrupted_gzip_names_the_file_and_line(tmp_path):
    import zlib

    pods_text = V2023_PODS + "".join(f"q{i},1000,1024,0,0,,LS,Running,{i},{i + 9},{i}\n"
                                     for i in range(3000))
    data = bytearray(gzip.compress(pods_text.encode()))
    data[10:18] = b"\xff" * 8  # damage the deflate stream right after the gzip header
    bad = tmp_path / "pods.csv.gz"
    bad.write_bytes(bytes(data))
    nodes = _write(tmp_path / "nodes.csv", V2023_NODES)
    msg = r"pods\.csv\.gz: cannot be read as CSV text at line \d+"
    with pytest.raises(TraceFormatError, match=msg) as err:
        load_gpu_v2023(nodes, bad)
    assert not isinstance(err.value, zlib.error)


def test_directory_path_is_a_trace_format_error(tmp_path):
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(TraceFormatError, match=r"dir\.csv: is a directory, not a CSV file"):
        load_gpu_v2023(tmp_path / "dir.csv", tmp_path / "dir.csv")


def test_a_symlink_to_a_device_or_a_fifo_is_refused(tmp_path):
    """A trace that is a symlink to /dev/zero was read until memory ran out."""
    import os

    zero = tmp_path / "nodes.csv"
    zero.symlink_to("/dev/zero")
    pods = _write(tmp_path / "pods.csv", V2023_PODS)
    with pytest.raises(TraceFormatError, match=r"nodes\.csv: not a regular file"):
        load_gpu_v2023(zero, pods)
    fifo = tmp_path / "fifo.csv.gz"
    os.mkfifo(fifo)
    with pytest.raises(TraceFormatError, match=r"fifo\.csv\.gz: not a regular file"):
        load_gpu_v2020(fifo, pods)
    good = _write(tmp_path / "real_nodes.csv", V2023_NODES)
    link = tmp_path / "link.csv"
    link.symlink_to(good)  # a symlink to a regular file is fine
    assert load_gpu_v2023(link, pods).n_nodes == load_gpu_v2023(good, pods).n_nodes


def test_a_line_without_end_is_refused_before_it_is_held(tmp_path):
    from schedgym.data.alibaba import MAX_LINE_CHARS

    nodes = _write(tmp_path / "nodes.csv", V2023_NODES)
    long = tmp_path / "pods.csv"
    long.write_text(V2023_PODS + "x" * (MAX_LINE_CHARS + 10))
    with pytest.raises(TraceFormatError, match=r"pods\.csv: line \d+ is longer than"):
        load_gpu_v2023(nodes, long)
    bomb = tmp_path / "pods.csv.gz"  # a small gzip of one huge line (gzip bomb)
    bomb.write_bytes(gzip.compress(b"\0" * (4 * MAX_LINE_CHARS)))
    with pytest.raises(TraceFormatError, match=r"pods\.csv\.gz: line 1 is longer than"):
        load_gpu_v2023(nodes, bomb)


def test_files_above_the_size_cap_are_refused(tmp_path, monkeypatch):
    from schedgym.data import alibaba

    nodes = _write(tmp_path / "nodes.csv", V2023_NODES)
    pods = _write(tmp_path / "pods.csv", V2023_PODS)
    gz = tmp_path / "pods.csv.gz"
    gz.write_bytes(gzip.compress(V2023_PODS.encode()))
    monkeypatch.setattr(alibaba, "MAX_TRACE_BYTES", len(V2023_PODS) - 1)
    with pytest.raises(TraceFormatError, match=r"pods\.csv: \d+ bytes, above the limit"):
        load_gpu_v2023(nodes, pods)
    with pytest.raises(TraceFormatError, match=r"pods\.csv\.gz: more than .* decompressed"):
        load_gpu_v2023(nodes, gz)  # small on disk, above the cap once decompressed


def test_a_byte_order_mark_is_not_part_of_the_header(tmp_path):
    # the needed column first, so that a BOM glued to its name would hide it
    first = "\n".join(",".join([r.split(",")[1], r.split(",")[0], *r.split(",")[2:]])
                      for r in V2023_NODES.splitlines()) + "\n"
    nodes = tmp_path / "nodes.csv"
    nodes.write_bytes(b"\xef\xbb\xbf" + first.encode())  # what spreadsheets write
    pods = tmp_path / "pods.csv"
    pods.write_bytes(b"\xef\xbb\xbf" + V2023_PODS.encode())
    with_bom = load_gpu_v2023(nodes, pods)
    plain = load_gpu_v2023(_write(tmp_path / "n2.csv", V2023_NODES),
                           _write(tmp_path / "p2.csv", V2023_PODS))
    np.testing.assert_array_equal(with_bom.node_resources, plain.node_resources)
    np.testing.assert_array_equal(with_bom.task_requests, plain.task_requests)


@pytest.mark.parametrize(("column", "old", "new"), [
    ("cpu_milli", "96000", "1e308"),  # finite, but no machine has 10^305 cores
    ("gpu", ",8,", ",1e9,"),
])
def test_an_implausible_node_size_is_refused(tmp_path, column, old, new):
    assert old in V2023_NODES
    nodes = _write(tmp_path / "nodes.csv", V2023_NODES.replace(old, new, 1))
    with pytest.raises(TraceFormatError, match=rf"nodes\.csv: column '{column}', line \d+: "
                                               r"value '.*' is outside \[0, .*wrong unit"):
        load_gpu_v2023(nodes, _write(tmp_path / "pods.csv", V2023_PODS))


def test_an_implausible_time_is_refused(tmp_path):
    lines = V2023_PODS.splitlines()
    header = lines[0].split(",")
    row = lines[1].split(",")
    row[header.index("creation_time")] = "1e300"
    bad = "\n".join([lines[0], ",".join(row), *lines[2:]]) + "\n"
    with pytest.raises(TraceFormatError, match=r"pods\.csv: column 'creation_time', line 2: "
                                               r"value '1e300' is outside"):
        load_gpu_v2023(_write(tmp_path / "nodes.csv", V2023_NODES),
                       _write(tmp_path / "pods.csv", bad))
