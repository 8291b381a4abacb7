#!/usr/bin/env python3
"""Make the trace sample shipped in ``schedgym/data/`` from Alibaba cluster-trace-gpu-v2023.

Usage (from the repository root)::

    python scripts/make_alibaba_sample.py [SOURCE_DIR] [--out schedgym/data]

``SOURCE_DIR`` (default ``/work/shared/data/alibaba-gpu-v2023``) holds the upstream files
``openb_node_list_all_node.csv`` and ``openb_pod_list_gpuspec33.csv`` (folder ``csv/`` of
``cluster-trace-gpu-v2023`` in https://github.com/alibaba/clusterdata). The output is byte-for-byte
reproducible (sorted rows, fixed gzip header with mtime 0) and is checked by a test against the
checksums printed at the end.

What the derivation does (and nothing else):

* nodes: every row of ``openb_node_list_all_node.csv``, column ``sn`` dropped (the order of the
  rows is kept, so row ``i`` is ``openb-node-i``); units unchanged
  (``cpu_milli`` milli-cores, ``memory_mib`` MiB, ``gpu`` count, ``model`` GPU model or empty);
* pods: the rows of ``openb_pod_list_gpuspec33.csv`` (the same 8,152 tasks as
  ``openb_pod_list_default.csv`` plus GPU-model constraints in ``gpu_spec``; every other column is
  identical), with
  - ``name`` dropped;
  - ``gpu_spec`` canonicalised: models sorted and de-duplicated (upstream has e.g.
    ``V100M16|V100M32|V100M32``);
  - the straggler tasks before the dense part of the trace dropped: the window starts at the
    earliest creation time after which no gap between consecutive creations exceeds one day
    (``MAX_GAP_S``); this drops 26 tasks created 2.6 to 114 days before the rest (pods that were
    already running when collection started);
  - times re-based so that the window starts at 0 (``creation_time``, ``deletion_time``,
    ``scheduled_time``; ``scheduled_time`` stays empty for never-scheduled pods);
  - rows sorted by (``creation_time``, original row order).
  Units unchanged (``cpu_milli``, ``memory_mib``, ``num_gpu``, ``gpu_milli``, seconds).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
from pathlib import Path

MAX_GAP_S = 86_400
NODE_COLUMNS = ("cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
               "creation_time", "deletion_time", "scheduled_time")
NODES_OUT = "alibaba_gpu_v2023_nodes.csv.gz"
PODS_OUT = "alibaba_gpu_v2023_pods.csv.gz"


def _gz(rows: list[list[str]], header: tuple[str, ...]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as f:
        f.write(buf.getvalue().encode("utf-8"))
    return out.getvalue()


def derive(source: Path) -> dict[str, bytes]:
    """Return ``{file name: gzip bytes}`` of the derived sample."""
    with open(source / "openb_node_list_all_node.csv", newline="") as f:
        nodes = [[r[c] for c in NODE_COLUMNS] for r in csv.DictReader(f)]
    with open(source / "openb_pod_list_gpuspec33.csv", newline="") as f:
        pods = list(csv.DictReader(f))
    times = sorted(int(r["creation_time"]) for r in pods)
    start = times[0]
    for a, b in zip(times, times[1:], strict=False):
        if b - a > MAX_GAP_S:
            start = b
    kept = []
    for i, r in enumerate(pods):
        t = int(r["creation_time"])
        if t < start:
            continue
        spec = "|".join(sorted({m for m in r["gpu_spec"].split("|") if m}))
        row = dict(r, gpu_spec=spec)
        for c in ("creation_time", "deletion_time", "scheduled_time"):
            row[c] = "" if r[c] == "" else str(int(r[c]) - start)
        kept.append((t, i, [row[c] for c in POD_COLUMNS]))
    kept.sort(key=lambda x: (x[0], x[1]))
    print(f"nodes: {len(nodes)} rows; pods: {len(kept)} of {len(pods)} rows kept "
          f"(window starts at upstream creation_time {start} s)")
    return {NODES_OUT: _gz(nodes, NODE_COLUMNS), PODS_OUT: _gz([k[2] for k in kept], POD_COLUMNS)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source", nargs="?", default="/work/shared/data/alibaba-gpu-v2023", type=Path)
    ap.add_argument("--out", default=Path(__file__).resolve().parents[1] / "schedgym" / "data",
                    type=Path)
    args = ap.parse_args(argv)
    for name, data in derive(args.source).items():
        (args.out / name).write_bytes(data)
        print(f"{name}: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}")


if __name__ == "__main__":
    main()
