"""Names of the resource (device) types, shared by every env and the trace mapping."""

from __future__ import annotations

#: The six resource types of the OgaSched paper, in its order (ESDP and the traces use a prefix).
RESOURCE_NAMES: tuple[str, ...] = ("cpu", "mem", "gpu", "npu", "tpu", "fpga")


def resource_names(n_resources: int) -> tuple[str, ...]:
    """The first ``n_resources`` of :data:`RESOURCE_NAMES` (``resource<k>`` beyond six)."""
    if n_resources <= len(RESOURCE_NAMES):
        return RESOURCE_NAMES[:n_resources]
    return tuple(f"resource{k}" for k in range(n_resources))
