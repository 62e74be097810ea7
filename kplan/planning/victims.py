"""The pods preemption evicts in a run: who went, from which node, for which pod.

kplan places a preemptor on its nominated node at once; its victims are gone from the table and
are not placed again (their controllers would recreate them, pending, to wait for room).
"""
from __future__ import annotations

from dataclasses import dataclass

from kplan.api.objects import Pod
from kplan.cluster.state import ClusterState
from kplan.framework.runtime import CycleResult


@dataclass(frozen=True)
class Eviction:
    """One victim of a preemption: the pod, the node it ran on, and the pod it made room for (ns/name)."""

    victim: Pod
    node: str
    preemptor: str


def evictions(result: CycleResult, cluster: ClusterState) -> list[Eviction]:
    """The victims of a cycle whose PostFilter nominated a node (its chosen candidate's), in upstream's
    order (most important first); none when it nominated none. Where the preemption was applied they are
    gone, even when a Reserve plugin then refused the pod on that node (the outcome is then Unschedulable)."""
    post_filter = result.post_filter
    if post_filter is None or post_filter.nominated is None:
        return []
    node = cluster.names[post_filter.nominated]
    return [Eviction(v, node, result.pod.key) for v in post_filter.victims]
