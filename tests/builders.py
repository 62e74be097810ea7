"""Builders of raw Kubernetes objects for tests, in the shape `kubectl get -o json` prints."""
from __future__ import annotations

from typing import Any

from kplan.api.objects import Node, Pod
from kplan.cluster.state import ClusterState


def node(name: str, cpu: str | int = "4", memory: str = "8Gi", pods: int = 110, *, labels=None, taints=None,
         unschedulable: bool = False, images=None, extra=None, annotations=None) -> dict[str, Any]:
    """Returns a Node dict; `extra` adds allocatable resources, `images` maps image name -> bytes."""
    allocatable = {"cpu": str(cpu), "memory": memory, "pods": str(pods), **(extra or {})}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})},
                     "annotations": dict(annotations or {})},
        "spec": {"taints": list(taints or []), **({"unschedulable": True} if unschedulable else {})},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable),
                   "images": [{"names": [n], "sizeBytes": size} for n, size in (images or {}).items()]},
    }


def container(name: str = "c", requests=None, limits=None, *, image: str = "", ports=None,
              restart_policy: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": image or "registry.example/app:1", "resources": {}}
    if requests:
        c["resources"]["requests"] = dict(requests)
    if limits:
        c["resources"]["limits"] = dict(limits)
    if ports:
        c["ports"] = list(ports)
    if restart_policy:
        c["restartPolicy"] = restart_policy
    return c


def pod(name: str = "p", namespace: str = "default", *, node_name: str = "", requests=None, limits=None,
        containers=None, init_containers=None, labels=None, spec=None, phase: str = "",
        owner_kind: str = "", annotations=None) -> dict[str, Any]:
    """Returns a Pod dict with one container (`requests`/`limits`) unless `containers` is given."""
    if containers is None:
        containers = [container(requests=requests, limits=limits)] if (requests or limits) else [container()]
    body: dict[str, Any] = {"containers": containers, **(spec or {})}
    if init_containers:
        body["initContainers"] = init_containers
    if node_name:
        body["nodeName"] = node_name
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}",
                            "labels": dict(labels or {}), "annotations": dict(annotations or {})}
    if owner_kind:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner_kind, "name": "owner",
                                    "uid": "owner-uid", "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body,
            "status": {"phase": phase or ("Running" if node_name else "Pending")}}


def cluster(nodes, pods=()) -> ClusterState:
    """Builds a ClusterState from raw node and pod dicts."""
    return ClusterState([Node(n) for n in nodes], [Pod(p) for p in pods])


def placed(planner, pod):
    """Places one pod as `kplan place` does: (its cycle result, its report entry)."""
    from kplan.report.model import placement
    (pair,) = [(result, placement(result, planner.cluster)) for result in planner.place_each([pod])]
    return pair


def ready(p: dict[str, Any], status: str = "True") -> dict[str, Any]:
    """Returns the Pod dict with its Ready condition set (the disruption controller counts Ready pods healthy)."""
    p["status"]["conditions"] = [{"type": "Ready", "status": status}]
    return p


def pdb(name: str, namespace: str = "default", *, match_labels=None, min_available=None, max_unavailable=None,
        status=None, selector: Any = "from-labels", **spec) -> dict[str, Any]:
    """Returns a PodDisruptionBudget dict (policy/v1); `status` as the disruption controller writes it, or
    none; `selector` overrides the one built from `match_labels` (None: no selector)."""
    body: dict[str, Any] = dict(spec)
    body["selector"] = {"matchLabels": dict(match_labels or {})} if selector == "from-labels" else selector
    if body["selector"] is None:
        del body["selector"]
    if min_available is not None:
        body["minAvailable"] = min_available
    if max_unavailable is not None:
        body["maxUnavailable"] = max_unavailable
    out = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": name, "namespace": namespace}, "spec": body}
    if status is not None:
        out["status"] = dict(status)
    return out
