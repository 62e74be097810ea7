"""PodTopologySpread: DoNotSchedule constraints filter nodes by skew; ScheduleAnyway ones score them.

Matching pods are counted per node over the cluster's PodIndex (vectorized label-selector
matching) and summed per topology domain with np.bincount on the domain codes of the node
table's label column. Pods without constraints of their own get the profile's default
constraints (PodTopologySpreadArgs: `defaultingType: System` gives hostname maxSkew 3 and zone
maxSkew 5, ScheduleAnyway), with the selector helper.DefaultSelector builds from the snapshot's
Services and the pod's controller (see DefaultSelectors); when that selector is empty, the pod
gets no default constraints at all.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from kplan.api.label_selectors import EVERYTHING, Requirement, Selector, label_set_selector, parse_selector
from kplan.api.node_selectors import match_labels_mask, node_selector_terms_mask
from kplan.api.objects import Pod
from kplan.cluster.pod_index import PodIndex
from kplan.cluster.state import ClusterState
from kplan.errors import InputError
from kplan.framework.arith import without
from kplan.framework.interfaces import MAX_NODE_SCORE, CycleState, Handle, plugin_args
from kplan.framework.status import Code, NodeStatus, Status
from kplan.plugins.taint_toleration import first_untolerated

NAME = "PodTopologySpread"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
DOMAIN_SCORES_KEY = "DomainScores" + NAME  # Score's per-domain table, for NormalizeScore
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
SYSTEM_DEFAULT_CONSTRAINTS = (
    {"topologyKey": HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)
# The controllers whose selector helper.DefaultSelector reads: (group, version, kind) of the pod's
# controller reference, which must name one of these exactly.
DEFAULT_SELECTOR_OWNERS = frozenset({("", "v1", "ReplicationController"), ("apps", "v1", "ReplicaSet"),
                                     ("apps", "v1", "StatefulSet")})
SELECTOR_CACHE_SIZE = 4096  # default selectors kept per snapshot before the cache is emptied
MAX_INT32 = (1 << 31) - 1
SMALL_NAMESPACE_SHARE = 8  # below 1/8 of the pods, a namespace's pods are matched one by one


@dataclass(frozen=True)
class Constraint:
    """A TopologySpreadConstraint with its selector parsed and defaults applied."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE
    when: str = DO_NOT_SCHEDULE


def _validate(raw: Any, where: str, for_args: bool = False) -> None:
    """Rejects what the API server (or ValidatePodTopologySpreadArgs) would."""
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: must be a mapping, got {raw!r}")
    skew = raw.get("maxSkew")
    if not isinstance(skew, int) or isinstance(skew, bool) or skew <= 0:
        raise InputError(f"{where}.maxSkew: Invalid value: {skew!r}: must be greater than zero")
    if not raw.get("topologyKey") or not isinstance(raw.get("topologyKey"), str):
        raise InputError(f"{where}.topologyKey: Required value: can not be empty")
    when = raw.get("whenUnsatisfiable")
    if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        raise InputError(f"{where}.whenUnsatisfiable: Unsupported value: {when!r}: supported values: "
                         f"\"{DO_NOT_SCHEDULE}\", \"{SCHEDULE_ANYWAY}\"")
    min_domains = raw.get("minDomains")
    if min_domains is not None:
        if not isinstance(min_domains, int) or isinstance(min_domains, bool) or min_domains <= 0:
            raise InputError(f"{where}.minDomains: Invalid value: {min_domains!r}: must be greater than zero")
    for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        value = raw.get(policy)
        if value is not None and value not in (HONOR, IGNORE):
            raise InputError(f"{where}.{policy}: Unsupported value: {value!r}: supported values: "
                             f"\"{HONOR}\", \"{IGNORE}\"")
    if for_args and raw.get("labelSelector") is not None:
        raise InputError(f"{where}.labelSelector: Forbidden: constraint must not define a selector, "
                         "as they deduced for each pod")


def _constraints(raws: Any, labels: Mapping[str, str], when: str, where: str) -> list[Constraint]:
    """filterTopologySpreadConstraints: the constraints of one action, matchLabelKeys merged in."""
    out = []
    for k, raw in enumerate(raws or ()):
        _validate(raw, f"{where}[{k}]")
        if raw["whenUnsatisfiable"] != when:
            continue
        selector = parse_selector(raw.get("labelSelector"), f"{where}[{k}].labelSelector")
        keys = raw.get("matchLabelKeys") or ()
        merged = [Requirement(key, "In", (labels[key],)) for key in keys if key in labels]
        if merged:
            selector = selector.add(*merged)
        out.append(Constraint(raw["maxSkew"], raw["topologyKey"], selector, raw.get("minDomains") or 1,
                              raw.get("nodeAffinityPolicy") or HONOR, raw.get("nodeTaintsPolicy") or IGNORE, when))
    return out


def required_node_affinity_mask(pod: Pod, cluster: ClusterState) -> np.ndarray:
    """nodeaffinity.GetRequiredNodeAffinity(pod).Match over all nodes: nodeSelector and required terms."""
    mask = match_labels_mask(pod.node_selector, cluster) if pod.node_selector else np.ones(cluster.n, dtype=bool)
    required = ((pod.affinity or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        mask &= node_selector_terms_mask(required.get("nodeSelectorTerms"), cluster)
    return mask


def untolerated_mask(pod: Pod, cluster: ClusterState) -> np.ndarray:
    """Nodes with a NoSchedule/NoExecute taint the pod does not tolerate."""
    tolerations = pod.tolerations
    per_set = np.array([first_untolerated(t, tolerations) is not None for t in cluster.taint_sets], dtype=bool)
    return per_set[cluster.taint_set_ids] if per_set.size else np.zeros(cluster.n, dtype=bool)


def matching_pods_per_node(pod: Pod, selector: Selector, cluster: ClusterState) -> np.ndarray:
    """countPodsMatchSelector on every node: pods of the pod's namespace, not terminating, matching.

    The returned array is shared: read-only (see matching_counts).
    """
    return matching_counts(pod, selector, cluster).counts


class _MatchCounts:
    """Matching pods per node for one (selector, namespace), and the nodes counted since built."""

    __slots__ = ("counts", "seen", "alive", "added")

    def __init__(self, counts: np.ndarray, seen: int, alive: int):
        self.counts = counts
        self.seen = seen  # pod index slots looked at
        self.alive = alive  # the table's live pods then
        self.added: list[int] = []  # node of each pod counted incrementally, so sums over counts can follow


def matching_counts(pod: Pod, selector: Selector, cluster: ClusterState) -> _MatchCounts:
    """matching_pods_per_node's counts, cached per (selector, namespace) on the pod index and brought
    up to date incrementally: when pods were only added since (replicas assumed one after another),
    just the new slots are counted; a removal (the table's pod count lower than expected) recomputes
    into a new array."""
    index = PodIndex.of(cluster)
    if selector.empty or selector.nothing or pod.namespace not in index.ns_code:
        return _MatchCounts(np.zeros(cluster.n, dtype=np.int64), 0, 0)
    ns = index.ns_code[pod.namespace]
    cache = index.__dict__.setdefault("_spread_counts", {})
    alive = cluster.pods_total  # assume/forget move it with the index's live pods
    hit: _MatchCounts | None = cache.get((selector, ns))
    if hit is not None and hit.seen <= index.size and alive == hit.alive + (index.size - hit.seen) \
            and len(hit.counts) == cluster.n:
        for s in range(hit.seen, index.size):
            if (index.ns[s] == ns and not index.terminating[s] and index.alive[s]
                    and selector.matches(index.labels[s])):
                node = int(index.node[s])
                hit.counts[node] += 1
                hit.added.append(node)
        hit.seen, hit.alive = index.size, alive
        return hit
    size = index.size
    mask = (index.ns[:size] == ns) & ~index.terminating[:size] & index.alive[:size]
    slots = np.flatnonzero(mask)
    if len(slots) * SMALL_NAMESPACE_SHARE < size and not index.has_columns(r.key for r in selector.requirements):
        # A namespace with a small share of the pods: matching its pods' labels one by one beats
        # building label columns over every pod (a pass over all the label dicts), unless they
        # are built already.
        labels = index.labels
        wanted = _match_labels(selector)
        if wanted is not None:  # matchLabels only: a C-level subset test of each pod's label items
            matched = [s for s in slots.tolist() if wanted <= (labels[s] or _NO_LABELS).items()]
        else:
            matched = [s for s in slots.tolist() if selector.matches(labels[s])]
        counts = np.bincount(index.node[matched], minlength=cluster.n).astype(np.int64)
    else:
        counts = index.per_node(mask & index.selector_mask(selector))
    hit = cache[(selector, ns)] = _MatchCounts(counts, size, alive)
    return hit


_NO_LABELS: dict[str, str] = {}


def _match_labels(selector: Selector):
    """The label items a selector of single-value In requirements (matchLabels) asks for, as a
    dict items view (`wanted <= labels.items()` matches as the selector does); None otherwise."""
    if selector.nothing or not all(r.operator == "In" and len(r.values) == 1 for r in selector.requirements):
        return None
    return {r.key: r.values[0] for r in selector.requirements}.items()


@dataclass
class _Spread:
    """One DoNotSchedule constraint's counts: per domain code, which domains exist, the minimum."""

    constraint: Constraint
    counts: np.ndarray  # int64 per domain code
    exists: np.ndarray  # bool per domain code
    min_match: int
    self_match: int

    @property
    def domains(self) -> int:
        return int(self.exists.sum())


class SpreadState:
    """PodTopologySpread's PreFilter state: the DoNotSchedule constraints' counts, and the nodes
    whose pods they count (carrying every topology key; per constraint, admitted by its inclusion
    policies). A preemption dry run updates a clone pod by pod (PreFilterExtensions)."""

    def __init__(self, spreads: list[_Spread], has_all: np.ndarray, eligible: list[np.ndarray]):
        self.spreads = spreads
        self.has_all = has_all
        self.eligible = eligible

    def clone(self) -> "SpreadState":
        copies = [_Spread(s.constraint, s.counts.copy(), s.exists, s.min_match, s.self_match) for s in self.spreads]
        return SpreadState(copies, self.has_all, self.eligible)

    def update(self, other: Pod, pod: Pod, cluster: ClusterState, i: int, delta: int) -> None:
        """updateWithPod: a pod of the incoming pod's namespace added to (or removed from) node i
        moves the count of node i's domain for each constraint whose selector matches it, when node
        i carries every topology key and the constraint's inclusion policies admit it. Unlike
        PreFilter's count, a terminating pod moves it too, and so does any pod under an empty
        selector, as upstream's update does."""
        if other.namespace != pod.namespace or not self.has_all[i]:
            return
        for s, mask in zip(self.spreads, self.eligible):
            if not mask[i] or not s.constraint.selector.matches(other.labels):
                continue
            s.counts[cluster.label_column(s.constraint.topology_key).codes[i]] += delta
            # Only node i's domain changed: the minimum over the domains is what upstream's two
            # critical paths give after a change to one domain.
            s.min_match = int(s.counts[s.exists].min()) if s.domains >= s.constraint.min_domains else 0


CONSTRAINT_CACHE_SIZE = 32  # entries of the per-constraint score caches before they are dropped


def _remember(cache: dict, c: Constraint, value: tuple) -> None:
    """Stores a per-constraint cache entry under id(c) (no hashing of the selector); as ids of
    other templates' constraints pile up, the cache is emptied once it grows past a bound."""
    if id(c) not in cache and len(cache) >= CONSTRAINT_CACHE_SIZE:
        cache.clear()
    cache[id(c)] = value


def _template_objects(pod: Pod) -> tuple:
    """The objects replicas of one workload share: spec, labels and owner references (held, so
    their ids stay unique while cached)."""
    return pod.spec, pod.labels, pod.owner_references


def _same_objects(held: tuple, pod: Pod) -> bool:
    """Tells whether the pod has the very spec, labels and owners held: a hit without hashing."""
    spec, labels, owners = held
    return spec is pod.spec and labels is pod.labels and owners is pod.owner_references


def _removed_position(before: np.ndarray, after: np.ndarray) -> int | None:
    """The position in `before` of the one element `after` lacks, when that is all that differs."""
    if len(before) != len(after) + 1:
        return None
    differ = np.flatnonzero(before[:-1] != after)
    pos = int(differ[0]) if len(differ) else len(after)
    return pos if np.array_equal(before[pos + 1:], after[pos:]) else None


def _used_slots(per_slot: np.ndarray) -> np.ndarray:
    """Slots some candidate uses; never the last one (ignored candidates take no part in
    NormalizeScore's min and max)."""
    used = per_slot > 0
    used[-1] = False
    return used


def _round_half_away(x: np.ndarray, in_place: bool = False) -> np.ndarray:
    """math.Round for non-negative values; with `in_place`, x (a scratch array) is overwritten
    instead of allocating two temporaries."""
    if not in_place:
        return np.floor(x + 0.5).astype(np.int64)
    x += 0.5
    return np.floor(x, out=x).astype(np.int64)


def controller_of(pod: Pod) -> Mapping | None:
    """metav1.GetControllerOf: the pod's owner reference with `controller: true`, else None."""
    return next((o for o in pod.owner_references if o.get("controller") is True), None)


def _controller_key(pod: Pod) -> tuple:
    """What the default selector reads of the pod's controller reference (a cache key)."""
    ref = controller_of(pod)
    return (ref.get("apiVersion"), ref.get("kind"), ref.get("name"), ref.get("uid")) if ref else ()


def _group_version(api_version: Any) -> tuple[str, str] | None:
    """schema.ParseGroupVersion: "v1" -> ("", "v1"), "apps/v1" -> ("apps", "v1"); None when invalid."""
    if not api_version or api_version == "/":
        return "", ""
    if not isinstance(api_version, str) or api_version.count("/") > 1:
        return None
    group, _, version = api_version.rpartition("/")
    return group, version


class DefaultSelectors:
    """helper.DefaultSelector over one snapshot: the selector of the default constraints of a pod.

    It ANDs the selectors of every Service of the pod's namespace whose selector (a label map; a
    Service without one matches nothing) matches the pod's labels, and the selector of the pod's
    controller when its reference names exactly v1 ReplicationController (its label map merged in,
    winning on a shared key), apps/v1 ReplicaSet or apps/v1 StatefulSet (its LabelSelector's
    requirements added; nothing for a nil or invalid one), looked up by namespace and name in the
    snapshot: a controller the snapshot lacks adds nothing. Services are indexed by namespace once;
    selectors are cached by what they depend on (namespace, labels, controller reference)."""

    def __init__(self, snapshot: Any):
        self.snapshot = snapshot
        self.services: dict[str, list[Mapping[str, str]]] = {}
        for service in getattr(snapshot, "services", None) or ():
            if service.selector is not None:
                self.services.setdefault(service.namespace, []).append(service.selector)
        self.controllers = getattr(snapshot, "controllers", None) or {}
        self._cache: dict[tuple, Selector] = {}

    def selector(self, pod: Pod) -> Selector:
        key = (pod.namespace, tuple(pod.labels.items()), _controller_key(pod))
        hit = self._cache.get(key)
        if hit is None:
            if len(self._cache) >= SELECTOR_CACHE_SIZE:
                self._cache.clear()
            hit = self._cache[key] = self._build(pod)
        return hit

    def _build(self, pod: Pod) -> Selector:
        labels = pod.labels
        merged: dict[str, str] = {}
        for wanted in self.services.get(pod.namespace, ()):
            if all(labels.get(k) == v for k, v in wanted.items()):  # an empty selector matches every pod
                merged.update(wanted)
        ref = controller_of(pod)
        gv = _group_version(ref.get("apiVersion")) if ref is not None else None
        kind = ref.get("kind") if gv is not None and (*gv, ref.get("kind")) in DEFAULT_SELECTOR_OWNERS else None
        controller = self.controllers.get((kind, pod.namespace, ref.get("name"))) if kind else None
        if controller is not None and kind == "ReplicationController":
            merged.update(controller.selector or {})
        selector = label_set_selector(merged) if merged else EVERYTHING
        if controller is not None and kind != "ReplicationController":
            try:
                other = parse_selector(controller.selector)
            except InputError:  # LabelSelectorAsSelector failed: nothing added
                other = EVERYTHING
            if not other.nothing:
                selector = selector.add(*other.requirements)
        return selector


class PodTopologySpread:
    """Rejects nodes where the pod would push a topology domain past maxSkew; favours the least crowded domains."""

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        self.args = plugin_args(args, {"defaultConstraints": None, "defaultingType": SYSTEM_DEFAULTING}, NAME)
        self.handle = handle
        defaulting = self.args["defaultingType"] or SYSTEM_DEFAULTING
        defaults = self.args["defaultConstraints"] or []
        if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
            raise InputError(f"{NAME} args: defaultingType: Unsupported value: {defaulting!r}: supported values: "
                             f"\"{LIST_DEFAULTING}\", \"{SYSTEM_DEFAULTING}\"")
        if not isinstance(defaults, list):
            raise InputError(f"{NAME} args: defaultConstraints must be a list")
        seen = set()
        for k, raw in enumerate(defaults):
            _validate(raw, f"{NAME} args: defaultConstraints[{k}]", for_args=True)
            pair = (raw["topologyKey"], raw["whenUnsatisfiable"])
            if pair in seen:
                raise InputError(f"{NAME} args: defaultConstraints[{k}]: Duplicate value: "
                                 f"{{{pair[0]!r}, {pair[1]!r}}}")
            seen.add(pair)
        if defaulting == SYSTEM_DEFAULTING and defaults:
            raise InputError(f"{NAME} args: defaultConstraints: Invalid value: when .defaultingType is "
                             f"\"{SYSTEM_DEFAULTING}\", it must be empty")
        self.system_defaulted = defaulting == SYSTEM_DEFAULTING
        self._template_cache = None
        self._candidate_cache = None
        self._constraints_cache: dict[str, tuple] = {}
        self._selectors: DefaultSelectors | None = None
        self._zone_cache: dict[int, tuple] = {}  # id(constraint) -> (..., constraint)
        self._host_cache: dict[int, tuple] = {}
        self.score_by_table = True  # False: per-candidate arithmetic for every case (tests compare)
        self.default_constraints = list(SYSTEM_DEFAULT_CONSTRAINTS) if self.system_defaulted else defaults

    # -- constraints ---------------------------------------------------------------------------------

    def constraints(self, pod: Pod, when: str) -> list[Constraint]:
        """getConstraints: the pod's own constraints of one action, else the default ones.

        Cached for the last template per action: replicas share the spec (held, so its id stays
        unique), labels and owner references and have the same namespace, which with the snapshot's
        Services and controllers is all the constraints depend on."""
        selectors = self.default_selectors()
        hit = self._constraints_cache.get(when)
        if hit is not None and hit[3] is selectors and hit[4] == pod.namespace and _same_objects(hit[1], pod):
            return hit[2]
        key = (id(pod.spec), pod.namespace, _controller_key(pod), tuple(pod.labels.items()))
        if hit is not None and hit[3] is selectors and hit[0] == key and hit[1][0] is pod.spec:
            return hit[2]
        value = self._constraints(pod, when, selectors)
        self._constraints_cache[when] = (key, _template_objects(pod), value, selectors, pod.namespace)
        return value

    def _constraints(self, pod: Pod, when: str, selectors: DefaultSelectors) -> list[Constraint]:
        own = pod.spec.get("topologySpreadConstraints")
        if own:
            return _constraints(own, pod.labels, when, f"pod {pod.key}: spec.topologySpreadConstraints")
        constraints = _constraints(self.default_constraints, pod.labels, when, f"{NAME} args: defaultConstraints")
        if not constraints:
            return []
        selector = selectors.selector(pod)
        if selector.empty:  # buildDefaultConstraints: no default constraints without a selector
            return []
        return [Constraint(c.max_skew, c.topology_key, selector, c.min_domains, c.node_affinity_policy,
                           c.node_taints_policy, c.when) for c in constraints]

    def default_selectors(self) -> DefaultSelectors:
        """helper.DefaultSelector over the handle's snapshot, built once per snapshot."""
        snapshot = self.handle.snapshot if self.handle is not None else None
        selectors = self._selectors
        if selectors is None or selectors.snapshot is not snapshot:
            selectors = self._selectors = DefaultSelectors(snapshot)
        return selectors

    def _eligible(self, pod: Pod, cluster: ClusterState, constraints: list[Constraint],
                  require_all: bool = True) -> tuple[np.ndarray, list[np.ndarray]]:
        """Nodes carrying every topology key, and per constraint the nodes its inclusion policies admit."""
        has_all = np.ones(cluster.n, dtype=bool)
        if require_all:
            for c in constraints:
                has_all &= cluster.label_column(c.topology_key).present
        affinity = untolerated = None
        per = []
        for c in constraints:
            mask = has_all.copy()
            if c.node_affinity_policy == HONOR:
                if affinity is None:
                    affinity = required_node_affinity_mask(pod, cluster)
                mask &= affinity
            if c.node_taints_policy == HONOR:
                if untolerated is None:
                    untolerated = untolerated_mask(pod, cluster)
                mask &= ~untolerated
            per.append(mask)
        return has_all, per

    # -- filtering -----------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status | None:
        constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        if not constraints:
            return Status.skip()
        has_all, eligible = self._eligible(pod, cluster, constraints)
        spreads = []
        per_node_cache: dict[Selector, np.ndarray] = {}
        for c, mask in zip(constraints, eligible):
            col = cluster.label_column(c.topology_key)
            if c.selector not in per_node_cache:
                per_node_cache[c.selector] = matching_pods_per_node(pod, c.selector, cluster)
            per_node = per_node_cache[c.selector]
            size = len(col.values)
            counts = np.bincount(col.codes[mask], weights=per_node[mask], minlength=size).astype(np.int64)
            exists = np.bincount(col.codes[mask], minlength=size) > 0
            domains = int(exists.sum())
            min_match = int(counts[exists].min()) if domains else MAX_INT32
            if domains < c.min_domains:
                min_match = 0
            spreads.append(_Spread(c, counts, exists, min_match, int(c.selector.matches(pod.labels))))
        state.write(PRE_FILTER_STATE_KEY, SpreadState(spreads, has_all, eligible))
        return None

    def add_pod(self, state: CycleState, pod: Pod, other: Pod, cluster: ClusterState, i: int) -> Status | None:
        state.read(PRE_FILTER_STATE_KEY).update(other, pod, cluster, i, +1)
        return None

    def remove_pod(self, state: CycleState, pod: Pod, other: Pod, cluster: ClusterState, i: int) -> Status | None:
        state.read(PRE_FILTER_STATE_KEY).update(other, pod, cluster, i, -1)
        return None

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        spreads = state.read(PRE_FILTER_STATE_KEY).spreads
        n = cluster.n
        codes = np.zeros(n, dtype=np.int8)
        short = np.zeros((n, 2), dtype=bool)
        open_ = np.ones(n, dtype=bool)
        for s in spreads:
            col = cluster.label_column(s.constraint.topology_key)
            missing = open_ & ~col.present
            short[missing, 1] = True
            codes[missing] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            open_ &= ~missing
            match = s.counts[np.where(col.present, col.codes, 0)] if len(s.counts) else np.zeros(n, dtype=np.int64)
            skew = np.where(col.present, match, 0) + s.self_match - s.min_match
            bad = open_ & (skew > s.constraint.max_skew)
            short[bad, 0] = True
            codes[bad] = Code.UNSCHEDULABLE
            open_ &= ~bad

        def explain(i: int) -> list[str]:
            lines = []
            for s in spreads:
                c = s.constraint
                col = cluster.label_column(c.topology_key)
                domains = ", ".join(f"{col.values[d]}={int(s.counts[d])}" for d in np.flatnonzero(s.exists))
                lines.append(f"{c.topology_key} (maxSkew {c.max_skew}, minDomains {c.min_domains}, "
                             f"selector {c.selector}): domains {domains or 'none'}")
                if not col.present[i]:
                    lines.append(f"node has no label {c.topology_key}")
                    break
                value = col.values[col.codes[i]]
                count = int(s.counts[col.codes[i]])
                skew = count + s.self_match - s.min_match
                minimum = f"min {s.min_match}"
                if s.domains < c.min_domains:
                    minimum += f" ({s.domains} domain(s) < minDomains {c.min_domains})"
                verdict = ">" if skew > c.max_skew else "<="
                lines.append(f"{value}: {count} matching pods, {minimum}, skew would be {skew} "
                             f"{verdict} maxSkew {c.max_skew}")
                if skew > c.max_skew:
                    break
            return lines

        return NodeStatus.from_reasons(short, [ERR_REASON_CONSTRAINTS_NOT_MATCH, ERR_REASON_NODE_LABEL_NOT_MATCH],
                                       codes, explain)

    # -- scoring ---------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState,
                  candidates: np.ndarray) -> Status | None:
        if cluster.n == 0:
            return Status.skip()
        constraints, has_all, eligible, doms = self._score_template(pod, cluster)
        if not constraints:
            return Status.skip()
        cand = np.asarray(candidates, dtype=np.intp)
        ignored, per_constraint, any_ignored = self._candidate_arrays(cand, cluster, constraints, has_all, eligible,
                                                                      doms)
        entries = []
        matches: dict[int, _MatchCounts] = {}  # by id: hashing a Selector walks its requirements
        for c, (weight, zone, arrays) in zip(constraints, per_constraint):
            match = matches.get(id(c.selector))
            if match is None:
                match = matches[id(c.selector)] = matching_counts(pod, c.selector, cluster)
            counts = terms = None
            if zone is not None:
                counts = self._domain_counts(c, zone, match)
            elif arrays[2] is not None:  # a hostname constraint with candidate positions: terms kept
                terms = self._host_terms(c, weight, arrays, cand, match)
            entries.append((c, weight, match.counts, counts, terms))
        state.write(PRE_SCORE_STATE_KEY, (entries, ignored, candidates, per_constraint, any_ignored))
        return None

    def _domain_counts(self, c: Constraint, zone: tuple, match: _MatchCounts) -> np.ndarray:
        """The matching pods per domain over the constraint's counted nodes (a copy).

        Kept per constraint for the last candidate set: the pods counted per node since the last
        cycle (one replica, most often) are added to their domains instead of summing every node."""
        counted, counted_dom, size, is_counted, dom, _ = zone
        hit = self._zone_cache.get(id(c))  # by id (the cached constraint, checked below): no hashing
        if hit is not None and hit[4] is c and hit[0] is zone and hit[1] is match:
            counts = hit[2]
            for node in match.added[hit[3]:]:
                if is_counted[node]:
                    counts[dom[node]] += 1
        else:
            counts = np.bincount(counted_dom, weights=match.counts[counted], minlength=size).astype(np.int64)
        _remember(self._zone_cache, c, (zone, match, counts, len(match.added), c))
        return counts.copy()

    def _host_terms(self, c: Constraint, weight: float, arrays: tuple, cand: np.ndarray,
                    match: _MatchCounts) -> np.ndarray:
        """Per candidate, a hostname constraint's score term (matching pods on the node * weight +
        maxSkew - 1; 0.0 without the label), kept for the last candidate set: only the nodes
        counted since the last cycle (one per placement) are recomputed."""
        present, _, position = arrays
        skew = float(c.max_skew - 1)
        hit = self._host_cache.get(id(c))  # by id, as _domain_counts
        if hit is not None and hit[4] is c and hit[0] is arrays and hit[1] is match:
            terms = hit[2]
            for node in match.added[hit[3]:]:
                pos = position[node]
                if pos >= 0 and present[pos]:
                    terms[pos] = float(match.counts[node]) * weight + skew  # the floats numpy computes
        else:
            terms = np.where(present, match.counts[cand].astype(np.float64) * weight + skew, 0.0)
        _remember(self._host_cache, c, (arrays, match, terms, len(match.added), c))
        return terms

    def _candidate_arrays(self, cand: np.ndarray, cluster: ClusterState, constraints, has_all, eligible, doms):
        """Returns what PreScore and Score read that depends only on the template and the candidate
        set: the ignored candidates and, per constraint, its weight, the counted nodes and their
        domains, and the candidates' label presence, codes and (for a domain table lookup) slots.
        Cached for the last candidate set (replicas of a template see the same candidates until a
        node fills up); the same array object (candidate arrays are never changed in place) is a
        hit without a compare, and a set that lost one node (the one that filled up) is derived
        from the last. The counted nodes stay the same objects while the candidates' set of
        domains does, so _domain_counts goes on incrementally."""
        hit = self._candidate_cache
        if hit is not None and hit[0] is constraints:
            if hit[3] is cand or (len(hit[1]) == len(cand) and np.array_equal(hit[1], cand)):
                if hit[3] is not cand:  # equal contents (a rebuilt candidate array): hit by identity next time
                    self._candidate_cache = (*hit[:3], cand, hit[4])
                return hit[2]
            pos = _removed_position(hit[1], cand)
            if pos is not None:
                derived = self._without_candidate(hit, pos, cand, cluster, constraints, doms)
                if derived is not None:
                    return derived
        previous = hit[2][1] if hit is not None and hit[0] is constraints else [None] * len(constraints)
        if has_all.all():
            ignored, kept = np.zeros(len(cand), dtype=bool), cand
        else:
            ignored = ~has_all[cand]
            kept = cand[~ignored]
        # Domain constraints are scored by a table lookup (see score): no per-candidate codes.
        per_constraint, tallies = [], []
        for c, mask, (size, dom, present_all, codes_all, slots_all), before in zip(
                constraints, eligible, doms, previous):
            by_table = self.score_by_table and c.topology_key != HOSTNAME
            present, codes = (None, None) if by_table else (present_all[cand], codes_all[cand])
            if c.topology_key == HOSTNAME:
                per_constraint.append((math.log(len(kept) + 2), None, (present, codes, self._positions(cand, cluster))))
                tallies.append(None)
                continue
            kept_per_domain = np.bincount(dom[kept], minlength=size)
            in_candidates = kept_per_domain > 0
            zone = before[1] if before is not None else None
            if zone is None or not np.array_equal(zone[5], in_candidates):
                is_counted = mask & in_candidates[dom]
                counted = np.flatnonzero(is_counted)
                zone = (counted, dom[counted], size, is_counted, dom, in_candidates)
            lookup = slots_all[cand]
            per_slot = np.bincount(lookup, minlength=size + 2)
            per_constraint.append((math.log(int(in_candidates.sum()) + 2), zone,
                                   (present, codes, (lookup, _used_slots(per_slot)))))
            tallies.append((kept_per_domain, per_slot))
        value = (ignored, per_constraint, bool(ignored.any()))  # any(): once per candidate set, not per cycle
        self._candidate_cache = (constraints, cand.copy(), value, cand, tallies)
        return value

    def _positions(self, cand: np.ndarray, cluster: ClusterState) -> np.ndarray | None:
        """For _host_terms: each node's position among the candidates (-1 for the others)."""
        if not self.score_by_table:
            return None
        position = np.full(cluster.n, -1, dtype=np.intp)
        position[cand] = np.arange(len(cand))
        return position

    def _without_candidate(self, hit: tuple, pos: int, cand: np.ndarray, cluster: ClusterState, constraints, doms):
        """_candidate_arrays of the last candidate set less the one at `pos`, without a pass over
        the nodes per constraint; None when that node was the last candidate of a domain (the
        counted nodes change: rebuilt)."""
        _, before, (ignored, per_constraint, _), _, tallies = hit
        node, was_ignored = int(before[pos]), bool(ignored[pos])
        ignored = without(ignored, pos)
        kept = len(ignored) - int(np.count_nonzero(ignored))
        entries, new_tallies = [], []
        for c, (weight, zone, (present, codes, extra)), tally, (size, dom, _, _, slots_all) in zip(
                constraints, per_constraint, tallies, doms):
            if present is not None:
                present, codes = without(present, pos), without(codes, pos)
            if c.topology_key == HOSTNAME:
                entries.append((math.log(kept + 2), None, (present, codes, self._positions(cand, cluster))))
                new_tallies.append(None)
                continue
            kept_per_domain, per_slot = tally
            if not was_ignored:
                if kept_per_domain[dom[node]] == 1:
                    return None
                kept_per_domain = kept_per_domain.copy()
                kept_per_domain[dom[node]] -= 1
            per_slot = per_slot.copy()
            per_slot[slots_all[node]] -= 1
            lookup = without(extra[0], pos)
            entries.append((weight, zone, (present, codes, (lookup, _used_slots(per_slot)))))
            new_tallies.append((kept_per_domain, per_slot))
        value = (ignored, entries, kept < len(ignored))
        self._candidate_cache = (constraints, cand.copy(), value, cand, new_tallies)
        return value

    def _score_template(self, pod: Pod, cluster: ClusterState):
        """Returns what PreScore reads that depends only on the pod's template and the nodes (the
        ScheduleAnyway constraints, the eligible-node masks, each constraint's domain codes),
        cached for the last template: replicas sharing a spec (and labels, namespace, controller)
        reuse it while the snapshot's Services and controllers stay the same. Placing pods changes
        none of it (only the pod counts, computed per cycle)."""
        hit = self._template_cache
        selectors = self.default_selectors()
        if hit is not None and hit[2] is cluster and hit[4] == (pod.namespace, cluster.n, selectors) \
                and _same_objects(hit[1], pod):
            return hit[3]
        key = (id(pod.spec), pod.namespace, _controller_key(pod), tuple(sorted(pod.labels.items())), id(cluster),
               cluster.n)
        if hit is not None and hit[0] == key and hit[1][0] is pod.spec and hit[2] is cluster \
                and hit[4][2] is selectors:
            return hit[3]
        constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        if not constraints:
            value = ([], None, [], [])
        else:
            require_all = bool(pod.spec.get("topologySpreadConstraints")) or not self.system_defaulted
            has_all, eligible = self._eligible(pod, cluster, constraints, require_all)
            doms = []
            for c in constraints:
                col = cluster.label_column(c.topology_key)
                size = len(col.values) + 1  # the last code stands for a missing label (value "")
                codes = np.where(col.present, col.codes, 0)
                # Slots of a per-domain score table: the domains, then absent labels (score 0),
                # then ignored nodes (score 0, outside NormalizeScore's min and max).
                slots = np.where(~has_all, size + 1, np.where(col.present, col.codes, size))
                doms.append((size, np.where(col.present, col.codes, col.code_of.get("", size - 1)),
                             col.present, codes, slots))
            value = (constraints, has_all, eligible, doms)
        self._template_cache = (key, _template_objects(pod), cluster, value, (pod.namespace, cluster.n, selectors))
        return value

    def score(self, state: CycleState, pod: Pod, cluster: ClusterState, candidates: np.ndarray) -> np.ndarray:
        entries, ignored, scored, per_constraint, any_ignored = state.read(PRE_SCORE_STATE_KEY)
        cand = np.asarray(candidates, dtype=np.intp)
        same = candidates is scored or (len(cand) == len(scored) and np.array_equal(cand, scored))
        if same and self.score_by_table and len(entries) == 1 and entries[0][3] is not None:
            # One domain constraint: every candidate's score is its domain's, so round per domain
            # and look up (0 for absent labels and ignored candidates).
            lookup, used = per_constraint[0][2][2]
            table = self._domain_table(entries[0])
            out = table.take(lookup)
            state.write(DOMAIN_SCORES_KEY, (out, table, lookup, used))
            return out
        total = None  # the terms summed in order (all >= 0: the same floats as 0.0 + each in turn)
        scratch = False  # whether total is our own array (a lone term may be a cached one)
        for entry, (_, _, arrays) in zip(entries, per_constraint):
            term = self._term(entry, arrays, cand, cluster, same)
            total, scratch = (term, False) if total is None else (total + term, True)
        if total is None:
            total = np.zeros(len(cand), dtype=np.float64)
        out = _round_half_away(total, in_place=scratch)
        if any_ignored if same else ignored.any():
            out[ignored] = 0
        return out

    @staticmethod
    def _domain_table(entry: tuple) -> np.ndarray:
        """One domain constraint's raw score per slot (the domains, then 0 for absent labels and
        for ignored candidates)."""
        c, weight, _, counts, _ = entry
        skew = float(c.max_skew - 1)  # a few domains: plain floats, as numpy would compute them
        return np.array([math.floor(n * weight + skew + 0.5) for n in counts.tolist()] + [0, 0], dtype=np.int64)

    def slot_scores(self, state: CycleState, pod: Pod, cluster: ClusterState,
                    candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Score then NormalizeScore for the candidates PreScore saw, per slot when a single domain
        constraint scores them: returns (normalized score per slot, each candidate's slot), so a
        caller adds a few values through one lookup instead of two passes over the candidates.
        Slots no candidate uses hold 0. None when the per-candidate path is needed."""
        entries, _, scored, per_constraint, _ = state.read(PRE_SCORE_STATE_KEY)
        if candidates is not scored or not self.score_by_table or len(entries) != 1 or entries[0][3] is None:
            return None
        lookup, used = per_constraint[0][2][2]
        if not used.any():  # every candidate ignored: all score 0
            return np.zeros(len(used), dtype=np.int64), lookup
        table = self._normalized_slots(self._domain_table(entries[0]), used)
        table[~used] = 0  # unused slots (and the ignored candidates' last one, never `used`) score 0
        return table, lookup

    def _term(self, entry: tuple, arrays: tuple, cand: np.ndarray, cluster: ClusterState, same: bool) -> np.ndarray:
        """One constraint's score term per candidate: matching pods in the node's domain * weight +
        maxSkew - 1, 0.0 where the node lacks the key (read-only)."""
        c, weight, per_node, counts, terms = entry
        if same and terms is not None:
            return terms
        if same and self.score_by_table and counts is not None:
            # Looked up per domain (0.0 for absent labels; ignored candidates end at 0 anyway).
            skew = float(c.max_skew - 1)  # a few domains: plain floats, as numpy would compute them
            return np.array([n * weight + skew for n in counts.tolist()] + [0.0, 0.0]).take(arrays[2][0])
        if same:
            present, codes, _ = arrays
        else:
            col = cluster.label_column(c.topology_key)
            present = col.codes[cand] >= 0
            codes = np.where(present, col.codes[cand], 0)
        cnt = per_node[cand] if counts is None else counts[codes]
        return np.where(present, cnt.astype(np.float64) * weight + float(c.max_skew - 1), 0.0)

    def normalize_score(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray:
        domain_scores = state.get(DOMAIN_SCORES_KEY)
        if domain_scores is not None and domain_scores[0] is scores:
            return self._normalize_table(*domain_scores[1:])
        _, ignored, _, _, any_ignored = state.read(PRE_SCORE_STATE_KEY)
        scores = np.asarray(scores, dtype=np.int64)
        if len(scores) and not any_ignored:  # the common case, without the masking
            lo, hi = int(scores.min()), int(scores.max())
            if hi == 0:
                return np.full_like(scores, MAX_NODE_SCORE)
            if hi - lo < len(scores):  # few distinct values: divide once per value, then look up
                return (MAX_NODE_SCORE * (hi + lo - np.arange(lo, hi + 1)) // hi).take(scores - lo)
            return MAX_NODE_SCORE * (hi + lo - scores) // hi
        valid = ~ignored
        out = np.zeros_like(scores)
        if not valid.any():
            return out
        lo, hi = int(scores[valid].min()), int(scores[valid].max())
        if hi == 0:
            out[valid] = MAX_NODE_SCORE
            return out
        out[valid] = MAX_NODE_SCORE * (hi + lo - scores[valid]) // hi
        return out

    @staticmethod
    def _normalize_table(table: np.ndarray, lookup: np.ndarray, used: np.ndarray) -> np.ndarray:
        """normalize_score of Score's table lookup, per slot: min and max over the slots valid
        candidates use, ignored candidates 0."""
        if not used.any():
            return np.zeros(len(lookup), dtype=np.int64)
        return PodTopologySpread._normalized_slots(table, used).take(lookup)

    @staticmethod
    def _normalized_slots(table: np.ndarray, used: np.ndarray) -> np.ndarray:
        """Normalizes a per-slot score table with min and max over the used slots (at least one);
        the last slot (ignored candidates) is 0."""
        scores = table.tolist()
        valid = [v for v, u in zip(scores, used.tolist()) if u]
        lo, hi = min(valid), max(valid)
        out = [MAX_NODE_SCORE if hi == 0 else MAX_NODE_SCORE * (hi + lo - v) // hi for v in scores[:-1]] + [0]
        return np.array(out, dtype=np.int64)
