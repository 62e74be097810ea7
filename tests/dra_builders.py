"""Builders of DRA objects (resource.k8s.io/v1) for tests, in the shape `kubectl get -o json` prints."""
from __future__ import annotations

from typing import Any

V1 = "resource.k8s.io/v1"
DRIVER = "gpu.example.com"


def device_class(name: str = DRIVER, *expressions: str) -> dict[str, Any]:
    """A DeviceClass; without expressions it selects the devices of the driver named like it."""
    expressions = expressions or (f'device.driver == "{name}"',)
    return {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": e}} for e in expressions]}}


def device(name: str, capacity: dict | None = None, **attributes: Any) -> dict[str, Any]:
    """A device; attributes as Python values (int, bool, str; a "v:" prefix makes a version)."""
    def typed(v):
        if isinstance(v, bool):
            return {"bool": v}
        if isinstance(v, int):
            return {"int": v}
        return {"version": v[2:]} if v.startswith("v:") else {"string": v}
    return {"name": name, "attributes": {k: typed(v) for k, v in attributes.items()},
            "capacity": {k: {"value": v} for k, v in (capacity or {}).items()}}


def gpus(n: int, **attributes: Any) -> list[dict[str, Any]]:
    return [device(f"gpu-{k}", **attributes) for k in range(n)]


def resource_slice(node: str, devices: list[dict], driver: str = DRIVER, *, pool: str | None = None,
                   name: str | None = None, generation: int = 1, count: int = 1, **spec: Any) -> dict[str, Any]:
    """A slice local to `node` (node="" and spec=nodeSelector/allNodes for other kinds)."""
    where = {"nodeName": node} if node else {}
    return {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": name or f"{node or pool}-{driver}"},
            "spec": {"driver": driver, **where, **spec,
                     "pool": {"name": pool or node, "generation": generation, "resourceSliceCount": count},
                     "devices": devices}}


def exact(name: str = "gpu", device_class_name: str = DRIVER, count: int | None = 1, *, mode: str | None = None,
          selectors: tuple[str, ...] = (), admin: bool | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": device_class_name}
    if mode:
        body["allocationMode"] = mode
    if count is not None and mode != "All":
        body["count"] = count
    if selectors:
        body["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if admin is not None:
        body["adminAccess"] = admin
    return {"name": name, "exactly": body}


def first_available(name: str, *alternatives: tuple[str, str, int]) -> dict[str, Any]:
    """A request with firstAvailable alternatives (name, class, count)."""
    return {"name": name, "firstAvailable": [{"name": n, "deviceClassName": c, "count": k}
                                             for n, c, k in alternatives]}


def allocation(node: str, *devices: str, request: str = "gpu", driver: str = DRIVER,
               pool: str | None = None) -> dict[str, Any]:
    return {"devices": {"results": [{"request": request, "driver": driver, "pool": pool or node, "device": d}
                                    for d in devices]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}


def claim(name: str, *requests: dict, namespace: str = "default", constraints: list | None = None,
          allocated: dict | None = None, reserved_for: list[str] = (), owner_pod: str = "") -> dict[str, Any]:
    """A ResourceClaim; `reserved_for` names pods of its namespace (uid uid-<ns>-<name>, as builders.pod)."""
    spec: dict[str, Any] = {"devices": {"requests": list(requests or (exact(),))}}
    if constraints:
        spec["devices"]["constraints"] = constraints
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"claim-{namespace}-{name}"}
    if owner_pod:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner_pod,
                                    "uid": f"uid-{namespace}-{owner_pod}", "controller": True}]
    out: dict[str, Any] = {"apiVersion": V1, "kind": "ResourceClaim", "metadata": meta, "spec": spec}
    if allocated is not None:
        out["status"] = {"allocation": allocated,
                         "reservedFor": [{"resource": "pods", "name": p, "uid": f"uid-{namespace}-{p}"}
                                         for p in reserved_for]}
    return out


def template(name: str, *requests: dict, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "ResourceClaimTemplate", "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": list(requests or (exact(),))}}}}


def with_claims(pod: dict[str, Any], **claims: str) -> dict[str, Any]:
    """The pod with spec.resourceClaims: name -> claim name, or "template:<name>" for a template."""
    refs = []
    for name, ref in claims.items():
        if ref.startswith("template:"):
            refs.append({"name": name, "resourceClaimTemplateName": ref[len("template:"):]})
        else:
            refs.append({"name": name, "resourceClaimName": ref})
    pod["spec"]["resourceClaims"] = refs
    for c in pod["spec"]["containers"]:
        c.setdefault("resources", {})["claims"] = [{"name": n} for n in claims]
    return pod
