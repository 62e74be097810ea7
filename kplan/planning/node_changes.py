"""What-if node changes: add copies of a node, remove, cordon or drain nodes.

`apply_node_changes` is a pure transformation of a Snapshot (a new Snapshot; the input is not
modified), done before the ClusterState is built. A drain also returns the evicted pods, which
`replace_evicted` places again through a Planner, first and in priority order, as evictions of
a drain would; `what_if` does both and returns the snapshot with the re-placed pods bound.
A drain evicts as `kubectl drain` does, through the eviction API: an eviction a
PodDisruptionBudget refuses leaves the pod on its cordoned node (reported as blocked), unless
`force_drain` deletes the pods without asking the budgets.

Nodes are named, or chosen with a label selector in kubectl's -l syntax (`pool=gpu`,
`zone in (a,b)`, `!spot`): an argument that is a node's name is that node, else a selector.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from kplan.api import dra
from kplan.api.objects import Node, Pod, build
from kplan.api.selector_syntax import parse_selector
from kplan.api.validation import validate_node
from kplan.cluster.devices import released
from kplan.errors import InputError
from kplan.planning.disruption_budgets import Budgets
from kplan.sources.snapshot import Snapshot

UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


@dataclass
class NodeChanges:
    """The what-if options of a command."""

    add: Sequence[str] = ()  # FILE[:COUNT]
    remove: Sequence[str] = ()
    cordon: Sequence[str] = ()
    drain: Sequence[str] = ()
    force_drain: bool = False  # delete the drained pods without asking their PodDisruptionBudgets

    def __bool__(self) -> bool:
        return bool(self.add or self.remove or self.cordon or self.drain)


@dataclass
class ChangeReport:
    """What the changes did: nodes added/removed/cordoned/drained, pods dropped, evicted, re-placed."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    cordoned: list[str] = field(default_factory=list)
    drained: list[str] = field(default_factory=list)
    dropped_pods: list[str] = field(default_factory=list)  # pods of removed nodes
    evicted: list[Pod] = field(default_factory=list)  # unbound copies of the drained pods, in eviction order
    evicted_from: dict[str, str] = field(default_factory=dict)  # pod key -> drained node
    replaced: dict[str, str] = field(default_factory=dict)  # pod key -> new node
    unplaced: dict[str, str] = field(default_factory=dict)  # pod key -> FailedScheduling message
    # pod key -> {"node", "pdb", "reason"}: evictions a PodDisruptionBudget refused (the pod stays)
    blocked: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return bool(self.unplaced or self.blocked)

    def first_failure(self) -> str:
        """The first drained pod that could not be placed, else the first eviction refused ("" for none)."""
        for key, message in self.unplaced.items():
            return f"drained pod {key}: {message}"
        for key, entry in self.blocked.items():
            return f"drained pod {key}: eviction refused: {entry['reason']}"
        return ""


# -- choosing nodes ------------------------------------------------------------------------------

def _matches(req: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = req["key"], req["operator"], req.get("values") or []
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if key not in labels:
        return False
    try:
        have, want = int(labels[key]), int(values[0])
    except ValueError:
        return False
    return have > want if op == "Gt" else have < want


def select_nodes(nodes: Sequence[Node], arg: str, option: str) -> list[str]:
    """Returns the names of the nodes an argument picks: the node of that name, else the selector's."""
    if any(n.name == arg for n in nodes):
        return [arg]
    try:
        reqs = parse_selector(arg)
    except InputError as err:
        raise InputError(f"{option} {arg!r}: no node of that name, and not a label selector ({err})") from None
    names = [n.name for n in nodes if all(_matches(r, n.labels) for r in reqs)] if reqs else []
    if not names:
        raise InputError(f"{option} {arg!r}: no node of that name or with those labels")
    return names


# -- the transformation --------------------------------------------------------------------------

def _node_template(spec: str) -> tuple[dict, int | None, str]:
    path, count = spec, None
    head, sep, tail = spec.rpartition(":")
    if sep and tail == "auto":
        raise InputError(f"--add-node {spec!r}: FILE:auto (find the count) works only with kplan check and "
                         "kplan capacity --replicas N")
    if sep and tail.isdigit():
        path, count = head, int(tail)
        if count < 1:
            raise InputError(f"--add-node {spec!r}: COUNT must be at least 1")
    from kplan.api.field_validation import active
    from kplan.sources.files import iter_documents
    found = [(src, number, obj) for src, number, obj in iter_documents(path, manifests=True)
             if obj.get("kind") == "Node"]
    if len(found) != 1:
        raise InputError(f"--add-node: expected one Node in the file, found {len(found)}", path)
    source, number, raw = found[0]
    active().check(raw, source if number == 1 else f"{source} (document {number})")
    return raw, count, source


def _template_slices(spec: str) -> list[tuple[str, int, dict]]:
    """The ResourceSlices of a node template's file: the devices each copy of the node publishes."""
    from kplan.sources.files import iter_documents
    head, sep, tail = spec.rpartition(":")
    path = head if sep and tail.isdigit() else spec
    return [(src, number, obj) for src, number, obj in iter_documents(path) if obj.get("kind") == dra.RESOURCE_SLICE]


def _with_added_slices(devices: dra.DeviceObjects, specs: Sequence[str], added: Sequence[str]) -> dra.DeviceObjects:
    """The template files' ResourceSlices, one set per added node: renamed after the copy (slice and pool
    names have the template node's name replaced, or the copy's appended) and local to it."""
    new = []
    for spec in specs:
        slices = _template_slices(spec)
        if not slices:
            continue
        raw, _, _ = _node_template(spec)
        base = (raw.get("metadata") or {}).get("name") or ""
        copies = [n for n in added if n == base or n.startswith(f"{base}-")]
        for src, number, obj in slices:
            if (obj.get("spec") or {}).get("nodeName") != base:
                raise InputError(f"--add-node: ResourceSlice {(obj.get('metadata') or {}).get('name')!r} is not "
                                 f"local to the template node {base!r} (spec.nodeName)", src)
            for name in copies:
                new.append(dra.parse(dra.RESOURCE_SLICE, _slice_for(obj, base, name), src))
    return devices.with_objects(new) if new else devices


def _slice_for(raw: Mapping, base: str, name: str) -> dict:
    def renamed(text: str) -> str:
        return text.replace(base, name) if base in text else f"{text}-{name}"
    new = copy.deepcopy(dict(raw))
    meta, spec = new.setdefault("metadata", {}), new.setdefault("spec", {})
    meta["name"] = renamed(meta.get("name") or "slice")
    spec["nodeName"] = name
    pool = spec.setdefault("pool", {})
    pool["name"] = renamed(pool.get("name") or "pool")
    return new


def _renamed(raw: Mapping, name: str) -> dict:
    new = copy.deepcopy(dict(raw))
    meta = new.setdefault("metadata", {})
    meta["name"] = name
    labels = meta.get("labels")
    if labels and "kubernetes.io/hostname" in labels:  # cluster-autoscaler's sanitizeNode: whatever it was
        labels["kubernetes.io/hostname"] = name
    return new


def _cordoned(node: Node) -> Node:
    """Returns the node with spec.unschedulable and the node.kubernetes.io/unschedulable:NoSchedule taint."""
    raw = copy.deepcopy(dict(node.raw))
    spec = raw.setdefault("spec", {}) or {}
    raw["spec"] = spec
    spec["unschedulable"] = True
    taints = list(spec.get("taints") or [])
    if not any(t.get("key") == UNSCHEDULABLE_TAINT["key"] and t.get("effect") == "NoSchedule" for t in taints):
        taints.append(dict(UNSCHEDULABLE_TAINT))
    spec["taints"] = taints
    return build("Node", raw, node.source)


def evictable(pod: Pod) -> bool:
    """Tells whether a drain evicts the pod: not a DaemonSet pod, not a mirror (static) pod."""
    return pod.owner_kind != "DaemonSet" and MIRROR_ANNOTATION not in pod.annotations


def eviction_order(pods: Sequence[Pod]) -> list[Pod]:
    """Evicted pods re-enter the queue: the highest priority is scheduled first (PrioritySort)."""
    return sorted(pods, key=lambda p: -(p.priority or 0))


def unbound(pod: Pod) -> Pod:
    """An unbound, pending copy of the pod: what its controller recreates after an eviction."""
    raw = dict(pod.raw)
    raw["spec"] = {k: v for k, v in (pod.raw.get("spec") or {}).items() if k != "nodeName"}
    raw["status"] = {"phase": "Pending"}
    new = build("Pod", raw, pod.source)
    new.priority = pod.priority
    new.preemption_policy = pod.preemption_policy
    return new


def apply_node_changes(snapshot: Snapshot, changes: NodeChanges) -> tuple[Snapshot, ChangeReport]:
    """Returns a new Snapshot with the changes applied (add, remove, cordon, drain in that order)."""
    report = ChangeReport()
    nodes = list(snapshot.nodes)
    taken = {n.name for n in nodes}
    for spec in changes.add:
        raw, count, source = _node_template(spec)
        validate_node(raw, source)
        base = (raw.get("metadata") or {}).get("name") or ""
        if not base:
            raise InputError("--add-node: the Node has no metadata.name", source)
        names = [base] if count is None or count == 1 else [f"{base}-{k}" for k in range(1, count + 1)]
        for name in names:
            if name in taken:
                raise InputError(f"--add-node: a node named {name!r} already exists", source)
            taken.add(name)
            nodes.append(build("Node", _renamed(raw, name), source))
            report.added.append(name)
    removed: set[str] = set()
    for arg in changes.remove:
        removed.update(select_nodes(nodes, arg, "--remove-node"))
    report.removed = [n.name for n in nodes if n.name in removed]
    nodes = [n for n in nodes if n.name not in removed]
    cordon: set[str] = set()
    for arg in changes.cordon:
        cordon.update(select_nodes(nodes, arg, "--cordon"))
    drain: set[str] = set()
    for arg in changes.drain:
        drain.update(select_nodes(nodes, arg, "--drain"))
    nodes = [_cordoned(n) if n.name in cordon | drain else n for n in nodes]
    report.cordoned = [n.name for n in nodes if n.name in cordon]
    report.drained = [n.name for n in nodes if n.name in drain]
    pods: list[Pod] = []
    evicted: list[Pod] = []
    for pod in snapshot.pods:
        if pod.node_name in removed:
            if pod.occupies_node:
                report.dropped_pods.append(pod.key)
            continue
        if pod.node_name in drain and pod.occupies_node and evictable(pod):
            evicted.append(pod)
        pods.append(pod)
    evicted = eviction_order(evicted)
    budgets = Budgets.of(snapshot) if evicted and not changes.force_drain else None
    gone: set[int] = set()
    for pod in evicted:
        if budgets is not None:
            budget, refusal = budgets.evict(pod)
            if refusal:  # the pod stays on its cordoned node
                report.blocked[pod.key] = {"node": pod.node_name, "pdb": budget.key if budget else "",
                                           "reason": refusal}
                continue
        gone.add(id(pod))
        new = unbound(pod)
        report.evicted.append(new)
        report.evicted_from[new.key] = pod.node_name
    if gone:
        pods = [p for p in pods if id(p) not in gone]
    deleted = [p for p in snapshot.pods if p.node_name in removed or id(p) in gone]
    devices = released(_with_added_slices(snapshot.devices, changes.add, report.added), deleted)
    return dataclasses.replace(snapshot, nodes=nodes, pods=pods, devices=devices), report


def replace_evicted(planner, report: ChangeReport, stop_at_failure: bool = False) -> list[Pod]:
    """Places the evicted pods through the planner, in order; returns them bound to their new nodes.
    With `stop_at_failure` the pods after the first that fits nowhere are not tried."""
    from kplan.framework.runtime import SCHEDULED
    bound = []
    for pod in report.evicted:
        if stop_at_failure and report.unplaced:
            break
        result = planner.schedule_alone(pod)
        if result.outcome == SCHEDULED:
            node = planner.cluster.names[result.node]
            report.replaced[pod.key] = node
            raw = {**result.pod.raw, "spec": {**(pod.raw.get("spec") or {}), "nodeName": node},
                   "status": {**(result.pod.raw.get("status") or {}), "phase": "Running"}}
            placed = build("Pod", raw, pod.source)
            placed.priority, placed.preemption_policy = pod.priority, pod.preemption_policy
            bound.append(placed)
        else:
            report.unplaced[pod.key] = result.message or result.outcome
    return bound


def what_if(snapshot: Snapshot, changes: NodeChanges, profiles=None, profile: str | None = None,
            kube_version: str | None = None, now=None) -> tuple[Snapshot, ChangeReport]:
    """Applies the changes and re-places drained pods; returns the snapshot as it would then be."""
    new, report = apply_node_changes(snapshot, changes)
    if report.evicted:
        from kplan.framework.config import default_profile
        from kplan.planning.place import Planner
        planner = Planner(new, profiles or [default_profile()], profile, kube_version=kube_version, now=now)
        new = dataclasses.replace(new, pods=[*new.pods, *replace_evicted(planner, report)],
                                  devices=planner.cluster.devices.objects())
    return new, report
