"""InterPodAffinity: required pod (anti-)affinity filters nodes; preferred terms (the pod's and the
existing pods') score them.

Counts live per topology domain: for a term, the pods it matches are counted per node over the
PodIndex and summed per value of the term's topology key (np.bincount on the node table's label
codes). Existing pods' terms are interned by the index, so each distinct term is matched against
the incoming pod once. The semantics are those of the releases without the alpha
InterPodAffinityHostnameFastPath gate (an optimization that only changes corner cases).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from kplan.api.label_selectors import EVERYTHING
from kplan.api.objects import Pod
from kplan.cluster.pod_index import (
    PREFERRED_AFFINITY, PREFERRED_ANTI_AFFINITY, REQUIRED_AFFINITY, REQUIRED_ANTI_AFFINITY, AffinityTerm,
    PodIndex, pod_affinity_terms,
)
from kplan.cluster.state import ClusterState
from kplan.errors import InputError
from kplan.framework.interfaces import MAX_NODE_SCORE, CycleState, Handle, plugin_args
from kplan.framework.status import Code, NodeStatus, Status

NAME = "InterPodAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
REASONS = [ERR_REASON_AFFINITY_RULES_NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
           ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH]


def _namespace_labels(handle: Handle | None) -> dict[str, Mapping[str, str]]:
    snapshot = handle.snapshot if handle is not None else None
    if snapshot is None:
        return {}
    return {name: ns.labels for name, ns in snapshot.namespaces.items()}


def incoming_term_matches(term: AffinityTerm, pod: Pod, ns_labels: Mapping[str, Mapping[str, str]]) -> bool:
    """Matches a pod against an incoming pod's term, its namespaceSelector resolved over known namespaces."""
    ns = pod.namespace
    if ns in term.namespaces or term.namespace_selector == EVERYTHING:
        return term.selector.matches(pod.labels)
    if not term.namespace_selector.nothing and ns in ns_labels and term.namespace_selector.matches(ns_labels[ns]):
        return term.selector.matches(pod.labels)
    return False


class _Domains:
    """Counts per topology pair: for each key, an int64 count per value code of the node table."""

    def __init__(self, cluster: ClusterState):
        self.cluster = cluster
        self.by_key: dict[str, np.ndarray] = {}

    def add(self, key: str, per_node: np.ndarray, sign: int = 1) -> bool:
        """Adds per-node counts to their nodes' domains (nodes lacking the key add nothing).

        Returns whether any node carrying the key contributed (an entry of upstream's map).
        """
        col = self.cluster.label_column(key)
        present = col.present
        hit = present & (per_node != 0)
        if not hit.any():
            return False
        sums = np.bincount(col.codes[hit], weights=per_node[hit], minlength=len(col.values)).astype(np.int64)
        if key in self.by_key:
            self.by_key[key] += sign * sums
        else:
            self.by_key[key] = sign * sums
        return True

    def at(self, key: str, rows: np.ndarray | None = None) -> np.ndarray:
        """Returns the count of each node's domain (0 where the node lacks the key)."""
        col = self.cluster.label_column(key)
        codes = col.codes if rows is None else col.codes[rows]
        counts = self.by_key.get(key)
        if counts is None:
            return np.zeros(len(codes), dtype=np.int64)
        return np.where(codes >= 0, counts[np.where(codes >= 0, codes, 0)], 0)

    def any_positive(self) -> bool:
        return any((c > 0).any() for c in self.by_key.values())

    def clone(self) -> "_Domains":
        new = _Domains(self.cluster)
        new.by_key = {key: counts.copy() for key, counts in self.by_key.items()}
        return new

    def update(self, key: str, i: int, delta: int) -> None:
        """topologyToMatchedTermCount.update: node i's domain of the key moves by delta (nothing
        when node i lacks the key)."""
        col = self.cluster.label_column(key)
        code = col.codes[i]
        if code < 0:
            return
        counts = self.by_key.get(key)
        if counts is None:
            counts = self.by_key[key] = np.zeros(len(col.values), dtype=np.int64)
        counts[code] += delta


@dataclass
class AffinityState:
    """InterPodAffinity's PreFilter state: the incoming pod's required terms and, per topology
    domain, the existing pods whose anti-affinity terms match it and the pods its affinity and
    anti-affinity terms match. A preemption dry run updates a clone pod by pod."""

    affinity: list[AffinityTerm]
    anti: list[AffinityTerm]
    existing: _Domains
    affinity_counts: _Domains
    anti_counts: _Domains
    self_match: bool
    own_ns_labels: Mapping[str, str] | None
    namespaces: Mapping[str, Mapping[str, str]]

    def clone(self) -> "AffinityState":
        return dataclasses.replace(self, existing=self.existing.clone(), affinity_counts=self.affinity_counts.clone(),
                                   anti_counts=self.anti_counts.clone())

    def update(self, other: Pod, pod: Pod, i: int, delta: int) -> None:
        """updateWithPod: a pod added to (or removed from) node i moves node i's domains for its own
        required anti-affinity terms that match the incoming pod, for the incoming pod's affinity
        terms when it matches all of them, and for each of its anti-affinity terms it matches."""
        for t in pod_affinity_terms(other)[REQUIRED_ANTI_AFFINITY]:
            if t.matches(pod.labels, pod.namespace, self.own_ns_labels):
                self.existing.update(t.topology_key, i, delta)
        if self.affinity and all(incoming_term_matches(t, other, self.namespaces) for t in self.affinity):
            for t in self.affinity:
                self.affinity_counts.update(t.topology_key, i, delta)
        for t in self.anti:
            if incoming_term_matches(t, other, self.namespaces):
                self.anti_counts.update(t.topology_key, i, delta)


class InterPodAffinity:
    """Rejects nodes that break required pod affinity, anti-affinity or existing pods' anti-affinity;
    scores nodes by preferred terms."""

    name = NAME
    normalizes_by_extremes = True  # by the lowest and highest score

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        self.args = plugin_args(args, {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False},
                                NAME)
        self.handle = handle
        weight = self.args["hardPodAffinityWeight"]
        if not isinstance(weight, int) or isinstance(weight, bool) or not 0 <= weight <= 100:
            raise InputError(f"{NAME} args: hardPodAffinityWeight: Invalid value: {weight!r}: "
                             "not in valid range [0-100]")
        if not isinstance(self.args["ignorePreferredTermsOfExistingPods"], bool):
            raise InputError(f"{NAME} args: ignorePreferredTermsOfExistingPods must be a boolean")
        self.hard_weight = weight
        self.ignore_preferred = self.args["ignorePreferredTermsOfExistingPods"]

    def _existing_terms(self, index: PodIndex, kind: str, pod: Pod, ns_labels: Mapping | None,
                        domains: _Domains, sign: int = 1, weighted: bool = False, weight: int | None = None) -> bool:
        """Adds existing pods' terms of a kind that match the incoming pod, per topology key."""
        table = index.tables()[kind]
        if not table.terms:
            return False
        matched = table.matched(pod.labels, pod.namespace, ns_labels)
        touched = False
        for key in sorted({t.topology_key for t, m in zip(table.terms, matched.tolist()) if m}):
            of_key = matched & table.of_topology_key(key)
            per_node = index.existing_terms_per_node(kind, of_key, weighted=weighted, weight=weight)
            touched |= domains.add(key, per_node, sign)
        return touched

    # -- filtering -------------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status | None:
        terms = pod_affinity_terms(pod)
        affinity, anti = terms[REQUIRED_AFFINITY], terms[REQUIRED_ANTI_AFFINITY]
        namespaces = _namespace_labels(self.handle)
        own_ns_labels = namespaces.get(pod.namespace)
        index = PodIndex.of(cluster)
        existing = _Domains(cluster)
        self._existing_terms(index, REQUIRED_ANTI_AFFINITY, pod, own_ns_labels, existing)
        affinity_counts = _Domains(cluster)
        if affinity:
            mask = np.ones(index.size, dtype=bool)
            for t in affinity:
                mask &= index.term_mask(t, namespaces)
            per_node = index.per_node(mask)
            for t in affinity:
                affinity_counts.add(t.topology_key, per_node)
        anti_counts = _Domains(cluster)
        for t in anti:
            anti_counts.add(t.topology_key, index.term_counts(t, namespaces))
        if not existing.any_positive() and not affinity and not anti:
            return Status.skip()
        self_match = bool(affinity) and all(incoming_term_matches(t, pod, namespaces) for t in affinity)
        state.write(PRE_FILTER_STATE_KEY, AffinityState(affinity, anti, existing, affinity_counts, anti_counts,
                                                        self_match, own_ns_labels, namespaces))
        return None

    def add_pod(self, state: CycleState, pod: Pod, other: Pod, cluster: ClusterState, i: int) -> Status | None:
        state.read(PRE_FILTER_STATE_KEY).update(other, pod, i, +1)
        return None

    def remove_pod(self, state: CycleState, pod: Pod, other: Pod, cluster: ClusterState, i: int) -> Status | None:
        state.read(PRE_FILTER_STATE_KEY).update(other, pod, i, -1)
        return None

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        pre: AffinityState = state.read(PRE_FILTER_STATE_KEY)
        affinity, anti, existing, affinity_counts, anti_counts = (pre.affinity, pre.anti, pre.existing,
                                                                  pre.affinity_counts, pre.anti_counts)
        self_match = pre.self_match
        n = cluster.n
        affinity_ok = np.ones(n, dtype=bool)
        first_of_kind = False
        if affinity:
            has_keys = np.ones(n, dtype=bool)
            pods_exist = np.ones(n, dtype=bool)
            for t in affinity:
                has_keys &= cluster.label_column(t.topology_key).present
                pods_exist &= affinity_counts.at(t.topology_key) > 0
            first_of_kind = not affinity_counts.any_positive() and self_match
            affinity_ok = has_keys & (pods_exist | first_of_kind)
        anti_bad = np.zeros(n, dtype=bool)
        if anti_counts.any_positive():
            for t in anti:
                anti_bad |= anti_counts.at(t.topology_key) > 0
        existing_bad = np.zeros(n, dtype=bool)
        for key in existing.by_key:
            existing_bad |= existing.at(key) > 0
        short = np.zeros((n, 3), dtype=bool)
        short[:, 0] = ~affinity_ok
        short[:, 1] = affinity_ok & anti_bad
        short[:, 2] = affinity_ok & ~anti_bad & existing_bad
        codes = np.where(short[:, 0], np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
                         np.where(short[:, 1] | short[:, 2], np.int8(Code.UNSCHEDULABLE), np.int8(0)))

        def explain(i: int) -> list[str]:
            lines = []
            labels = cluster.nodes[i].labels
            for k, t in enumerate(affinity):
                key = t.topology_key
                if key not in labels:
                    lines.append(f"affinity term {k} ({t.selector}): node has no label {key}")
                    continue
                count = int(affinity_counts.at(key, np.array([i]))[0])
                lines.append(f"affinity term {k} ({t.selector}): {key}={labels[key]} has {count} matching pod(s)")
            if affinity and first_of_kind:
                lines.append("no pod matches the affinity terms anywhere and the pod matches its own terms: "
                             "it may be the first of its kind")
            for k, t in enumerate(anti):
                key = t.topology_key
                if key in labels:
                    count = int(anti_counts.at(key, np.array([i]))[0])
                    lines.append(f"anti-affinity term {k} ({t.selector}): {key}={labels[key]} has "
                                 f"{count} matching pod(s)")
            for key in existing.by_key:
                if key in labels:
                    count = int(existing.at(key, np.array([i]))[0])
                    if count:
                        lines.append(f"{key}={labels[key]}: {count} existing pod anti-affinity term(s) "
                                     "match this pod")
            return lines

        return NodeStatus.from_reasons(short, REASONS, codes, explain)

    # -- scoring -----------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState,
                  candidates: np.ndarray) -> Status | None:
        terms = pod_affinity_terms(pod)
        preferred, preferred_anti = terms[PREFERRED_AFFINITY], terms[PREFERRED_ANTI_AFFINITY]
        has_constraints = bool(preferred or preferred_anti)
        if self.ignore_preferred and not has_constraints:
            return Status.skip()
        namespaces = _namespace_labels(self.handle)
        own_ns_labels = namespaces.get(pod.namespace)
        index = PodIndex.of(cluster)
        scores = _Domains(cluster)
        touched = False
        for sign, group in ((1, preferred), (-1, preferred_anti)):
            for t in group:
                per_node = index.term_counts(t, namespaces) * t.weight
                touched |= scores.add(t.topology_key, per_node, sign)
        # Existing pods' terms count even with ignorePreferredTermsOfExistingPods once the pod has its own.
        if self.hard_weight > 0:
            touched |= self._existing_terms(index, REQUIRED_AFFINITY, pod, own_ns_labels, scores,
                                            weight=self.hard_weight)
        touched |= self._existing_terms(index, PREFERRED_AFFINITY, pod, own_ns_labels, scores, weighted=True)
        touched |= self._existing_terms(index, PREFERRED_ANTI_AFFINITY, pod, own_ns_labels, scores, sign=-1,
                                        weighted=True)
        if not touched:
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, scores)
        return None

    def score(self, state: CycleState, pod: Pod, cluster: ClusterState, candidates: np.ndarray) -> np.ndarray:
        scores: _Domains = state.read(PRE_SCORE_STATE_KEY)
        cand = np.asarray(candidates, dtype=np.intp)
        out = np.zeros(len(cand), dtype=np.int64)
        for key in scores.by_key:
            out += scores.at(key, cand)
        return out

    def normalize_score(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray:
        scores = np.asarray(scores, dtype=np.int64)
        if not len(scores):
            return scores
        lo, hi = int(scores.min()), int(scores.max())
        diff = hi - lo
        if diff <= 0:
            return np.zeros_like(scores)
        ratio = (scores - lo).astype(np.float64) / float(diff)
        return (float(MAX_NODE_SCORE) * ratio).astype(np.int64)
