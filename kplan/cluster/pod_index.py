"""PodIndex: the pods placed on the node table as columns, for pod-to-pod terms.

Every pod ClusterState accounts gets a slot: its node position, namespace code, whether it is
terminating, and (built on first use per key) a code per label value. Slots are appended by
`add` and switched off by `remove`, so ClusterState.assume/forget keep it current without a
rebuild. Existing pods' (anti-)affinity terms are interned: replicas share a handful of distinct
terms, so a term is matched against the incoming pod once and its pods are counted per node
with np.bincount.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np

from kplan.api.label_selectors import EVERYTHING, NOTHING, Requirement, Selector, parse_selector
from kplan.api.objects import Pod
from kplan.errors import InputError

if TYPE_CHECKING:
    from kplan.cluster.state import ClusterState

# Term kinds of PodInfo: required/preferred affinity and anti-affinity.
REQUIRED_AFFINITY = "requiredAffinity"
REQUIRED_ANTI_AFFINITY = "requiredAntiAffinity"
PREFERRED_AFFINITY = "preferredAffinity"
PREFERRED_ANTI_AFFINITY = "preferredAntiAffinity"
KINDS = (REQUIRED_AFFINITY, REQUIRED_ANTI_AFFINITY, PREFERRED_AFFINITY, PREFERRED_ANTI_AFFINITY)
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True)
class AffinityTerm:
    """A parsed PodAffinityTerm (fwk.AffinityTerm): namespaces, namespace selector, selector, topology key."""

    namespaces: frozenset[str]
    namespace_selector: Selector
    selector: Selector
    topology_key: str
    weight: int = 0

    def matches(self, labels: Mapping[str, str], namespace: str, ns_labels: Mapping[str, str] | None) -> bool:
        """Tells whether a pod with these labels in this namespace matches (AffinityTerm.Matches)."""
        if namespace in self.namespaces or self.namespace_selector.matches(ns_labels or {}):
            return self.selector.matches(labels)
        return False


def parse_affinity_term(pod: Pod, raw: Any, where: str, weight: int = 0) -> AffinityTerm:
    """Builds a term as the API server admits it and the scheduler reads it.

    matchLabelKeys/mismatchLabelKeys are merged into the selector as key in/notin (the pod's
    value), as kube-apiserver does at admission; the merge is idempotent, so dumped pods that were
    already merged give the same term. Namespaces default to the pod's own when neither
    `namespaces` nor `namespaceSelector` is set.
    """
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: pod affinity term must be a mapping, got {raw!r}")
    key = raw.get("topologyKey")
    if not key or not isinstance(key, str):
        raise InputError(f"{where}.topologyKey: Required value: can not be empty")
    selector = parse_selector(raw.get("labelSelector"), f"{where}.labelSelector")
    if raw.get("labelSelector") is not None:
        labels = pod.labels
        extra = [Requirement(k, "In", (labels[k],)) for k in raw.get("matchLabelKeys") or () if k in labels]
        extra += [Requirement(k, "NotIn", (labels[k],)) for k in raw.get("mismatchLabelKeys") or () if k in labels]
        if extra:
            selector = selector.add(*extra)
    namespaces = raw.get("namespaces") or []
    ns_raw = raw.get("namespaceSelector")
    ns_selector = parse_selector(ns_raw, f"{where}.namespaceSelector")
    if not namespaces and ns_raw is None:
        namespaces = [pod.namespace]
    return AffinityTerm(frozenset(namespaces), ns_selector, selector, key, weight)


def pod_affinity_terms(pod: Pod) -> dict[str, list[AffinityTerm]]:
    """Parses a pod's four lists of pod (anti-)affinity terms (framework.NewPodInfo)."""
    cached = pod.__dict__.get("_kplan_affinity_terms")
    if cached is not None:
        return cached
    affinity = pod.affinity or {}
    # Replicas repeat the same affinity: parse each (namespace, affinity[, labels]) once.
    text = repr(affinity)
    key = (pod.namespace, text, repr(pod.labels) if "LabelKeys" in text else "")
    cached = _PARSED.get(key)
    if cached is not None:
        pod.__dict__["_kplan_affinity_terms"] = cached
        return cached
    out: dict[str, list[AffinityTerm]] = {k: [] for k in KINDS}
    for field, req_kind, pref_kind in (("podAffinity", REQUIRED_AFFINITY, PREFERRED_AFFINITY),
                                       ("podAntiAffinity", REQUIRED_ANTI_AFFINITY, PREFERRED_ANTI_AFFINITY)):
        section = affinity.get(field) or {}
        base = f"pod {pod.key}: spec.affinity.{field}"
        for k, term in enumerate(section.get(REQUIRED) or ()):
            out[req_kind].append(parse_affinity_term(pod, term, f"{base}.{REQUIRED}[{k}]"))
        for k, weighted in enumerate(section.get(PREFERRED) or ()):
            w = f"{base}.{PREFERRED}[{k}]"
            if not isinstance(weighted, Mapping):
                raise InputError(f"{w}: must be a mapping")
            weight = weighted.get("weight")
            if not isinstance(weight, int) or not 1 <= weight <= 100:
                raise InputError(f"{w}.weight: Invalid value: {weight!r}: must be in the range 1-100")
            out[pref_kind].append(parse_affinity_term(pod, weighted.get("podAffinityTerm"),
                                                      f"{w}.podAffinityTerm", weight))
    pod.__dict__["_kplan_affinity_terms"] = out
    if len(_PARSED) >= 65536:
        _PARSED.clear()
    _PARSED[key] = out
    return out


_PARSED: dict[tuple[str, str, str], dict[str, list[AffinityTerm]]] = {}


_EMPTY: Mapping = {}


def _has_pod_terms(affinity: Mapping | None) -> bool:
    return bool(affinity) and bool(affinity.get("podAffinity") or affinity.get("podAntiAffinity"))


def _raw_has_pod_affinity(pod: Pod) -> bool:
    return _has_pod_terms((pod.raw.get("spec") or _EMPTY).get("affinity"))


MATCHED_CACHE_SIZE = 4096  # label sets whose matching terms a table keeps before starting over


class _TermTable:
    """One kind of existing pods' terms: distinct terms and (slot, term) pairs."""

    def __init__(self) -> None:
        self.terms: list[AffinityTerm] = []
        self.term_id: dict[AffinityTerm, int] = {}
        self.slots: list[int] = []
        self.ids: list[int] = []
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None
        self._weights = np.zeros(0, dtype=np.int64)
        self._matched: dict[tuple, np.ndarray] = {}
        self._of_key: dict[str, np.ndarray] = {}

    def add(self, slot: int, term: AffinityTerm) -> None:
        self.add_ids(slot, [self.intern(term)])

    def copy(self) -> "_TermTable":
        new = _TermTable()
        new.terms, new.term_id, new.slots, new.ids = list(self.terms), dict(self.term_id), list(self.slots), list(self.ids)
        return new

    def intern(self, term: AffinityTerm) -> int:
        """Returns the term's id, adding it to the distinct terms if new."""
        tid = self.term_id.get(term)
        if tid is None:
            tid = self.term_id[term] = len(self.terms)
            self.terms.append(term)
        return tid

    def add_ids(self, slot: int, ids: list[int]) -> None:
        """Adds one pod's terms, already interned."""
        self.slots.extend([slot] * len(ids))
        self.ids.extend(ids)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The (slot, term id) pairs as arrays; pairs added since the last call are appended to them
        (a pod placed per cycle adds a few to thousands)."""
        done = len(self._arrays[0]) if self._arrays is not None else 0
        if done != len(self.slots):
            tail = (np.array(self.slots[done:], dtype=np.intp), np.array(self.ids[done:], dtype=np.intp))
            self._arrays = tail if self._arrays is None else (np.concatenate([self._arrays[0], tail[0]]),
                                                               np.concatenate([self._arrays[1], tail[1]]))
        return self._arrays or (np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp))

    def matched(self, labels: Mapping[str, str], namespace: str, ns_labels: Mapping[str, str] | None) -> np.ndarray:
        """Which distinct terms match a pod with these labels in this namespace (whose labels are
        ns_labels); incoming pods repeat a few label sets, so answers are kept per set while the terms
        stay the same."""
        key = (namespace, tuple(labels.items()), tuple((ns_labels or {}).items()))
        hit = self._matched.get(key)
        if hit is None or len(hit) != len(self.terms):
            if len(self._matched) >= MATCHED_CACHE_SIZE:
                self._matched.clear()
            hit = self._matched[key] = np.array([t.matches(labels, namespace, ns_labels) for t in self.terms],
                                                dtype=bool)
        return hit

    def of_topology_key(self, key: str) -> np.ndarray:
        """Which distinct terms have this topology key."""
        hit = self._of_key.get(key)
        if hit is None or len(hit) != len(self.terms):
            hit = self._of_key[key] = np.array([t.topology_key == key for t in self.terms], dtype=bool)
        return hit

    def weights(self) -> np.ndarray:
        """Each distinct term's weight, by term id."""
        if len(self._weights) != len(self.terms):
            self._weights = np.array([t.weight for t in self.terms], dtype=np.int64)
        return self._weights


class PodIndex:
    """Columns over the pods of a ClusterState (see the module docstring)."""

    def __init__(self, cluster: "ClusterState"):
        self.n_nodes = cluster.n
        pods, nodes = cluster.bound_pods()
        # One pass, reading what Pod read while building (labels, terminating) and the spec's
        # affinity: on a big snapshot the pass is bound by memory access, not by the work per pod.
        labels: list[Mapping[str, str]] = []
        ns: list[int] = []
        terminating: list[int] = []
        with_affinity: list[int] = []
        self.ns_names: list[str] = []
        self.ns_code: dict[str, int] = {}
        ns_code = self.ns_code
        add_labels, add_ns = labels.append, ns.append
        for k, p in enumerate(pods):
            add_labels(p.labels)
            if p.terminating:
                terminating.append(k)
            spec = p.spec
            if "affinity" in spec and _has_pod_terms(spec["affinity"]):
                with_affinity.append(k)
            code = ns_code.get(p.namespace)
            if code is None:
                code = ns_code[p.namespace] = len(self.ns_names)
                self.ns_names.append(p.namespace)
            add_ns(code)
        self.pods = pods
        self.labels = labels
        self.size = len(pods)
        cap = max(16, self.size + self.size // 8)
        self.node = np.zeros(cap, dtype=np.intp)
        self.node[:self.size] = nodes
        self.ns = np.zeros(cap, dtype=np.int32)
        self.ns[:self.size] = ns
        self.alive = np.zeros(cap, dtype=bool)
        self.alive[:self.size] = True
        self.terminating = np.zeros(cap, dtype=bool)
        self.terminating[terminating] = True
        self._slot_of: dict[int, int] | None = None  # id(pod) -> slot, built on the first removal
        self._with_affinity = with_affinity
        self._columns: dict[str, tuple[np.ndarray, dict[str, int]]] = {}
        self._tables: dict[str, _TermTable] | None = None
        self._interned: dict[int, tuple[dict, list]] = {}  # id(parsed terms) -> (them, per table ids)
        # term_counts: (namespaces, selector) -> (per-node counts, size, removals) as of when counted.
        self._term_counts: dict[tuple, tuple[np.ndarray, int, int]] = {}
        # existing_terms_per_node: (kind, matched terms, weighting) -> (per-node counts, pairs counted, removals).
        self._existing_counts: dict[tuple, tuple[np.ndarray, int, int]] = {}
        self._removals = 0

    @classmethod
    def of(cls, cluster: "ClusterState") -> "PodIndex":
        """Returns the cluster's index, building it on first use."""
        index = cluster.pod_index
        if index is None:
            index = cluster.pod_index = cls(cluster)
        return index

    def clone(self) -> "PodIndex":
        """An independent copy (see ClusterState.clone): the term tables are copied, the counts rebuilt on use."""
        new = object.__new__(PodIndex)
        new.__dict__.update(self.__dict__)
        for key, value in self.__dict__.items():
            if isinstance(value, np.ndarray):
                new.__dict__[key] = value.copy()
        new.pods, new.labels = list(self.pods), list(self.labels)
        new.ns_names, new.ns_code = list(self.ns_names), dict(self.ns_code)
        new._with_affinity = list(self._with_affinity)
        new._columns = {k: (codes.copy(), dict(code_of)) for k, (codes, code_of) in self._columns.items()}
        new._slot_of = dict(self._slot_of) if self._slot_of is not None else None
        new._tables = {k: t.copy() for k, t in self._tables.items()} if self._tables is not None else None
        new._interned, new._term_counts, new._existing_counts = {}, {}, {}  # ids point into this index's tables
        return new

    def relocate(self, position: np.ndarray, n_nodes: int) -> None:
        """Follows a table whose node i is now at position[i] (-1: the node left, and with it its pods,
        whose slots must be switched off already); per-node counts kept so far are dropped."""
        moved = position[self.node[:self.size]]
        if (moved[self.alive[:self.size]] < 0).any():
            raise ValueError("a live pod's node left the table")
        self.node[:self.size] = np.maximum(moved, 0)  # dead slots: any position, masks skip them
        self.n_nodes = n_nodes
        self._term_counts, self._existing_counts = {}, {}

    def _ns(self, name: str) -> int:
        code = self.ns_code.get(name)
        if code is None:
            code = self.ns_code[name] = len(self.ns_names)
            self.ns_names.append(name)
        return code

    # -- columns ------------------------------------------------------------------------------------

    def column(self, key: str) -> tuple[np.ndarray, dict[str, int]]:
        """Returns (codes over slots, -1 where the pod lacks the label; value -> code)."""
        col = self._columns.get(key)
        if col is None:
            code_of: dict[str, int] = {}
            codes = np.full(len(self.node), -1, dtype=np.int32)
            codes[:self.size] = [code_of.setdefault(v, len(code_of)) if (v := labels.get(key)) is not None
                                 else -1 for labels in self.labels]
            col = self._columns[key] = (codes, code_of)
        return col

    def has_columns(self, keys: Iterable[str]) -> bool:
        """Whether the columns of these label keys are built (a selector over them costs a few array
        operations then)."""
        return all(key in self._columns for key in keys)

    def selector_mask(self, selector: Selector) -> np.ndarray:
        """Returns a (size,) mask of the live pods whose labels match the selector."""
        return selector.mask(self.column, self.size) & self.alive[:self.size]

    def namespace_mask(self, namespaces: frozenset[str] | set[str], ns_selector: Selector = NOTHING,
                       ns_labels: Mapping[str, Mapping[str, str]] | None = None) -> np.ndarray:
        """Returns a (size,) mask of pods in one of the namespaces or a namespace the selector matches.

        `ns_labels` maps namespace name -> labels (the snapshot's Namespaces); namespaces it lacks
        match only the everything selector, as the scheduler's namespace lister would have it.
        """
        wanted = np.zeros(len(self.ns_names), dtype=bool)
        for k, name in enumerate(self.ns_names):
            if name in namespaces:
                wanted[k] = True
            elif ns_selector == EVERYTHING:
                wanted[k] = True
            elif not ns_selector.nothing and ns_labels is not None and name in ns_labels:
                wanted[k] = ns_selector.matches(ns_labels[name])
        return wanted[self.ns[:self.size]] if len(wanted) else np.zeros(self.size, dtype=bool)

    def term_mask(self, term: AffinityTerm, ns_labels: Mapping[str, Mapping[str, str]] | None) -> np.ndarray:
        """Returns a (size,) mask of live pods an incoming pod's term matches."""
        return self.namespace_mask(term.namespaces, term.namespace_selector, ns_labels) & self.selector_mask(term.selector)

    def term_counts(self, term: AffinityTerm, ns_labels: Mapping[str, Mapping[str, str]] | None) -> np.ndarray:
        """Per node, the live pods an incoming pod's term matches: per_node(term_mask(...)).

        Kept per term and brought up to date with the pods added since (a pod placed per cycle), so
        a run of cycles does not rescan every pod; a removal, or a namespace selector (it reads the
        namespaces' labels), counts afresh."""
        if not term.namespace_selector.nothing:
            return self.per_node(self.term_mask(term, ns_labels))
        key = (term.namespaces, term.selector)
        hit = self._term_counts.get(key)
        if hit is None or hit[2] != self._removals:
            counts = self.per_node(self.term_mask(term, ns_labels))
        else:
            counts, counted, _ = hit
            for s in range(counted, self.size):
                if self.alive[s] and self.ns_names[self.ns[s]] in term.namespaces \
                        and term.selector.matches(self.labels[s]):
                    counts[self.node[s]] += 1
        self._term_counts[key] = (counts, self.size, self._removals)
        return counts.copy()

    def per_node(self, mask: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Counts the masked pods per node position (weighted if given)."""
        nodes = self.node[:self.size][mask]
        w = None if weights is None else weights[mask]
        out = np.bincount(nodes, weights=w, minlength=self.n_nodes)
        return out.astype(np.int64) if out.dtype != np.int64 else out

    # -- existing pods' terms -------------------------------------------------------------------------

    def tables(self) -> dict[str, _TermTable]:
        if self._tables is None:
            self._tables = {k: _TermTable() for k in KINDS}
            for slot in self._with_affinity:
                if self.alive[slot]:
                    self._add_terms(slot, self.pods[slot])
        return self._tables

    def _add_terms(self, slot: int, pod: Pod) -> None:
        parsed = pod_affinity_terms(pod)
        # Pods with the same affinity share the parsed terms: intern them once per parse (hashing
        # a term is not cheap), not once per pod.
        hit = self._interned.get(id(parsed))
        if hit is None or hit[0] is not parsed:
            ids = [(self._tables[kind], [self._tables[kind].intern(t) for t in terms])
                   for kind, terms in parsed.items() if terms]
            hit = self._interned[id(parsed)] = (parsed, ids)
        for table, ids in hit[1]:
            table.add_ids(slot, ids)

    def existing_terms_per_node(self, kind: str, matched: np.ndarray, weighted: bool = False,
                                weight: int | None = None) -> np.ndarray:
        """Counts, per node, existing pods' terms of a kind whose distinct term is `matched` (read-only).

        With `weighted`, each term counts its own weight; with `weight`, each counts that value.
        """
        table = self.tables()[kind]
        if not table.terms or not matched.any():
            return np.zeros(self.n_nodes, dtype=np.int64)
        slots, ids = table.arrays()
        # Kept per question and brought up to date with the pairs added since (a pod with terms placed
        # per cycle); a removal counts afresh.
        key = (kind, matched.tobytes(), weighted, weight)
        hit = self._existing_counts.get(key)
        counts, start = (hit[0], hit[1]) if hit is not None and hit[2] == self._removals else (None, 0)
        if counts is None or start < len(ids):
            slots, ids = slots[start:], ids[start:]
            keep = matched[ids] & self.alive[slots]
            if weight is not None:
                w = np.full(len(ids), weight, dtype=np.int64)
            elif weighted:
                w = table.weights()[ids]
            else:
                w = np.ones(len(ids), dtype=np.int64)
            added = np.bincount(self.node[slots[keep]], weights=w[keep], minlength=self.n_nodes).astype(np.int64)
            counts = added if counts is None else counts + added
            counts.flags.writeable = False  # kept for the next question: callers read it only
        self._existing_counts[key] = (counts, len(table.slots), self._removals)
        return counts

    # -- incremental updates ---------------------------------------------------------------------------

    def add(self, pod: Pod, i: int) -> None:
        """Appends a pod placed on node i."""
        s = self.size
        if s == len(self.node):
            grow = max(16, s // 2)
            self.node = np.concatenate([self.node, np.zeros(grow, dtype=self.node.dtype)])
            self.ns = np.concatenate([self.ns, np.zeros(grow, dtype=self.ns.dtype)])
            self.alive = np.concatenate([self.alive, np.zeros(grow, dtype=bool)])
            self.terminating = np.concatenate([self.terminating, np.zeros(grow, dtype=bool)])
            self._columns = {k: (np.concatenate([c, np.full(grow, -1, dtype=c.dtype)]), code_of)
                             for k, (c, code_of) in self._columns.items()}
        self.pods.append(pod)
        self.labels.append(pod.labels)
        if _raw_has_pod_affinity(pod):
            self._with_affinity.append(s)
        self.node[s] = i
        self.ns[s] = self._ns(pod.namespace)
        self.alive[s] = True
        self.terminating[s] = pod.terminating
        labels = pod.labels
        for key, (codes, code_of) in self._columns.items():
            v = labels.get(key)
            codes[s] = -1 if v is None else code_of.setdefault(v, len(code_of))
        if self._slot_of is not None:
            self._slot_of[id(pod)] = s
        self.size = s + 1
        if self._tables is not None and self._with_affinity[-1:] == [s]:
            self._add_terms(s, pod)

    def remove(self, pod: Pod, i: int) -> None:
        """Switches off a pod's slot (it stays allocated; masks skip it)."""
        if self._slot_of is None:
            # Every slot is alive until the first removal, and the list keeps each pod's id unique.
            self._slot_of = dict(zip(map(id, self.pods), range(len(self.pods))))
        s = self._slot_of.pop(id(pod), None)
        if s is not None:
            self.alive[s] = False
            self._removals += 1
