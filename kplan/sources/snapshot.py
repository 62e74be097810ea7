"""Snapshot: the typed objects of a cluster, as loaded from dumps or a live cluster."""
from __future__ import annotations

import dataclasses
import gc
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from kplan.api.objects import (
    BUILDERS, Controller, Namespace, Node, Pod, PodDisruptionBudget, PriorityClass, Service, build,
)
from kplan.api.node_metric import snapshot_node_metrics
from kplan.errors import InputError
from kplan.framework import versions
from kplan.sources.files import iter_documents

# Custom resources the seed plugins read, kept as raw dicts in Snapshot.objects[kind]:
# kind -> the apiVersions served for it.
EXTRA_KINDS: dict[str, tuple[str, ...]] = {
    # scheduler-plugins serves scheduling.x-k8s.io; old docs and test helpers use scheduling.sigs.k8s.io.
    "ElasticQuota": ("scheduling.x-k8s.io/v1alpha1", "scheduling.sigs.k8s.io/v1alpha1"),
    "NodeMetric": ("slo.koordinator.sh/v1alpha1",),
}


@dataclass
class Snapshot:
    """Cluster state as typed objects, plus what was skipped and what looked odd."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    namespaces: dict[str, Namespace] = field(default_factory=dict)
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    # What PodTopologySpread's default selector reads: Services, and ReplicaSets, StatefulSets and
    # ReplicationControllers by (kind, namespace, name).
    services: list[Service] = field(default_factory=list)
    controllers: dict[tuple[str, str, str], Controller] = field(default_factory=dict)
    objects: dict[str, list[dict]] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)  # kind -> objects not used
    warnings: Counter = field(default_factory=Counter)  # message -> count
    problems: list[str] = field(default_factory=list)  # per-object problems, e.g. a NodeMetric without usage
    header: dict[str, Any] = field(default_factory=dict)
    kube_version: versions.Version | None = None  # the release (with its patch) the server version maps to
    # Where kube_version comes from: versions.FROM_SNAPSHOT (the header's kubeVersion) or FROM_KUBELET
    # (inferred from the nodes' kubelet versions, newest_kubelet the one it is read from); "" for neither.
    kube_version_source: str = ""
    newest_kubelet: str = ""

    def add(self, obj: dict, source: str, number: int) -> None:
        """Adds one object; unknown kinds are counted in `skipped`."""
        kind = obj.get("kind")
        if kind == "KplanSnapshot":
            self.header = dict(obj.get("metadata") or {})
            return
        if kind in EXTRA_KINDS and obj.get("apiVersion") in EXTRA_KINDS[kind]:
            self.objects.setdefault(kind, []).append(obj)
            return
        if kind not in BUILDERS:
            self.skipped[f"{kind} ({obj.get('apiVersion', '?')})"] += 1
            return
        typed = build(kind, obj, source if number == 1 else f"{source} (document {number})")
        if kind == "Pod":
            self.pods.append(typed)
        elif kind == "Node":
            self.nodes.append(typed)
        elif kind == "Namespace":
            self.namespaces[typed.name] = typed
        elif kind == "PriorityClass":
            self.priority_classes[typed.name] = typed
        elif kind == "Service":
            self.services.append(typed)
        elif kind == "PodDisruptionBudget":
            self.pdbs.append(typed)
        else:
            self.controllers[typed.key] = typed

    def with_objects(self, services: Iterable[Service] = (), controllers: Iterable[Controller] = ()) -> "Snapshot":
        """Returns the snapshot with more Services and controllers, as applying manifests would create
        them (one replaces the snapshot's Service of its namespace and name, or controller of its kind,
        namespace and name)."""
        services, controllers = list(services), list(controllers)
        if not services and not controllers:
            return self
        applied = {(s.namespace, s.name) for s in services}
        kept = [s for s in self.services if (s.namespace, s.name) not in applied]
        return dataclasses.replace(self, services=[*kept, *services],
                                   controllers={**self.controllers, **{c.key: c for c in controllers}})

    def finish(self) -> "Snapshot":
        """Checks consistency and resolves what the API server would have filled in."""
        seen: set[str] = set()
        for node in self.nodes:
            if node.name in seen:
                raise InputError(f"duplicate node name {node.name!r}", node.source)
            seen.add(node.name)
        self.problems.extend(snapshot_node_metrics(self)[1])
        if self.header.get("kubeVersion"):
            self.kube_version, warning = versions.recorded_version(self.header["kubeVersion"])
            self.kube_version_source = versions.FROM_SNAPSHOT
            if warning:
                self.problems.append(warning)
        else:
            self.infer_kube_version()
        for pod in self.pods:
            self.resolve_priority(pod)
            if pod.node_name and pod.node_name not in seen and pod.occupies_node:
                self.warnings["pod(s) bound to a node that is not in the snapshot"] += 1
        return self

    def infer_kube_version(self) -> None:
        """Without a recorded server version, answers as the newest kubelet's release (see
        versions.infer_from_kubelets); nodes without a usable kubelet version are counted only then."""
        inferred = versions.infer_from_kubelets(node.kubelet_version for node in self.nodes)
        if inferred.version is None:
            return
        self.kube_version, self.kube_version_source = inferred.version, versions.FROM_KUBELET
        self.newest_kubelet = inferred.kubelet
        if inferred.warning:
            self.problems.append(inferred.warning)
        if inferred.ignored:
            self.warnings["node(s) report no kubelet version (status.nodeInfo.kubeletVersion) or one that is not "
                          "a Kubernetes version: left out when inferring the release"] += inferred.ignored

    def resolve_priority(self, pod: Pod) -> None:
        """Sets spec.priority as the Priority admission plugin would: class value, global default, or 0."""
        if pod.priority is not None:
            return
        if pod.priority_class_name:
            pc = self.priority_classes.get(pod.priority_class_name)
            if pc is None:
                if pod.priority_class_name not in ("system-cluster-critical", "system-node-critical"):
                    self.warnings[f"PriorityClass {pod.priority_class_name!r} not found (priority 0 used)"] += 1
                pod.priority = SYSTEM_PRIORITIES.get(pod.priority_class_name, 0)
                return
            pod.priority = pc.value
            if not pod.preemption_policy:
                pod.preemption_policy = pc.preemption_policy
            return
        default = next((pc for pc in self.priority_classes.values() if pc.global_default), None)
        pod.priority = default.value if default else 0
        if default and not pod.preemption_policy:
            pod.preemption_policy = default.preemption_policy


# The built-in classes every API server creates (scheduling.SystemPriorityClasses()).
SYSTEM_PRIORITIES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}


@contextmanager
def bulk_allocation() -> Iterator[None]:
    """Pauses the cyclic garbage collector while millions of long-lived objects are built.

    A snapshot's dicts live for the whole run; without this, collections triggered by the
    allocations re-scan them over and over and take more time than parsing. Afterwards they
    are frozen out of later collections.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def load_snapshot(paths: Iterable[str]) -> Snapshot:
    """Loads dumps (files, folders, `-`) into one Snapshot."""
    snapshot = Snapshot()
    with bulk_allocation():
        for path in paths:
            for source, number, obj in iter_documents(path):
                snapshot.add(obj, source, number)
    return snapshot.finish()
