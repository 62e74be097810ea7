"""PodTopologySpread: DoNotSchedule constraints filter nodes by skew; ScheduleAnyway ones score them.

Matching pods are counted per node over the cluster's PodIndex (vectorized label-selector
matching) and summed per topology domain with np.bincount on the domain codes of the node
table's label column. Pods without constraints of their own get the profile's default
constraints (PodTopologySpreadArgs: `defaultingType: System` gives hostname maxSkew 3 and zone
maxSkew 5, ScheduleAnyway) when they have a controller.

kplan does not load Services, ReplicaSets, StatefulSets or ReplicationControllers, so the
default constraints' selector (helper.DefaultSelector, built from those objects upstream) is the
pod's own labels, for pods whose controller is a ReplicaSet, StatefulSet or ReplicationController.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from kplan.api.label_selectors import Requirement, Selector, label_set_selector, parse_selector
from kplan.api.node_selectors import match_labels_mask, node_selector_terms_mask
from kplan.api.objects import Pod
from kplan.cluster.pod_index import PodIndex
from kplan.cluster.state import ClusterState
from kplan.errors import InputError
from kplan.framework.interfaces import MAX_NODE_SCORE, CycleState, Handle, plugin_args
from kplan.framework.status import Code, NodeStatus, Status
from kplan.plugins.taint_toleration import first_untolerated

NAME = "PodTopologySpread"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
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
# Controllers whose selector helper.DefaultSelector reads (Services cannot be told from the pod).
DEFAULT_SELECTOR_OWNERS = ("ReplicaSet", "StatefulSet", "ReplicationController")
MAX_INT32 = (1 << 31) - 1


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

    The counts are cached per (selector, namespace) on the pod index and brought up to date
    incrementally: when pods were only added since (replicas assumed one after another), just the
    new slots are counted; a removal (the table's pod count lower than expected) recomputes. The returned
    array is shared: read-only.
    """
    index = PodIndex.of(cluster)
    if selector.empty or selector.nothing or pod.namespace not in index.ns_code:
        return np.zeros(cluster.n, dtype=np.int64)
    ns = index.ns_code[pod.namespace]
    cache = index.__dict__.setdefault("_spread_counts", {})
    alive = int(cluster.pod_count.sum())  # assume/forget move it with the index's live pods
    hit = cache.get((selector, ns))
    if hit is not None:
        counts, seen, seen_alive = hit
        if seen <= index.size and alive == seen_alive + (index.size - seen) and len(counts) == cluster.n:
            for s in range(seen, index.size):
                if (index.ns[s] == ns and not index.terminating[s] and index.alive[s]
                        and selector.matches(index.labels[s])):
                    counts[index.node[s]] += 1
            cache[(selector, ns)] = (counts, index.size, alive)
            return counts
    mask = index.selector_mask(selector) & ~index.terminating[:index.size]
    mask &= index.ns[:index.size] == ns
    counts = index.per_node(mask)
    cache[(selector, ns)] = (counts, index.size, alive)
    return counts


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


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """math.Round for non-negative values."""
    return np.floor(x + 0.5).astype(np.int64)


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
        self.default_constraints = list(SYSTEM_DEFAULT_CONSTRAINTS) if self.system_defaulted else defaults

    # -- constraints ---------------------------------------------------------------------------------

    def constraints(self, pod: Pod, when: str) -> list[Constraint]:
        """getConstraints: the pod's own constraints of one action, else the default ones."""
        own = pod.spec.get("topologySpreadConstraints")
        if own:
            return _constraints(own, pod.labels, when, f"pod {pod.key}: spec.topologySpreadConstraints")
        constraints = _constraints(self.default_constraints, pod.labels, when, f"{NAME} args: defaultConstraints")
        if not constraints:
            return []
        selector = self.default_selector(pod)
        if selector.empty:
            return []
        return [Constraint(c.max_skew, c.topology_key, selector, c.min_domains, c.node_affinity_policy,
                           c.node_taints_policy, c.when) for c in constraints]

    @staticmethod
    def default_selector(pod: Pod) -> Selector:
        if pod.owner_kind in DEFAULT_SELECTOR_OWNERS and pod.labels:
            return label_set_selector(pod.labels)
        return Selector()

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
        _, eligible = self._eligible(pod, cluster, constraints)
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
        state.write(PRE_FILTER_STATE_KEY, spreads)
        return None

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        spreads: list[_Spread] = state.read(PRE_FILTER_STATE_KEY)
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
        ignored, per_constraint = self._candidate_arrays(cand, cluster, constraints, has_all, eligible, doms)
        entries = []
        per_node_cache: dict[Selector, np.ndarray] = {}
        for c, (weight, zone, _) in zip(constraints, per_constraint):
            if c.selector not in per_node_cache:
                per_node_cache[c.selector] = matching_pods_per_node(pod, c.selector, cluster)
            per_node = per_node_cache[c.selector]
            if zone is None:
                entries.append((c, weight, per_node, None))
                continue
            counted, counted_dom, size = zone
            counts = np.bincount(counted_dom, weights=per_node[counted], minlength=size).astype(np.int64)
            entries.append((c, weight, per_node, counts))
        state.write(PRE_SCORE_STATE_KEY, (entries, ignored, candidates, per_constraint))
        return None

    def _candidate_arrays(self, cand: np.ndarray, cluster: ClusterState, constraints, has_all, eligible, doms):
        """Returns what PreScore and Score read that depends only on the template and the candidate
        set: the ignored candidates and, per constraint, its weight, the counted nodes and their
        domains, and the candidates' label presence and codes. Cached for the last candidate set
        (replicas of a template see the same candidates until a node fills up)."""
        hit = self._candidate_cache
        if hit is not None and hit[0] is constraints and len(hit[1]) == len(cand) and np.array_equal(hit[1], cand):
            return hit[2]
        ignored = ~has_all[cand]
        kept = cand[~ignored]
        per_constraint = []
        for c, mask, (size, dom) in zip(constraints, eligible, doms):
            col = cluster.label_column(c.topology_key)
            present = col.codes[cand] >= 0
            codes = np.where(present, col.codes[cand], 0)
            if c.topology_key == HOSTNAME:
                per_constraint.append((math.log(len(kept) + 2), None, (present, codes)))
                continue
            in_candidates = np.zeros(size, dtype=bool)
            in_candidates[dom[kept]] = True
            counted = np.flatnonzero(mask & in_candidates[dom])
            per_constraint.append((math.log(int(in_candidates.sum()) + 2), (counted, dom[counted], size),
                                   (present, codes)))
        value = (ignored, per_constraint)
        self._candidate_cache = (constraints, cand.copy(), value)
        return value

    def _score_template(self, pod: Pod, cluster: ClusterState):
        """Returns what PreScore reads that depends only on the pod's template and the nodes (the
        ScheduleAnyway constraints, the eligible-node masks, each constraint's domain codes),
        cached for the last template: replicas sharing a spec (and labels, namespace, owner kind)
        reuse it. Placing pods changes none of it (only the pod counts, computed per cycle)."""
        key = (id(pod.spec), pod.namespace, pod.owner_kind, tuple(sorted(pod.labels.items())), id(cluster), cluster.n)
        hit = self._template_cache
        if hit is not None and hit[0] == key and hit[1] is pod.spec and hit[2] is cluster:
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
                doms.append((size, np.where(col.present, col.codes, col.code_of.get("", size - 1))))
            value = (constraints, has_all, eligible, doms)
        self._template_cache = (key, pod.spec, cluster, value)
        return value

    def score(self, state: CycleState, pod: Pod, cluster: ClusterState, candidates: np.ndarray) -> np.ndarray:
        entries, ignored, scored, per_constraint = state.read(PRE_SCORE_STATE_KEY)
        cand = np.asarray(candidates, dtype=np.intp)
        same = candidates is scored or (len(cand) == len(scored) and np.array_equal(cand, scored))
        total = np.zeros(len(cand), dtype=np.float64)
        for (c, weight, per_node, counts), (_, _, arrays) in zip(entries, per_constraint):
            if same:
                present, codes = arrays
            else:
                col = cluster.label_column(c.topology_key)
                present = col.codes[cand] >= 0
                codes = np.where(present, col.codes[cand], 0)
            cnt = per_node[cand] if counts is None else counts[codes]
            total += np.where(present, cnt.astype(np.float64) * weight + float(c.max_skew - 1), 0.0)
        out = _round_half_away(total)
        out[ignored] = 0
        return out

    def normalize_score(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray:
        ignored = state.read(PRE_SCORE_STATE_KEY)[1]
        scores = np.asarray(scores, dtype=np.int64)
        if len(scores) and not ignored.any():  # the common case, without the masking
            lo, hi = int(scores.min()), int(scores.max())
            if hi == 0:
                return np.full_like(scores, MAX_NODE_SCORE)
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
