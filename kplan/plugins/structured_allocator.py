"""The structured allocator (k8s.io/dynamic-resource-allocation/structured): which devices of a
node's pools a pod's unallocated claims would get.

It follows the allocator the release's default feature gates select (from 1.34: the prioritized
list and admin access on, partitionable devices, consumable capacity, binding conditions and device
taints off until 1.36 turns on binding conditions and taints):
- per claim and request, the devices wanted: a count, or every matching device of the node's pools
  ("All", which fails on an incomplete or invalid pool); at most 32 per claim;
- an exhaustive depth-first search, claim by claim, request by request, device by device over the
  pools in order, that takes the first complete solution: a device is used once (unless the
  request asks for admin access), must match the class's selectors and the request's, must not be
  held by another claim, and must keep each matchAttribute constraint of the claim satisfied; a
  request with firstAvailable takes the first alternative that leads to a solution;
- the allocation's node selector: the node's name when a device is local to it, else the slices'
  node selectors, else none.
Errors in the input (a selector that fails, a pool with a device twice, too many devices) stop
the search with upstream's words (AllocationError).

`feasible()` answers for every node at once. For the usual claims (exact counts, no constraints,
no alternatives, no admin access, requests whose matching devices do not overlap) on nodes whose
pools are all local to them, it counts free matching devices per node with numpy; other nodes get
the search.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from kplan.api.dra import (
    ALL, ALLOCATION_RESULTS_MAX, Allocation, Device, DeviceResult, ExactRequest, ResourceClaim, ResourceSlice,
)
from kplan.cluster.devices import DeviceID, DeviceState, Pool


class AllocationError(Exception):
    """A problem with the claims, classes or slices that stops the search (upstream's error)."""


@dataclass(frozen=True)
class Features:
    """The DRA feature gates the allocator reads."""

    admin_access: bool = True
    prioritized_list: bool = True
    device_taints: bool = False
    binding_conditions: bool = False


@dataclass
class _Request:
    """One request, or one alternative of a request's firstAvailable (requestData)."""

    request: ExactRequest
    parent: str  # the request's name for an alternative, "" otherwise
    count: int
    all_devices: list[tuple[DeviceID, Device, ResourceSlice]] | None = None
    chosen: int = 0  # for the first alternative: the index of the one that was taken

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.request.name}" if self.parent else self.request.name


def _names(claim: ResourceClaim) -> str:
    return f"{claim.namespace}/{claim.name}"


def tolerated(device: Device, request: ExactRequest) -> bool:
    """Every NoSchedule or NoExecute taint of the device tolerated by the request."""
    return all(t.effect == "None" or any(tol.tolerates(t) for tol in request.tolerations) for t in device.taints)


class _MatchAttribute:
    """matchAttributeConstraint: every device of the named requests carries the attribute, all with
    one value (the first device sets it)."""

    def __init__(self, requests: tuple[str, ...], attribute: str):
        self.requests = set(requests)
        self.attribute = attribute
        self.value: Any = None
        self.devices = 0

    def applies(self, request: str, sub: str) -> bool:
        if not self.requests:
            return True
        return request in self.requests or (bool(sub) and f"{request}/{sub}" in self.requests)

    def lookup(self, device: Device, driver: str) -> Any:
        attrs = device.attributes
        if self.attribute in attrs:
            return attrs[self.attribute]
        domain, _, ident = self.attribute.rpartition("/")
        return attrs.get(ident) if domain == driver else None

    def add(self, request: str, sub: str, device: Device, driver: str) -> bool:
        if not self.applies(request, sub):
            return True
        value = self.lookup(device, driver)
        if value is None:
            return False
        if self.devices == 0:
            self.value, self.devices = value, 1
            return True
        if type(value) is not type(self.value) or value != self.value:
            return False
        self.devices += 1
        return True

    def remove(self, request: str, sub: str) -> None:
        if self.applies(request, sub):
            self.devices -= 1


class Allocator:
    """Allocates a pod's unallocated claims on one node at a time, against the devices held now."""

    def __init__(self, claims: list[ResourceClaim], devices: DeviceState, features: Features):
        self.claims = claims
        self.devices = devices
        self.features = features
        self._fast: tuple | None = None

    # -- every node at once ------------------------------------------------------------------------

    def feasible(self, nodes: np.ndarray | None = None) -> tuple[np.ndarray, dict[int, str]]:
        """Per node, whether the claims can be allocated there; and the nodes where the search stopped
        with an error, with its text. `nodes` limits the search to those nodes (None: all)."""
        cluster = self.devices.cluster
        ok = np.zeros(cluster.n, dtype=bool)
        errors: dict[int, str] = {}
        if not self.devices.slices:
            if any(self._wants_devices()):
                return ok, errors
            return np.ones(cluster.n, dtype=bool), errors
        fast = self._counted()
        search = np.ones(cluster.n, dtype=bool) if nodes is None else nodes.copy()
        if fast is not None:
            table = self.devices.table()
            counted = np.ones(cluster.n, dtype=bool)
            for matches, wanted in fast:
                free = np.bincount(table.node[matches & ~table.allocated], minlength=cluster.n)
                counted &= free >= wanted
            ok[table.simple] = counted[table.simple]
            search &= ~table.simple
        for i in np.flatnonzero(search).tolist():
            try:
                ok[i] = self.allocate(i) is not None
            except AllocationError as err:
                errors[i] = str(err)
        return ok, errors

    def _wants_devices(self) -> Iterator[bool]:
        for claim in self.claims:
            yield bool(claim.spec.requests)

    def _counted(self) -> list[tuple[np.ndarray, int]] | None:
        """For claims the per-node count decides: per distinct request signature, the devices matching it
        and how many the claims want; None when the search must decide."""
        if self._fast is not None:
            return self._fast or None
        wanted: dict[tuple, int] = {}
        requests: dict[tuple, tuple[ExactRequest, ResourceClaim]] = {}
        for claim in self.claims:
            total = 0
            for r in claim.spec.requests:
                x = r.exactly
                if claim.spec.constraints or x is None or x.mode == ALL or x.admin_access \
                        or x.device_class not in self.devices.classes:
                    self._fast = ()
                    return None
                key = (x.signature, tuple(x.tolerations))
                wanted[key] = wanted.get(key, 0) + x.count
                requests.setdefault(key, (x, claim))
                total += x.count
            if total > ALLOCATION_RESULTS_MAX:
                self._fast = ()
                return None
        table = self.devices.table()
        masks = []
        union = np.zeros(len(table.ids), dtype=bool)
        for key, count in wanted.items():
            request, claim = requests[key]
            results = table.matching(key, lambda driver, d: self._selectable_device(request, claim, driver, d))
            if any(isinstance(r, str) for r in results):
                self._fast = ()
                return None
            mask = results.astype(bool)
            if (mask & union).any():  # overlapping requests: which device goes where needs the search
                self._fast = ()
                return None
            union |= mask
            masks.append((mask, count))
        self._fast = tuple(masks)
        return masks

    def _selectable_device(self, request: ExactRequest, claim: ResourceClaim, driver: str,
                           device: Device) -> bool | str:
        if device.binding_conditions and not self.features.binding_conditions:
            return False
        if device.consumes_counters:
            return False  # partitionable devices are off
        if self.features.device_taints and not tolerated(device, request):
            return False
        return self.devices.selection(request, driver, device, lambda: _names(claim))

    # -- one node: the search --------------------------------------------------------------------------

    def allocate(self, i: int) -> list[Allocation] | None:
        """Allocate for node i: one allocation per claim, or None when they cannot all be allocated."""
        return _Search(self, i).run()


@dataclass
class _Search:
    """One Allocate call: the state of the depth-first search on one node."""

    allocator: Allocator
    node: int
    pools: tuple[Pool, ...] = ()
    requests: dict[tuple[int, int, int], _Request] = field(default_factory=dict)
    constraints: list[list[_MatchAttribute]] = field(default_factory=list)
    allocating: dict[DeviceID, set[int]] = field(default_factory=dict)
    results: list[list[tuple[str, DeviceID, ResourceSlice, bool]]] = field(default_factory=list)
    selectable_cache: dict[tuple, bool] = field(default_factory=dict)

    def __post_init__(self):
        self.pools = self.allocator.devices.pools(self.node)
        self.held = self.allocator.devices.allocated()

    def run(self) -> list[Allocation] | None:
        claims = self.allocator.claims
        for c, claim in enumerate(claims):
            minimum = 0
            for r, request in enumerate(claim.spec.requests):
                if request.first_available:
                    if not self.allocator.features.prioritized_list:
                        raise AllocationError(f"claim {_names(claim)}, request {request.name}: has subrequests, but "
                                              "the DRAPrioritizedList feature is disabled")
                    least = None
                    for s, sub in enumerate(request.first_available):
                        data = self._validate(c, sub, request.name, (c, r, s))
                        self.requests[(c, r, s)] = data
                        least = data.count if least is None else min(least, data.count)
                    minimum += least or 0
                else:
                    data = self._validate(c, request.exactly, "", (c, r, 0))
                    self.requests[(c, r, 0)] = data
                    minimum += data.count
            if minimum > ALLOCATION_RESULTS_MAX:
                raise AllocationError(f"claim {_names(claim)}: number of requested devices {minimum} exceeds the "
                                      f"claim limit of {ALLOCATION_RESULTS_MAX}")
            self.constraints.append([_MatchAttribute(k.requests, k.match_attribute) for k in claim.spec.constraints])
            self.results.append([])
        if not self._one(0, 0, 0, 0, False):
            return None
        return [self._allocation(c) for c in range(len(claims))]

    def _validate(self, c: int, request: ExactRequest, parent: str, key: tuple[int, int, int]) -> _Request:
        claim = self.allocator.claims[c]
        if request.admin_access is not None and not self.allocator.features.admin_access:
            raise AllocationError(f"claim {_names(claim)}, request {request.name}: admin access is requested, but "
                                  "the feature is disabled")
        if request.device_class not in self.allocator.devices.classes:
            raise AllocationError(f"claim {_names(claim)}, request {request.name}: could not retrieve device class "
                                  f"{request.device_class}: deviceclass.resource.k8s.io \"{request.device_class}\" "
                                  "not found")
        data = _Request(request, parent, request.count)
        if request.mode != ALL:
            return data
        data.all_devices = []
        for pool in self.pools:
            if pool.incomplete:
                raise AllocationError(f"claim {_names(claim)}, request {request.name}: asks for all devices, but "
                                      f"resource pool {pool.id} is currently being updated")
            if pool.invalid:
                raise AllocationError(f"claim {_names(claim)}, request {request.name}: asks for all devices, but "
                                      f"resource pool {pool.id} is currently invalid")
            for slc in pool.slices:
                for device in slc.devices:
                    if self._selectable(key, data, pool.driver, device, (pool.driver, pool.name, device.name)):
                        data.all_devices.append(((pool.driver, pool.name, device.name), device, slc))
        data.count = len(data.all_devices)
        return data

    def _selectable(self, key: tuple[int, int, int], data: _Request, driver: str, device: Device,
                    device_id: DeviceID) -> bool:
        cache_key = (key, device_id)
        hit = self.selectable_cache.get(cache_key)
        if hit is None:
            claim = self.allocator.claims[key[0]]
            result = self.allocator._selectable_device(data.request, claim, driver, device)
            if isinstance(result, str):
                raise AllocationError(result)
            hit = self.selectable_cache[cache_key] = result
        return hit

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.held or bool(self.allocating.get(device_id))

    def _one(self, c: int, r: int, s: int, d: int, in_sub: bool) -> bool:
        """allocateOne: true when everything from this device on could be allocated."""
        claims = self.allocator.claims
        if c >= len(claims):
            return True
        claim = claims[c]
        if r >= len(claim.spec.requests):
            return self._one(c + 1, 0, 0, 0, False)
        data = self.requests[(c, r, s)]
        if not in_sub and data.parent:
            for alt in range(len(claim.spec.requests[r].first_available)):
                if self._one(c, r, alt, d, True):
                    self.requests[(c, r, 0)].chosen = alt
                    return True
            return False
        request = data.request
        every = request.mode == ALL
        if every and not data.all_devices:
            return False
        if d >= data.count:
            return self._one(c, r + 1, 0, 0, False)
        if len(self.results[c]) + data.count - d > ALLOCATION_RESULTS_MAX:
            return False
        if every:
            device_id, device, slc = data.all_devices[d]
            undo = self._take(c, data, device_id, device, slc, must=True)
            if undo is None:
                return False
            if self._one(c, r, s, d + 1, in_sub):
                return True
            undo()
            return False
        admin = bool(request.admin_access)
        for pool in self.pools:
            if pool.invalid:
                raise AllocationError(f"pool {pool.name} is invalid: {pool.invalid}")
            for slc in pool.slices:
                for device in slc.devices:
                    device_id = (pool.driver, pool.name, device.name)
                    if admin and c in self.allocating.get(device_id, ()):
                        continue
                    if not admin and self._in_use(device_id):
                        continue
                    if not self._selectable((c, r, s), data, pool.driver, device, device_id):
                        continue
                    undo = self._take(c, data, device_id, device, slc, must=False)
                    if undo is None:
                        continue
                    if self._one(c, r, s, d + 1, in_sub):
                        return True
                    undo()
        return False

    def _take(self, c: int, data: _Request, device_id: DeviceID, device: Device, slc: ResourceSlice,
              must: bool) -> Callable[[], None] | None:
        """allocateDevice: checks availability and the claim's constraints; returns how to undo it, or None."""
        admin = bool(data.request.admin_access)
        if admin and c in self.allocating.get(device_id, ()):
            return None
        if not admin and self._in_use(device_id):
            return None
        if device.consumes_counters:
            return None
        base, sub = (data.parent, data.request.name) if data.parent else (data.request.name, "")
        constraints = self.constraints[c]
        for k, constraint in enumerate(constraints):
            if not constraint.add(base, sub, device, device_id[0]):
                if must:
                    claim = self.allocator.claims[c]
                    raise AllocationError(f"claim {_names(claim)}, request {data.request.name}: cannot add device "
                                          f"{'/'.join(device_id)} because a claim constraint would not be satisfied")
                for earlier in constraints[:k]:
                    earlier.remove(base, sub)
                return None
        self.allocating.setdefault(device_id, set()).add(c)
        self.results[c].append((data.full_name, device_id, slc, admin))

        def undo() -> None:
            for constraint in constraints:
                constraint.remove(base, sub)
            self.allocating[device_id].discard(c)
            self.results[c].pop()
        return undo

    def _allocation(self, c: int) -> Allocation:
        results = tuple(DeviceResult(name, *device_id, admin_access=admin)
                        for name, device_id, _, admin in self.results[c])
        return Allocation(results, self._node_selector(self.results[c]))

    def _node_selector(self, results: list) -> tuple | None:
        """createNodeSelector: a device local to a node pins the allocation to it; else the slices'
        node selector requirements merged into one term; else none."""
        term: dict[str, list] = {"matchFields": [], "matchExpressions": []}
        for _, _, slc, _ in results:
            if slc.node_name:
                return ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": [slc.node_name]}]},)
            if slc.node_selector and len(slc.node_selector) == 1:
                for kind in ("matchFields", "matchExpressions"):
                    for req in slc.node_selector[0].get(kind) or ():
                        if not any(_same_requirement(req, have) for have in term[kind]):
                            term[kind].append(req)
        if term["matchFields"] or term["matchExpressions"]:
            return ({k: v for k, v in term.items() if v},)
        return None


def _same_requirement(a: dict, b: dict) -> bool:
    return (a.get("key") == b.get("key") and a.get("operator") == b.get("operator")
            and set(a.get("values") or ()) == set(b.get("values") or ()))
