"""Devices next to the node table: the DRA objects indexed, the run's allocations, and per-node
device counts.

kube-scheduler's DynamicResources reads claims through an assume cache: the claims as the cluster
holds them, with the allocations its Reserve made (in flight until PreBind writes them) on top.
kplan keeps the same view as `claims`, a dict of the run's claims by (namespace, name): a claim the
run allocates, reserves for a pod or deallocates is replaced there by a new record, so the loaded
objects never change and a copy of the dict is a copy of the view (kplan compare, what-ifs).

- Reserve on the chosen node records the pod's allocations as pending (`reserve`); they become
  the claims' status when the pod is assumed onto the node (PreBind: allocation written, the pod
  added to reservedFor), through ClusterState.assume -> `pod_added`. A placement that is not kept
  (a preview, an independent placement) leaves the claims as they were.
- Devices count as allocated while a claim holds them (ListAllAllocatedDevices): evicting a pod
  frees nothing until its claims are deallocated, as in a cluster before the resourceclaim
  controller reacts.
- Claims from templates: a pod the run places whose spec names a ResourceClaimTemplate gets the
  claim the resourceclaim controller would create for it (`pod_with_claims`), named
  <pod>-<claim>-<suffix> and owned by the pod.

The pools each node can allocate from (GatherPools) are worked out once per run. Devices of pools
local to one node (a slice with spec.nodeName, complete and valid) also form a flat table over
which the common claims are counted per node with numpy (kplan.plugins.structured_allocator).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

import numpy as np

from kplan.api.device_cel import CelError, Environment
from kplan.api.dra import (
    Allocation, Consumer, Device, DeviceClass, DeviceObjects, ExactRequest, ResourceClaim,
    ResourceSlice,
)
from kplan.api.node_selectors import node_selector_terms_mask
from kplan.api.objects import Pod

if TYPE_CHECKING:
    from kplan.cluster.state import ClusterState

DeviceID = tuple[str, str, str]  # driver, pool, device


@dataclass(frozen=True)
class Pool:
    """The slices of one pool that a node sees (GatherPools' Pool): incomplete pools have none."""

    driver: str
    name: str
    slices: tuple[ResourceSlice, ...]
    incomplete: bool = False
    invalid: str = ""

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.name}"


@dataclass(frozen=True)
class PoolSettings:
    """What the release's feature gates change in which slices and devices count."""

    partitionable: bool = False  # DRAPartitionableDevices


def _reachable(slc: ResourceSlice, settings: PoolSettings) -> bool:
    """Slices GatherPools considers at all: without partitionable devices, none with shared counters or
    per-device node selection; and none of an unknown kind of node selection."""
    if not settings.partitionable and (slc.per_device_node_selection or slc.shared_counters):
        return False
    return bool(slc.node_name or slc.all_nodes or slc.node_selector is not None)


def gather_pools(for_node: list[ResourceSlice], all_slices: list[ResourceSlice]) -> tuple[Pool, ...]:
    """GatherPools for one node from the slices that reach it: per pool the newest generation; a pool
    missing slices of that generation is incomplete unless a newer generation exists elsewhere (then
    it is obsolete and left out); one with a device name twice is invalid. Pools are ordered by driver
    and name, slices by name (upstream's order is a map's: kplan fixes one)."""
    by_pool: dict[tuple[str, str], list[ResourceSlice]] = {}
    for slc in for_node:
        kept = by_pool.get((slc.driver, slc.pool))
        if kept is None or slc.generation > kept[0].generation:
            by_pool[(slc.driver, slc.pool)] = [slc]
        elif slc.generation == kept[0].generation:
            kept.append(slc)
    pools = []
    for (driver, name), slices in sorted(by_pool.items()):
        slices.sort(key=lambda s: s.name)
        generation, wanted = slices[0].generation, slices[0].slice_count
        if len(slices) != wanted:
            same = [s for s in all_slices if s.driver == driver and s.pool == name]
            if any(s.generation > generation for s in same):
                continue  # obsolete: the driver is replacing this generation
            if sum(1 for s in same if s.generation == generation) != wanted:
                pools.append(Pool(driver, name, (), incomplete=True))
                continue
        names = [d.name for s in slices for d in s.devices]
        duplicate = next((n for i, n in enumerate(names) if n in names[:i]), None)
        invalid = f"duplicate device name {duplicate}" if duplicate is not None else ""
        pools.append(Pool(driver, name, tuple(slices), invalid=invalid))
    return tuple(pools)


class DeviceState:
    """The DRA objects of a run, its allocations, and the pools and devices each node can use."""

    def __init__(self, objects: DeviceObjects, cluster: "ClusterState", settings: PoolSettings | None = None):
        self.cluster = cluster
        self.settings = settings or PoolSettings()
        self.classes: dict[str, DeviceClass] = objects.classes
        self.templates = objects.templates
        self.slices = sorted(objects.slices.values(), key=lambda s: s.name)
        self.claims: dict[tuple[str, str], ResourceClaim] = dict(objects.claims)
        self.pending: dict[str, list[tuple[tuple[str, str], Allocation | None]]] = {}  # pod uid -> Reserve's work
        self._allocated: dict[DeviceID, int] | None = None  # device -> claims holding it
        self._pools: list[tuple[Pool, ...]] | None = None
        self._entries: "DeviceTable | None" = None
        self.cel: Environment | None = None
        self._selected: dict[tuple, bool | str] = {}  # (request signature, driver, content) -> match or error

    def clone(self, cluster: "ClusterState") -> "DeviceState":
        """A copy for another run over a copy of the node table (kplan compare)."""
        new = object.__new__(DeviceState)
        new.__dict__.update(self.__dict__)
        new.cluster = cluster
        new.claims = dict(self.claims)
        new.pending = {k: list(v) for k, v in self.pending.items()}
        new._allocated = dict(self._allocated) if self._allocated is not None else None
        new._entries = self._entries.clone() if self._entries is not None else None
        return new

    def over(self, cluster: "ClusterState") -> "DeviceState":
        """This run's claims over another table of the run whose rows changed (nodes taken out): the
        pools and devices per node position are worked out again on use."""
        new = self.clone(cluster)
        new._pools = new._entries = None
        return new

    def __bool__(self) -> bool:
        return bool(self.classes or self.slices or self.claims or self.templates)

    # -- claims -------------------------------------------------------------------------------------

    def claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return self.claims.get((namespace, name))

    def pod_with_claims(self, pod: Pod) -> Pod:
        """The resourceclaim controller for a pod the run places: each pod claim naming a template that
        exists and has no claim in the pod's status yet gets one, created from the template, named
        <pod>-<claim>-<suffix> (the suffix derived from the pod, as kplan names replicas) and owned by
        the pod; the pod is returned with status.resourceClaimStatuses naming them."""
        from kplan.api.workloads import name_suffix
        statuses = list((pod.raw.get("status") or {}).get("resourceClaimStatuses") or ())
        named = {s.get("name") for s in statuses if isinstance(s, Mapping)}
        created = []
        for pod_claim in pod.spec.get("resourceClaims") or ():
            if not isinstance(pod_claim, Mapping) or pod_claim.get("resourceClaimName"):
                continue
            template = self.templates.get((pod.namespace, pod_claim.get("resourceClaimTemplateName") or ""))
            if template is None or pod_claim.get("name") in named:
                continue
            name = claim_base_name(pod.name, str(pod_claim.get("name") or "")) + name_suffix(pod.uid, 0)
            self.claims.setdefault((pod.namespace, name), ResourceClaim(
                pod.namespace, name, f"{pod.uid}/{pod_claim.get('name')}", template.spec, None, (), False, pod.uid,
                template.source))
            created.append({"name": pod_claim.get("name"), "resourceClaimName": name})
        if not created:
            return pod
        self.cluster.generation += 1
        raw = {**pod.raw, "status": {**(pod.raw.get("status") or {}), "resourceClaimStatuses": statuses + created}}
        made = Pod(raw, pod.source)
        made.priority, made.preemption_policy = pod.priority, pod.preemption_policy
        return made

    # -- allocated devices ----------------------------------------------------------------------------

    def allocated(self) -> dict[DeviceID, int]:
        """The devices claims hold (admin access results excepted), with how many claims hold each."""
        if self._allocated is None:
            held: dict[DeviceID, int] = {}
            for claim in self.claims.values():
                for device in _held(claim):
                    held[device] = held.get(device, 0) + 1
            self._allocated = held
        return self._allocated

    def holders(self, device: DeviceID) -> list[ResourceClaim]:
        """The claims holding a device (for explanations: a scan of the claims)."""
        return [c for c in sorted(self.claims.values(), key=lambda c: c.key) if device in _held(c)]

    def _set_claim(self, claim: ResourceClaim) -> None:
        """Replaces the run's view of a claim, keeping the allocated devices and the table in step."""
        self.cluster.generation += 1
        old = self.claims.get(claim.key)
        if self._allocated is not None:
            for device in _held(old) if old is not None else ():
                left = self._allocated[device] - 1
                if left:
                    self._allocated[device] = left
                else:
                    del self._allocated[device]
                    if self._entries is not None:
                        self._entries.set_allocated(device, False)
            for device in _held(claim):
                self._allocated[device] = self._allocated.get(device, 0) + 1
                if self._entries is not None:
                    self._entries.set_allocated(device, True)
        self.claims[claim.key] = claim

    def reserve(self, pod: Pod, work: list[tuple[tuple[str, str], Allocation | None]]) -> None:
        """Reserve: what the pod's claims get once it is bound (an allocation for those Filter allocated,
        None for those allocated already), applied by pod_added."""
        self.pending[pod.uid] = work

    def unreserve(self, pod: Pod) -> None:
        self.pending.pop(pod.uid, None)

    def deallocate(self, key: tuple[str, str]) -> None:
        """PostFilter's deallocation: the claim without allocation and reservations."""
        claim = self.claims[key]
        self._set_claim(dataclasses.replace(claim, allocation=None, reserved_for=()))

    def pod_added(self, pod: Pod, i: int) -> None:
        """PreBind for a pod assumed onto node i: pending allocations written, the pod reserved."""
        work = self.pending.pop(pod.uid, None)
        if not work:
            return
        consumer = Consumer("pods", pod.name, pod.uid)
        for key, allocation in work:
            claim = self.claims[key]
            if allocation is not None:
                claim = dataclasses.replace(claim, allocation=allocation)
            if consumer not in claim.reserved_for:
                claim = dataclasses.replace(claim, reserved_for=(*claim.reserved_for, consumer))
            self._set_claim(claim)

    def objects(self) -> DeviceObjects:
        """The run's DRA objects (its claims as the run left them), for a snapshot drawn from it."""
        return DeviceObjects(dict(self.classes), {s.name: s for s in self.slices}, dict(self.claims),
                             dict(self.templates))

    def release(self, pod: Pod) -> None:
        """The resourceclaim controller once a pod is deleted (see `released`)."""
        for key, claim in list(self.claims.items()):
            if claim.owner_pod_uid == pod.uid:
                self._set_claim(dataclasses.replace(claim, allocation=None, reserved_for=()))
                del self.claims[key]
            elif any(c.uid == pod.uid for c in claim.reserved_for):
                self._set_claim(_unreserved(claim, pod.uid))

    def pod_removed(self, pod: Pod, i: int) -> None:
        """A pod leaving a node keeps its claims allocated and reserved (the resourceclaim controller,
        which would release them, does not run in a what-if)."""

    # -- pools and devices per node ---------------------------------------------------------------------

    def pools(self, i: int) -> tuple[Pool, ...]:
        """The pools node i can allocate from, worked out for every node on first use."""
        if self._pools is None:
            self._pools = self._gather()
        return self._pools[i]

    def _gather(self) -> list[tuple[Pool, ...]]:
        cluster = self.cluster
        reachable = [s for s in self.slices if _reachable(s, self.settings)]
        per_node: list[list[ResourceSlice]] = [[] for _ in range(cluster.n)]
        for slc in reachable:
            if slc.node_name:
                if slc.node_name in cluster.index:
                    per_node[cluster.index[slc.node_name]].append(slc)
                continue
            mask = (np.ones(cluster.n, dtype=bool) if slc.all_nodes
                    else node_selector_terms_mask(slc.node_selector, cluster))
            for i in np.flatnonzero(mask).tolist():
                per_node[i].append(slc)
        shared: dict[tuple[str, ...], tuple[Pool, ...]] = {}
        out = []
        for slices in per_node:
            key = tuple(s.name for s in slices)
            if key not in shared:
                shared[key] = gather_pools(slices, reachable) if slices else ()
            out.append(shared[key])
        return out

    def table(self) -> "DeviceTable":
        """The devices of pools local to one node, as arrays over devices (built on first use)."""
        if self._entries is None:
            self._entries = DeviceTable(self)
        return self._entries

    # -- selectors ----------------------------------------------------------------------------------

    def environment(self) -> Environment:
        if self.cel is None:
            self.cel = Environment()
        return self.cel

    def selection(self, request: ExactRequest, driver: str, device: Device,
                  owner: Callable[[], str]) -> bool | str:
        """Whether a device matches the request's class selectors, then its own ones: True, False, or
        the allocator's error text for an expression that fails (compile or runtime), cached per run
        for devices alike. `owner` names the claim for the request's own selectors."""
        key = (request.signature, driver, device.content)
        hit = self._selected.get(key)
        if hit is not None:
            return hit
        cls = self.classes[request.device_class]
        hit = (self._match(cls.selectors, f"class {cls.name}", driver, device)
               if cls.selectors else True)
        if hit is True and request.selectors:
            hit = self._match(request.selectors, f"claim {owner()}", driver, device)
        self._selected[key] = hit
        return hit

    def _match(self, expressions: Iterable[str], who: str, driver: str, device: Device) -> bool | str:
        env = self.environment()
        for k, expression in enumerate(expressions):
            try:
                env.compile(expression)
            except CelError as err:
                return f"{who}: selector #{k}: CEL compile error: {err}"
            try:
                if not env.matches(expression, driver, device.attributes, device.capacity):
                    return False
            except CelError as err:
                return f"{who}: selector #{k}: CEL runtime error: {err}"
        return True

    # -- per node, for reports ------------------------------------------------------------------------

    def devices_by_driver(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per driver, each node's devices and allocated devices among them (pools it can allocate from;
        a device reachable from several nodes counts on each)."""
        n = self.cluster.n
        held = self.allocated()
        out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for i in range(n) if self.slices else ():
            for pool in self.pools(i):
                for slc in pool.slices:
                    total, used = out.setdefault(pool.driver, (np.zeros(n, dtype=np.int64),
                                                               np.zeros(n, dtype=np.int64)))
                    total[i] += len(slc.devices)
                    used[i] += sum(1 for d in slc.devices if (pool.driver, pool.name, d.name) in held)
        return dict(sorted(out.items()))


def _unreserved(claim: ResourceClaim, uid: str) -> ResourceClaim:
    """A claim without one consumer; the last one gone, deallocated too."""
    left = tuple(c for c in claim.reserved_for if c.uid != uid)
    return dataclasses.replace(claim, reserved_for=left, allocation=claim.allocation if left else None)


def released(objects: DeviceObjects, pods: Iterable[Pod]) -> DeviceObjects:
    """The claims once the pods are deleted, as the resourceclaim controller leaves them: a claim made
    from a template for one of them is deleted with it; another claim no longer lists it in
    reservedFor, and is deallocated when nothing else uses it."""
    uids = {p.uid for p in pods}
    if not uids or not objects.claims:
        return objects
    claims = {}
    for key, claim in objects.claims.items():
        if claim.owner_pod_uid in uids:
            continue
        for uid in uids & {c.uid for c in claim.reserved_for}:
            claim = _unreserved(claim, uid)
        claims[key] = claim
    return DeviceObjects(objects.classes, objects.slices, claims, objects.templates)


def _held(claim: ResourceClaim) -> list[DeviceID]:
    """foreachAllocatedDevice: the devices of a claim's allocation that count as in use."""
    if claim.allocation is None:
        return []
    return [(r.driver, r.pool, r.device) for r in claim.allocation.results if not r.admin_access]


def claim_base_name(pod_name: str, claim_name: str) -> str:
    """The generateName the resourceclaim controller gives a pod's claim: <pod>-<claim>-, both parts cut
    in proportion to their lengths when longer than 57 characters."""
    base = f"{pod_name}-{claim_name}-"
    if len(base) > 57:
        base = f"{pod_name[:len(pod_name) * 57 // len(base)]}-{claim_name[:len(claim_name) * 57 // len(base)]}"
    return base


class DeviceTable:
    """The devices of pools local to one node (complete, valid, reached through spec.nodeName) as arrays:
    the node of each and whether a claim holds it; `simple[i]` says node i reaches no other pool."""

    def __init__(self, devices: DeviceState):
        cluster = devices.cluster
        ids: list[DeviceID] = []
        nodes: list[int] = []
        drivers: list[str] = []
        entries: list[Device] = []
        simple = np.ones(cluster.n, dtype=bool)
        for i in range(cluster.n) if devices.slices else ():
            for pool in devices.pools(i):
                if pool.incomplete or pool.invalid or any(s.node_name != cluster.names[i] for s in pool.slices):
                    simple[i] = False
                    continue
                for slc in pool.slices:
                    for d in slc.devices:
                        ids.append((pool.driver, pool.name, d.name))
                        nodes.append(i)
                        drivers.append(pool.driver)
                        entries.append(d)
        self.ids = ids
        self.position = {d: k for k, d in enumerate(ids)}
        self.node = np.array(nodes, dtype=np.intp)
        self.drivers = drivers
        self.devices = entries
        self.simple = simple
        held = devices.allocated()
        self.allocated = np.array([d in held for d in ids], dtype=bool)
        self._masks: dict[tuple, np.ndarray] = {}

    def clone(self) -> "DeviceTable":
        new = object.__new__(DeviceTable)
        new.__dict__.update(self.__dict__)
        new.allocated = self.allocated.copy()
        return new

    def set_allocated(self, device: DeviceID, held: bool) -> None:
        k = self.position.get(device)
        if k is not None:
            self.allocated[k] = held

    def matching(self, key: tuple, match: Callable[[str, Device], Any]) -> np.ndarray:
        """A per-device array of match results (True, False or an error text) for a request signature,
        computed once per run."""
        out = self._masks.get(key)
        if out is None:
            out = np.array([match(drv, d) for drv, d in zip(self.drivers, self.devices)], dtype=object)
            self._masks[key] = out
        return out

