"""VolumeBinding: a pod's claims must be bound to volumes its node can reach, or be bindable there.

Follows pkg/scheduler/framework/plugins/volumebinding (volume_binding.go, binder.go):
- PreFilter (podHasPVCs, GetPodVolumeClaims): a pod without claims is skipped. A missing claim, a
  claim being deleted or lost, an ephemeral volume's claim not (yet) created for the pod reject it
  (UnschedulableAndUnresolvable, upstream's error text). Claims are split into bound (a volume
  name and the bind-completed annotation), unbound with delayed binding (WaitForFirstConsumer
  class, no volume name) and the rest, "immediate", which must be bound already: any of those
  rejects the pod with "pod has unbound immediate PersistentVolumeClaims".
- Filter (FindPodVolumes), per node, reasons in this order, all UnschedulableAndUnresolvable:
  a bound claim's volume whose node affinity the node does not match ("didn't match
  PersistentVolume's node affinity") or that does not exist; then the delayed claims: one already
  being provisioned for another node fails at once; the others get the smallest matching volume
  (pv_matching), claims taken smallest request first, each volume used once; those left must be
  provisionable: a class with a provisioner (not kubernetes.io/no-provisioner) whose
  allowedTopologies admit the node ("didn't find available persistent volumes to bind"), and,
  when its CSIDriver asks for storage capacity tracking, a CSIStorageCapacity of the class
  reachable from the node with room for the claim ("did not have enough free storage").
- Reserve (AssumePodVolumes): on the chosen node, each matched volume is pre-bound to its claim
  and each claim to provision is annotated with the node, in the run's binder view (see
  kplan.cluster.volumes): later pods see the volume taken and the claim tied to that node.
- Score: only with the StorageCapacityScoring gate, alpha and off in every release kplan follows,
  so PreScore skips the plugin.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from kplan.api.node_selectors import describe_terms
from kplan.api.objects import Pod
from kplan.api.pv_matching import Candidates, candidates
from kplan.api.storage import (
    NO_PROVISIONER, WAIT_FOR_FIRST_CONSUMER, PersistentVolume, PersistentVolumeClaim, claim_names,
)
from kplan.cluster.state import ClusterState
from kplan.cluster.volumes import VolumeState, ephemeral_not_for_pod
from kplan.errors import InputError
from kplan.framework import versions
from kplan.framework.interfaces import CycleState, Handle, plugin_args
from kplan.framework.status import Code, NodeStatus, Status

NAME = "VolumeBinding"
STATE_KEY = NAME
DEFAULT_ARGS = {"bindTimeoutSeconds": 600, "shape": None}

NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
REASONS = (NODE_CONFLICT, BIND_CONFLICT, NOT_ENOUGH_SPACE, PV_NOT_EXIST)
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"

# checkVolumeProvisions' verdict on a claim to provision, per node.
PROVISIONABLE, NO_TOPOLOGY, NO_CAPACITY = 0, 1, 2


def not_found(resource: str, name: str) -> str:
    """An API NotFound error as listers word it: persistentvolumeclaim "data" not found."""
    return f'{resource} "{name}" not found'


def pod_claim_error(volumes: VolumeState | None, pod: Pod) -> tuple[bool, str]:
    """podHasPVCs: whether the pod uses claims, and the first problem with one ("" for none)."""
    names = claim_names(pod.spec, pod.name)
    for name, ephemeral in names:
        claim = volumes.claim(pod.namespace, name) if volumes is not None else None
        if claim is None:
            return True, (f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
                          if ephemeral else not_found("persistentvolumeclaim", name))
        if claim.lost:
            return True, (f'persistentvolumeclaim "{claim.name}" bound to non-existent persistentvolume '
                          f'"{claim.volume_name}"')
        if claim.terminating:
            return True, f'persistentvolumeclaim "{claim.name}" is being deleted'
        if ephemeral and claim.controller_uid != pod.uid:
            return True, ephemeral_not_for_pod(claim, pod)
    return bool(names), ""


@dataclass
class PodVolumeClaims:
    """GetPodVolumeClaims, from the binder's view: bound claims, unbound ones with delayed binding,
    and the volumes of those claims' classes."""

    bound: list[PersistentVolumeClaim]
    delayed: list[PersistentVolumeClaim]
    volumes_by_class: dict[str, list[PersistentVolume]]
    decisions: "Decisions | None" = None  # what Filter found, for Reserve and explanations


@dataclass
class Decisions:
    """FindPodVolumes over all nodes: the reasons per node, and what each node's result rests on."""

    reasons: np.ndarray  # (N, 4) bool in REASONS order
    bound_claim: np.ndarray  # (N,) index into bound of the claim that failed, -1 for none
    selected_claim: np.ndarray  # (N,) index into delayed of a claim provisioned for another node, -1
    to_match: list[int]  # indexes into delayed of the claims matched to volumes, smallest request first
    matches: list[Candidates]  # per claim of to_match
    chosen: np.ndarray  # (len(to_match), N) index into matches[k].volumes, -1 for none
    provision_claim: np.ndarray  # (N,) index into delayed of the claim that could not be provisioned, -1
    provision_kind: np.ndarray  # (N,) NO_TOPOLOGY or NO_CAPACITY for that claim


class VolumeBinding:
    """Checks that the pod's claims are bound to volumes the node can reach, or can be bound there."""

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        self.args = plugin_args(args, DEFAULT_ARGS, NAME)
        timeout = self.args["bindTimeoutSeconds"]
        if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 0:
            raise InputError(f"{NAME} args: bindTimeoutSeconds: Invalid value: {timeout!r}: invalid "
                             "BindTimeoutSeconds, should not be a negative value")
        if self.args["shape"] is not None:
            raise InputError(f"{NAME} args: shape: Invalid value: {self.args['shape']!r}: unsupported when the "
                             "StorageCapacityScoring feature gate is disabled (it is in every release kplan follows)")
        self.handle = handle or Handle()

    @property
    def attributes_classes(self) -> bool:
        return versions.has(self.handle.kube_version, versions.VOLUME_ATTRIBUTES_CLASS)

    # -- PreFilter ---------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status | None:
        if not pod.spec.get("volumes"):
            return Status.skip()
        volumes = cluster.volumes
        has_claims, problem = pod_claim_error(volumes, pod)
        if problem:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (problem,))
        if not has_claims:
            return Status.skip()
        bound, delayed, immediate = [], [], []
        for name, _ in claim_names(pod.spec, pod.name):
            claim = volumes.binder_claim(pod.namespace, name)
            if claim.fully_bound:
                bound.append(claim)
            elif self._delayed(volumes, claim) and not claim.volume_name:
                delayed.append(claim)
            else:  # immediate binding (or pre-bound): the PV controller should have bound it
                immediate.append(claim)
        if immediate:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (UNBOUND_IMMEDIATE,))
        by_class = {c.storage_class: volumes.binder_volumes_of_class(c.storage_class) for c in delayed}
        state.write(STATE_KEY, PodVolumeClaims(bound, delayed, by_class))
        return None

    @staticmethod
    def _delayed(volumes: VolumeState, claim: PersistentVolumeClaim) -> bool:
        """IsDelayBindingMode: a class of its own, found, binding WaitForFirstConsumer."""
        cls = volumes.storage_class(claim.storage_class) if claim.storage_class else None
        return cls is not None and cls.binding_mode == WAIT_FOR_FIRST_CONSUMER

    # -- Filter ------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        claims: PodVolumeClaims = state.read(STATE_KEY)
        decisions = claims.decisions = self.decide(claims, cluster)
        volumes = cluster.volumes
        return NodeStatus.from_reasons(decisions.reasons, list(REASONS), Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                       lambda i: explain_node(claims, volumes, cluster, i))

    def decide(self, claims: PodVolumeClaims, cluster: ClusterState) -> Decisions:
        """FindPodVolumes for every node at once."""
        n, volumes = cluster.n, cluster.volumes
        reasons = np.zeros((n, len(REASONS)), dtype=bool)
        bound_claim = np.full(n, -1, dtype=np.int32)
        # checkBoundClaims: the first bound claim whose volume is missing or elsewhere decides.
        open_ = np.ones(n, dtype=bool)
        for k, claim in enumerate(claims.bound):
            pv = volumes.binder_volume(claim.volume_name)
            hit = open_ if pv is None else open_ & ~volumes.affinity_mask(pv)
            reasons[hit, REASONS.index(PV_NOT_EXIST if pv is None else NODE_CONFLICT)] = True
            bound_claim[hit] = k
            open_ &= ~hit
        selected_claim = np.full(n, -1, dtype=np.int32)
        to_match = [k for k, c in enumerate(claims.delayed) if c.selected_node is None]
        to_match.sort(key=lambda k: claims.delayed[k].request or 0)  # byPVCSize, stable
        empty = Decisions(reasons, bound_claim, selected_claim, to_match, [], np.full((0, n), -1, dtype=np.int32),
                          np.full(n, -1, dtype=np.int32), np.zeros(n, dtype=np.int8))
        if not claims.delayed:
            return empty
        # A claim already being provisioned for a node fits that node only (the fast path).
        checked = np.ones(n, dtype=bool)
        for k, claim in enumerate(claims.delayed):
            if claim.selected_node is not None:
                elsewhere = checked & (cluster.name_array != claim.selected_node)
                selected_claim[elsewhere] = k
                checked &= ~elsewhere
        reasons[~checked, REASONS.index(BIND_CONFLICT)] = True
        matches, chosen = self._match(claims, to_match, cluster)
        provision_claim, provision_kind = self._provision(claims, to_match, chosen, cluster, checked)
        failed = provision_claim >= 0
        reasons[failed & (provision_kind == NO_TOPOLOGY), REASONS.index(BIND_CONFLICT)] = True
        reasons[failed & (provision_kind == NO_CAPACITY), REASONS.index(NOT_ENOUGH_SPACE)] = True
        return Decisions(reasons, bound_claim, selected_claim, to_match, matches, chosen, provision_claim,
                         provision_kind)

    def _match(self, claims: PodVolumeClaims, to_match: list[int],
               cluster: ClusterState) -> tuple[list[Candidates], np.ndarray]:
        """findMatchingVolumes on every node: per claim, the smallest matching volume the node can reach
        that no smaller-request claim of the pod took on that node."""
        n, volumes = cluster.n, cluster.volumes
        chosen = np.full((len(to_match), n), -1, dtype=np.int32)
        matches: list[Candidates] = []
        taken: dict[str, np.ndarray] = {}  # volume -> nodes where a claim of the pod took it
        for row, k in enumerate(to_match):
            claim = claims.delayed[k]
            found = candidates(claim, claims.volumes_by_class.get(claim.storage_class, ()), self.attributes_classes)
            matches.append(found)
            assigned = np.zeros(n, dtype=bool)
            for j, pv in enumerate(found.volumes):
                free = volumes.affinity_mask(pv) & ~assigned
                if pv.name in taken:
                    free &= ~taken[pv.name]
                if free.any():
                    chosen[row, free] = j
                    assigned |= free
                    taken[pv.name] = taken.get(pv.name, np.zeros(n, dtype=bool)) | free
                if assigned.all():
                    break
        return matches, chosen

    def _provision(self, claims: PodVolumeClaims, to_match: list[int], chosen: np.ndarray, cluster: ClusterState,
                   checked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """checkVolumeProvisions over the claims left (those being provisioned, then those no volume
        matched, smallest request first): the first that cannot be provisioned on a node decides."""
        n = cluster.n
        provision_claim = np.full(n, -1, dtype=np.int32)
        provision_kind = np.zeros(n, dtype=np.int8)
        open_ = checked.copy()
        order = [(k, checked) for k, c in enumerate(claims.delayed) if c.selected_node is not None]
        order += [(k, chosen[row] < 0) for row, k in enumerate(to_match)]
        for k, left in order:
            kind = provision_verdict(claims.delayed[k], cluster)
            hit = open_ & left & (kind != PROVISIONABLE)
            provision_claim[hit] = k
            provision_kind[hit] = kind[hit]
            open_ &= ~hit
        return provision_claim, provision_kind

    # -- Score -------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, candidates_: np.ndarray) -> Status:
        return Status.skip()  # no scorer without the StorageCapacityScoring gate

    def score(self, state: CycleState, pod: Pod, cluster: ClusterState, candidates_: np.ndarray) -> np.ndarray:
        return np.zeros(len(candidates_), dtype=np.int64)

    # -- Reserve -----------------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, cluster: ClusterState, node: int) -> Status | None:
        """AssumePodVolumes on the chosen node: matched volumes pre-bound, claims to provision annotated."""
        claims: PodVolumeClaims | None = state.get(STATE_KEY)
        if claims is None or not claims.delayed:
            return None
        volumes = cluster.volumes
        decisions = claims.decisions or self.decide(claims, cluster)
        matched = set()
        for row, k in enumerate(decisions.to_match):
            j = int(decisions.chosen[row, node])
            if j >= 0:
                volumes.assume_binding(decisions.matches[row].volumes[j], claims.delayed[k])
                matched.add(k)
        for k, claim in enumerate(claims.delayed):
            if k not in matched:
                volumes.assume_provisioning(claim, cluster.names[node])
        return None

    def unreserve(self, state: CycleState, pod: Pod, cluster: ClusterState, node: int) -> None:
        """RevertAssumedPodVolumes: the assumptions Reserve made for the pod are dropped."""
        claims: PodVolumeClaims | None = state.get(STATE_KEY)
        if claims is None or claims.decisions is None:
            return
        volumes = cluster.volumes
        for row, k in enumerate(claims.decisions.to_match):
            j = int(claims.decisions.chosen[row, node])
            if j >= 0:
                volumes.revert_binding(claims.decisions.matches[row].volumes[j].name)
        for claim in claims.delayed:
            volumes.revert_provisioning(claim.key)


def provision_verdict(claim: PersistentVolumeClaim, cluster: ClusterState) -> np.ndarray:
    """checkVolumeProvisions for one claim on every node: PROVISIONABLE, NO_TOPOLOGY (no provisioner,
    or allowedTopologies exclude the node) or NO_CAPACITY (hasEnoughCapacity fails)."""
    n, volumes = cluster.n, cluster.volumes
    cls = volumes.storage_class(claim.storage_class)
    if cls is None or not cls.provisioner or cls.provisioner == NO_PROVISIONER:
        return np.full(n, NO_TOPOLOGY, dtype=np.int8)
    kind = np.where(topology_mask(cls.allowed_topologies, cluster), PROVISIONABLE, NO_TOPOLOGY).astype(np.int8)
    room = capacity_mask(claim, cls.provisioner, cluster)
    if room is not None:
        kind[(kind == PROVISIONABLE) & ~room] = NO_CAPACITY
    return kind


def topology_mask(terms: list[Mapping], cluster: ClusterState) -> np.ndarray:
    """MatchTopologySelectorTerms: no term admits every node; else any non-empty term whose
    expressions (key in values) all hold."""
    if not terms:
        return np.ones(cluster.n, dtype=bool)
    mask = np.zeros(cluster.n, dtype=bool)
    for term in terms:
        exprs = term.get("matchLabelExpressions") or ()
        if not exprs:
            continue
        hit = np.ones(cluster.n, dtype=bool)
        for expr in exprs:
            hit &= cluster.label_column(expr.get("key") or "").isin(expr.get("values") or ())
        mask |= hit
    return mask


def capacity_mask(claim: PersistentVolumeClaim, provisioner: str, cluster: ClusterState) -> np.ndarray | None:
    """hasEnoughCapacity over all nodes: None when not checked (no storage request, or a provisioner
    whose CSIDriver does not ask for capacity tracking); else the nodes reaching a CSIStorageCapacity
    of the claim's class with a volume limit of at least the request."""
    volumes = cluster.volumes
    driver = volumes.csi_drivers.get(provisioner)
    if claim.request is None or driver is None or not driver.storage_capacity:
        return None
    size = claim.request_bytes
    mask = np.zeros(cluster.n, dtype=bool)
    for capacity in volumes.capacities:
        if capacity.storage_class == claim.storage_class and capacity.limit is not None and capacity.limit >= size:
            mask |= capacity.node_topology.mask(_label_codes(cluster), cluster.n)
    return mask


def _label_codes(cluster: ClusterState):
    def column(key: str):
        col = cluster.label_column(key)
        return col.codes, col.code_of
    return column


# -- explanations ----------------------------------------------------------------------------------

def _labels_for(terms: list[Mapping] | None, labels: Mapping[str, str]) -> str:
    keys = list(dict.fromkeys(r.get("key") for t in terms or () for r in t.get("matchExpressions") or ()))
    shown = [f"{k}={labels[k]}" if k in labels else f"no {k}" for k in keys]
    return "the node has " + ", ".join(shown) if shown else ""


def explain_node(claims: PodVolumeClaims, volumes: VolumeState, cluster: ClusterState, i: int) -> list[str]:
    """What node i's verdict rests on, claim by claim."""
    d = claims.decisions
    labels = cluster.nodes[i].labels
    lines: list[str] = []
    k = int(d.bound_claim[i])
    if k >= 0:
        claim = claims.bound[k]
        pv = volumes.binder_volume(claim.volume_name)
        if pv is None:
            lines.append(f"claim {claim.name} is bound to volume {claim.volume_name}, which does not exist")
        else:
            lines.append(f"claim {claim.name} is bound to volume {pv.name}, which only nodes with "
                         f"{describe_terms(pv.node_affinity)} can use; {_labels_for(pv.node_affinity, labels)}")
    k = int(d.selected_claim[i])
    if k >= 0:
        claim = claims.delayed[k]
        lines.append(f"claim {claim.name} (WaitForFirstConsumer) is being provisioned for node {claim.selected_node}")
        return lines
    matched = {k: d.matches[row].volumes[int(d.chosen[row, i])]
               for row, k in enumerate(d.to_match) if d.chosen[row, i] >= 0}
    k = int(d.provision_claim[i])
    if k >= 0:
        lines.append(_provision_line(claims, claims.delayed[k], int(d.provision_kind[i]), volumes, labels))
    if lines:
        return lines
    lines += [f"claim {c.name} is bound to volume {c.volume_name}, which the node can use" for c in claims.bound]
    lines += [f"claim {c.name} would bind volume {matched[k].name}" if k in matched
              else f"claim {c.name} would be provisioned here (class {c.storage_class})"
              for k, c in enumerate(claims.delayed)]
    return lines


def _as_node_terms(topology: list[Mapping]) -> list[Mapping]:
    """allowedTopologies' terms as node selector terms (each expression: key in values)."""
    return [{"matchExpressions": [{"key": e.get("key"), "operator": "In", "values": list(e.get("values") or ())}
                                  for e in t.get("matchLabelExpressions") or ()]} for t in topology]


def _provision_line(claims: PodVolumeClaims, claim: PersistentVolumeClaim, kind: int, volumes: VolumeState,
                    labels: Mapping[str, str]) -> str:
    cls = volumes.storage_class(claim.storage_class)
    free = len(claims.volumes_by_class.get(claim.storage_class, ()))
    head = (f"claim {claim.name} (class {claim.storage_class}, WaitForFirstConsumer, {_size(claim)}): "
            f"no volume of the class matches here ({free} of the class in the cluster)")
    if kind == NO_CAPACITY:
        return (f"{head}, and no CSIStorageCapacity of provisioner {cls.provisioner} this node reaches has "
                f"{_size(claim)} free")
    if cls.provisioner == NO_PROVISIONER:
        return f"{head}, and the class provisions none ({NO_PROVISIONER})"
    terms = _as_node_terms(cls.allowed_topologies)
    return (f"{head}, and provisioner {cls.provisioner} may only provision where {describe_terms(terms)}; "
            f"{_labels_for(terms, labels)}")


def _size(claim: PersistentVolumeClaim) -> str:
    from kplan.api.quantity import format_quantity
    return format_quantity(claim.request_bytes, "bytes")
