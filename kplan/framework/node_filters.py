"""The Filter plugins on one node under a what-if, as preemption and nominated pods need them.

kube-scheduler's runtime runs the Filter plugins of one node with the pods nominated to it added
(RunFilterPluginsWithNominatedPods, addGENominatedPods), and its preemption dry runs take victims
off a node through the PreFilterExtensions (RemovePod / AddPod). Both read the Diagnosis of the
failed cycle. The runtime (kplan.framework.runtime) and the preemption evaluator
(kplan.framework.preemption) each use this module; neither knows the other.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

from kplan.api.objects import Pod
from kplan.cluster.state import ClusterState
from kplan.errors import PluginError
from kplan.framework.interfaces import CycleState
from kplan.framework.node_local import ROW_PLUGINS, STATIC_PLUGINS, row_view
from kplan.framework.status import Code, Status


@dataclass
class Diagnosis:
    """What PostFilter reads about the failed cycle: per-node codes (NodeToStatus) and the runner."""

    framework: Any  # the Framework that ran the cycle
    result: Any  # its CycleResult
    codes: np.ndarray  # (N,) int8 Code of each node's status (0 for nodes that passed)
    skipped: set[str] = field(default_factory=set)  # PreFilter Skip: their Filter is not run
    narrowed: np.ndarray | None = None  # PreFilterResult node mask
    static_filters: dict[str, Any] = field(default_factory=dict)  # the static plugins' Filter, once
    extensions: list[Any] | None = None  # see extensions()
    local: bool | None = None  # see node_local()


def priority(pod: Pod) -> int:
    return pod.priority or 0


def clone_state(state: CycleState) -> CycleState:
    """CycleState.Clone: each value's clone() when it has one, else the same object."""
    return CycleState({k: (v.clone() if hasattr(v, "clone") else v) for k, v in state.items()})


def extensions(diagnosis: Diagnosis) -> list[Any]:
    """The PreFilter plugins with PreFilterExtensions (add_pod and remove_pod), found once per diagnosis."""
    if diagnosis.extensions is None:
        diagnosis.extensions = [p for p in diagnosis.framework.points["preFilter"] if p.name not in diagnosis.skipped
                                and hasattr(p, "add_pod") and hasattr(p, "remove_pod")]
    return diagnosis.extensions


def remove_pod(state: CycleState, pod: Pod, victim: Pod, cluster: ClusterState, i: int, diagnosis: Diagnosis) -> None:
    """nodeInfo.RemovePod + RunPreFilterExtensionRemovePod."""
    cluster.forget(victim, i)
    for plugin in extensions(diagnosis):
        status = plugin.remove_pod(state, pod, victim, cluster, i)
        if status is not None and not status.is_success:
            raise PluginError(f"running RemovePod on PreFilter plugin {plugin.name!r}: {status.message}")


def add_pod(state: CycleState, pod: Pod, victim: Pod, cluster: ClusterState, i: int, diagnosis: Diagnosis) -> None:
    """nodeInfo.AddPodInfo + RunPreFilterExtensionAddPod."""
    cluster.assume(victim, i)
    for plugin in extensions(diagnosis):
        status = plugin.add_pod(state, pod, victim, cluster, i)
        if status is not None and not status.is_success:
            raise PluginError(f"running AddPod on PreFilter plugin {plugin.name!r}: {status.message}")


def node_local(diagnosis: Diagnosis) -> bool:
    """Whether every PreFilter and Filter plugin the dry run runs reads only the pod and the node
    (none has PreFilterExtensions, none counts other nodes' pods)."""
    if diagnosis.local is None:
        local = STATIC_PLUGINS | ROW_PLUGINS
        diagnosis.local = all(p.name in local or p.name in diagnosis.skipped
                              for point in ("preFilter", "filter") for p in diagnosis.framework.points[point])
    return diagnosis.local


def nominated_on(pod: Pod, cluster: ClusterState, i: int, diagnosis: Diagnosis) -> list[Pod]:
    """The pods nominated to node i that the pod must leave room for: those of equal or higher
    priority, itself excepted (addGENominatedPods)."""
    mine = priority(pod)
    return [p for p in diagnosis.framework.handle.nominated.get(cluster.names[i], ())
            if priority(p) >= mine and p.key != pod.key]


def filters_with_nominated(state: CycleState, pod: Pod, cluster: ClusterState, i: int,
                           diagnosis: Diagnosis) -> Status:
    """RunFilterPluginsWithNominatedPods for node i: first with the pods nominated to it added (the
    pod must not take the room they were promised), then, if that passed, as the node is."""
    nominated = nominated_on(pod, cluster, i, diagnosis)
    if nominated:
        status = filters_on_node_with(state, pod, cluster, i, diagnosis, nominated)
        if not status.is_success:
            return status
    return filters_on_node(state, pod, cluster, i, diagnosis)


def filters_on_node_with(state: CycleState, pod: Pod, cluster: ClusterState, i: int, diagnosis: Diagnosis,
                         added: Sequence[Pod]) -> Status:
    """filters_on_node with `added` on node i (and in a copy of the cycle state), undone after."""
    state = clone_state(state)
    with restoring_node(cluster, i):
        for p in added:
            add_pod(state, pod, p, cluster, i, diagnosis)
        return filters_on_node(state, pod, cluster, i, diagnosis)


def filters_on_node(state: CycleState, pod: Pod, cluster: ClusterState, i: int, diagnosis: Diagnosis) -> Status:
    """RunFilterPluginsWithNominatedPods for node i, against the node table as it is now.

    PreFilter is re-run first for the plugins without PreFilterExtensions, so state they derive
    from other pods is recomputed; the first Filter plugin rejecting node i gives its status.
    Plugins that read only the pod and the node run on node i alone; the static ones (blind to
    the node's pods, which are all the dry run changes) once per dry run.
    """
    fw = diagnosis.framework
    with_extensions = {p.name for p in extensions(diagnosis)}
    skipped = diagnosis.skipped
    for plugin in fw.points["preFilter"]:
        if plugin.name in skipped or plugin.name in with_extensions:
            continue
        status = plugin.pre_filter(state, pod, cluster)
        if status is not None and status.is_rejected:
            return Status(status.code, status.reasons, plugin.name)
        if status is not None and status.is_skip:
            # Nothing left for its Filter to check (upstream's RemovePod empties the same state):
            # the state written before the victims went is stale, so the Filter must not read it.
            skipped = skipped | {plugin.name}
    if diagnosis.narrowed is not None and not diagnosis.narrowed[i]:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (diagnosis.result.narrowed_reason,))
    row = None
    for plugin in fw.points["filter"]:
        if plugin.name in skipped:
            continue
        at = i
        if plugin.name in STATIC_PLUGINS:
            status = diagnosis.static_filters.get(plugin.name)
            if status is None:
                status = diagnosis.static_filters[plugin.name] = plugin.filter(state, pod, cluster)
        elif plugin.name in ROW_PLUGINS:
            if row is None:
                row = row_view(cluster, i)
            status, at = plugin.filter(state, pod, row), 0
        else:
            status = plugin.filter(state, pod, cluster)
        code = int(status.code[at])
        if code == Code.ERROR:
            raise PluginError(f"running Filter plugin {plugin.name!r}: {status.reasons}")
        if code:
            return Status(Code(code), tuple(status.reasons_of(at)), plugin.name)
    return Status()


@contextmanager
def restoring_node(cluster: ClusterState, i: int) -> Iterator[None]:
    """Puts node i back to exactly the pods it has now (in that order) once the what-if inside is done,
    and the table's generation with them: an answer computed before still holds after."""
    pods = list(cluster.pods_by_node[i])
    generation = cluster.generation
    try:
        yield
    finally:
        keep = {id(p) for p in pods}
        for p in [p for p in cluster.pods_by_node[i] if id(p) not in keep]:
            cluster.forget(p, i)
        present = {id(p) for p in cluster.pods_by_node[i]}
        for p in pods:
            if id(p) not in present:
                cluster.assume(p, i)
        cluster.pods_by_node[i] = pods
        cluster.generation = generation
