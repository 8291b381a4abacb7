"""Cluster-trace data: the shipped Alibaba gpu-v2023 sample, readers for users' own trace files,
and the trace -> scheduling-problem mapping shared by every env's ``alibaba-gpu-2023`` scenario.

- :mod:`schedgym.data.alibaba`: :class:`Trace` (nodes and tasks in cores / GB / GPUs / seconds),
  :func:`load_sample`, :func:`load_gpu_v2023`, :func:`load_gpu_v2020`, :func:`load_v2018`.
- :mod:`schedgym.data.trace_mapping`: :func:`build_trace_problem` -> :class:`TraceProblem`
  (sampled nodes, job types, locality graph, per-slot arrivals).

Source, terms and attribution of the shipped sample: ``NOTICE.md`` in this folder.
"""

from schedgym.data.alibaba import (
    Trace,
    TraceFormatError,
    load_gpu_v2020,
    load_gpu_v2023,
    load_sample,
    load_v2018,
)

__all__ = [
    "Trace",
    "TraceFormatError",
    "load_gpu_v2020",
    "load_gpu_v2023",
    "load_sample",
    "load_v2018",
]
