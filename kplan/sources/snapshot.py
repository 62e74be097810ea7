"""Snapshot: the typed objects of a cluster, as loaded from dumps or a live cluster."""
from __future__ import annotations

import dataclasses
import gc
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from kplan.api.objects import (
    BUILDERS, Controller, Namespace, Node, Pod, PodDisruptionBudget, PriorityClass, Service, build,
)
from kplan.api.storage import PARSERS as STORAGE_PARSERS, StorageObjects, parse as parse_storage
from kplan.api import autoscaling, dra
from kplan.api.autoscaling import HorizontalPodAutoscaler
from kplan.api.node_metric import snapshot_node_metrics
from kplan.api.validation import TAINT_EFFECTS
from kplan.errors import InputError
from kplan.framework import versions
from kplan.sources.files import iter_document_groups

# Custom resources the seed plugins read, kept as raw dicts in Snapshot.objects[kind]:
# kind -> the apiVersions served for it.
EXTRA_KINDS: dict[str, tuple[str, ...]] = {
    # scheduler-plugins serves scheduling.x-k8s.io; old docs and test helpers use scheduling.sigs.k8s.io.
    "ElasticQuota": ("scheduling.x-k8s.io/v1alpha1", "scheduling.sigs.k8s.io/v1alpha1"),
    "NodeMetric": ("slo.koordinator.sh/v1alpha1",),
}
# Workloads `kplan check` rolls out when manifests update them (StatefulSets are controllers, below),
# kept as raw dicts in Snapshot.objects[kind] too.
ROLLED_OUT_KINDS: dict[str, tuple[str, ...]] = {"Deployment": ("apps/v1",), "DaemonSet": ("apps/v1",)}
RAW_KINDS = {**EXTRA_KINDS, **ROLLED_OUT_KINDS}
# Every kind a snapshot reads (the others are counted and skipped).
READ_KINDS = {*BUILDERS, *RAW_KINDS, *STORAGE_PARSERS, *dra.PARSERS, autoscaling.KIND}


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
    # What the volume plugins read: claims, volumes, classes, CSI nodes and drivers, capacities.
    storage: StorageObjects = field(default_factory=StorageObjects)
    # What DynamicResources reads: device classes, resource slices, claims and claim templates.
    devices: dra.DeviceObjects = field(default_factory=dra.DeviceObjects)
    hpas: list[HorizontalPodAutoscaler] = field(default_factory=list)
    objects: dict[str, list[dict]] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)  # "Kind (apiVersion)" -> objects not used
    skip_reasons: dict[str, str] = field(default_factory=dict)  # "Kind (apiVersion)" -> why, when not "kind not used"
    # Files of folders left out: (path, why), why None for a file without a dump suffix (a log, a README).
    skipped_files: list[tuple[str, str | None]] = field(default_factory=list)
    warnings: Counter = field(default_factory=Counter)  # message -> count
    examples: dict[str, list[str]] = field(default_factory=dict)  # message -> what it is about, in order
    problems: list[str] = field(default_factory=list)  # per-object problems, e.g. a NodeMetric without usage
    header: dict[str, Any] = field(default_factory=dict)
    kube_version: versions.Version | None = None  # the release (with its patch) the server version maps to
    # Where kube_version comes from: versions.FROM_SNAPSHOT (the header's kubeVersion) or FROM_KUBELET
    # (inferred from the nodes' kubelet versions, newest_kubelet the one it is read from); "" for neither.
    kube_version_source: str = ""
    newest_kubelet: str = ""

    # (kind, namespace, name) -> (source, document number, raw object) of every object read so far
    _seen: dict[tuple[str, str, str], tuple[str, int, dict]] = field(default_factory=dict, repr=False)

    @property
    def forbidden(self) -> dict[str, str]:
        """The lists the snapshot's reader was refused (resource -> what the answers lack), from its header."""
        recorded = self.header.get("forbidden")
        return dict(recorded) if isinstance(recorded, Mapping) else {}

    def forbidden_fields(self) -> dict[str, Any]:
        """The report field naming what the snapshot lacks: {"forbidden": {...}}, or nothing."""
        return {"forbidden": self.forbidden} if self.forbidden else {}

    def pod(self, key: str) -> Pod | None:
        """The snapshot's pod named namespace/name (compared field by field: no key string per pod)."""
        namespace, _, name = key.partition("/")
        return next((p for p in self.pods if p.name == name and p.namespace == namespace), None)

    def warn(self, message: str, example: str | None = None) -> None:
        """Counts a warning; `example` names what this occurrence is about (a pod, a node)."""
        self.warnings[message] += 1
        if example is not None:
            self.examples.setdefault(message, []).append(example)

    def skip_file(self, path: str, reason: str | None) -> None:
        """Notes a file of a folder that was left out (iter_documents' on_skip)."""
        self.skipped_files.append((path, reason))

    def add(self, obj: dict, source: str, number: int) -> None:
        """Adds one object; unknown kinds are counted in `skipped`, an object read before is
        counted once (a different object under the same kind, namespace and name is an InputError)."""
        kind = obj.get("kind")
        if kind == "KplanSnapshot":
            self.header = dict(obj.get("metadata") or {})
            return
        meta = obj.get("metadata")
        name = meta.get("name") if meta.__class__ is dict else None
        if name and name.__class__ is str:  # one dict operation per object: 150,000 pods load as fast
            seen = (source, number, obj)
            first = self._seen.setdefault((kind, meta.get("namespace") or "", name), seen)
            if first is not seen:
                self._read_again((kind, meta.get("namespace") or "", name), first, obj, source, number)
                return
        elif kind in READ_KINDS:  # nameless: a node "" would take pods, a pod "" could not be named
            self.warn("object(s) without metadata.name, left out", f"{kind} in {_where(source, number)}")
            return
        if kind == "Pod":  # most of a snapshot: straight to its list
            self.pods.append(build(kind, obj, _where(source, number)))
            return
        if kind in RAW_KINDS or kind == autoscaling.KIND:
            api_version = obj.get("apiVersion")
            served = RAW_KINDS.get(kind) or autoscaling.API_VERSIONS
            # Some tools print custom resources without apiVersion (`kubectl get eqs` in koordinator's docs).
            if api_version is None or api_version in served:
                if kind == autoscaling.KIND:
                    self.hpas.append(autoscaling.parse_hpa(obj, _where(source, number)))
                else:
                    self.objects.setdefault(kind, []).append(obj)
                return
            label = f"{kind} ({api_version})"
            self.skipped[label] += 1
            self.skip_reasons[label] = f"apiVersion not one kplan reads for {kind} ({', '.join(served)})"
            return
        if kind in STORAGE_PARSERS:
            self.storage.add(parse_storage(kind, obj, _where(source, number)))
            return
        if kind in dra.PARSERS:
            self._add_device_object(kind, obj, source, number)
            return
        if kind not in BUILDERS:
            self.skipped[f"{kind} ({obj.get('apiVersion', 'no apiVersion')})"] += 1
            return
        typed = build(kind, obj, _where(source, number))
        if kind == "Node":
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
            if kind == "StatefulSet":  # also what runs, for rollouts (manifests replace the controllers)
                self.objects.setdefault(kind, []).append(obj)

    def _add_device_object(self, kind: str, obj: dict, source: str, number: int) -> None:
        api_version = obj.get("apiVersion")
        if dra.reads(kind, api_version):
            self.devices.add(dra.parse(kind, obj, _where(source, number)))
            return
        label = f"{kind} ({api_version})"
        self.skipped[label] += 1
        self.skip_reasons[label] = f"apiVersion not one kplan reads for {kind} ({', '.join(dra.API_VERSIONS)})"

    def _read_again(self, key: tuple[str, str, str], first: tuple[str, int, dict], obj: dict, source: str,
                    number: int) -> None:
        """The same object read twice (overlapping dumps) counts once; two objects under one name are an
        error, unless kplan does not use their kind (then the first is counted and the second ignored)."""
        kind, namespace, name = key
        if kind not in BUILDERS and kind not in RAW_KINDS and kind not in STORAGE_PARSERS and kind not in dra.PARSERS \
                and kind != autoscaling.KIND:
            return
        what = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
        first_source, first_number, first_obj = first
        here, there = _where(source, number), _where(first_source, first_number)
        uid, first_uid = (obj.get("metadata") or {}).get("uid"), (first_obj.get("metadata") or {}).get("uid")
        if uid and first_uid and uid != first_uid:
            raise InputError(f"two different objects named {what} (uid {first_uid} in {there}, uid {uid} in {here})")
        if not _same_content(obj, first_obj):
            raise InputError(f"two different objects named {what} (same name, different content): {there} and {here}")
        self.warn("object(s) read twice, counted once", f"{what} ({there} and {here})")

    def with_objects(self, services: Iterable[Service] = (), controllers: Iterable[Controller] = (),
                     storage: Iterable[Any] = (), devices: Iterable[Any] = ()) -> "Snapshot":
        """Returns the snapshot with more Services, controllers, storage objects and DRA objects, as
        applying manifests would create them (one replaces the snapshot's object of its kind, namespace
        and name)."""
        services, controllers, storage, devices = list(services), list(controllers), list(storage), list(devices)
        if not services and not controllers and not storage and not devices:
            return self
        applied = {(s.namespace, s.name) for s in services}
        kept = [s for s in self.services if (s.namespace, s.name) not in applied]
        return dataclasses.replace(self, services=[*kept, *services],
                                   controllers={**self.controllers, **{c.key: c for c in controllers}},
                                   storage=self.storage.with_objects(storage),
                                   devices=self.devices.with_objects(devices))

    def finish(self) -> "Snapshot":
        """Checks consistency and resolves what the API server would have filled in."""
        self._seen = {}  # only loading needs it
        seen = {node.name for node in self.nodes}
        for node in self.nodes:
            if not (node.raw.get("status") or {}).get("allocatable"):
                self.warn("node(s) without status.allocatable (kube-scheduler reads only allocatable: nothing fits "
                          "on them)", node.name)
            for taint in node.taints:
                if taint.effect not in TAINT_EFFECTS:
                    self.warn(f"taint(s) of an effect kube-scheduler does not know (not {', '.join(TAINT_EFFECTS)}: "
                              "no filter or score reads them)", f"{node.name} {taint.key}={taint.value}:{taint.effect}")
        metrics, problems = snapshot_node_metrics(self)
        for name in metrics:
            if name not in seen:
                self.warn("NodeMetric(s) for node(s) not in the snapshot (not used)", name)
        self.problems.extend(problems)
        self.problems.extend(forbidden_lines(self.forbidden))
        if self.header.get("kubeVersion"):
            self.kube_version, warning = versions.recorded_version(self.header["kubeVersion"])
            self.kube_version_source = versions.FROM_SNAPSHOT
            if warning:
                self.problems.append(warning)
        else:
            self.infer_kube_version()
        resolve_priority = self.resolve_priority
        for pod in self.pods:
            if pod.priority is None:  # a dump of admitted pods has them all set (no call per pod)
                resolve_priority(pod)
            if pod.node_name and pod.node_name not in seen and pod.occupies_node:
                self.warn("pod(s) bound to a node that is not in the snapshot",
                          f"{pod.namespace}/{pod.name} on {pod.node_name}")
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
                    self.warn(f"PriorityClass {pod.priority_class_name!r} not found (priority 0 used)",
                              f"{pod.namespace}/{pod.name}")
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


def forbidden_lines(forbidden: Mapping[str, str]) -> list[str]:
    """One warning per list a read-only role was refused: `services forbidden: default topology …`."""
    return [f"{resource} forbidden: {lost}" for resource, lost in forbidden.items()]


def _where(source: str, number: int) -> str:
    return source if number == 1 else f"{source} (document {number})"


def _same_content(a: dict, b: dict) -> bool:
    """Whether two objects of one kind and name are the same, whatever kind and apiVersion each
    spells out (a typed list's items omit them)."""
    ignored = ("kind", "apiVersion")
    return ({k: v for k, v in a.items() if k not in ignored} == {k: v for k, v in b.items() if k not in ignored})


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
    add = snapshot.add
    with bulk_allocation():
        for path in paths:
            for source, number, objects in iter_document_groups(path, on_skip=snapshot.skip_file):
                for obj in objects:
                    add(obj, source, number)
    return snapshot.finish()
