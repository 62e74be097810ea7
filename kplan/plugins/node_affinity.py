"""NodeAffinity: spec.nodeSelector and required node affinity filter nodes; preferred terms score them.

The plugin's `addedAffinity` arg (NodeAffinityArgs) adds a scheduler-enforced required selector
and preferred terms to every pod of the profile.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from kplan.api.node_selectors import (
    NAME_FIELD, aggregate_message, describe_requirement, is_empty_term, match_labels_mask,
    node_selector_terms_mask, requirement_mask, term_errors, term_mask,
)
from kplan.api.objects import Pod
from kplan.cluster.state import ClusterState
from kplan.errors import InputError
from kplan.framework.interfaces import CycleState, Handle, default_normalize_score, plugin_args
from kplan.framework.status import Code, NodeStatus, Status

NAME = "NodeAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _node_affinity(pod: Pod) -> Mapping:
    return (pod.affinity or {}).get("nodeAffinity") or {}


def _preferred_terms(terms: Any, path: str) -> tuple[list[tuple[int, Mapping]], list[str]]:
    """Parses PreferredSchedulingTerms: (weight, term) pairs and upstream's parse errors.

    Terms with weight 0 or no requirement are dropped before parsing (so never reported).
    """
    parsed: list[tuple[int, Mapping]] = []
    errs: list[str] = []
    for i, pref in enumerate(terms or ()):
        weight = int(pref.get("weight") or 0)
        term = pref.get("preference") or {}
        if weight == 0 or is_empty_term(term):
            continue
        term_errs = term_errors(term, f"{path}[{i}]")
        if term_errs:
            errs.extend(term_errs)
            continue
        parsed.append((weight, term))
    return parsed, errs


def _weighted_score(terms: list[tuple[int, Mapping]], cluster: ClusterState, rows: np.ndarray) -> np.ndarray:
    out = np.zeros(len(rows), dtype=np.int64)
    for weight, term in terms:
        out += np.where(term_mask(term, cluster)[rows], weight, 0)
    return out


class NodeAffinity:
    """Rejects nodes that miss the pod's nodeSelector or required node affinity; scores preferred terms by weight."""

    name = NAME
    normalizes_by_extremes = True  # DefaultNormalizeScore: by the highest score

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        self.args = plugin_args(args, {"addedAffinity": None}, NAME)
        self.handle = handle
        added = self.args["addedAffinity"] or {}
        if not isinstance(added, Mapping):
            raise InputError(f"{NAME} args: addedAffinity must be a NodeAffinity object, got {added!r}")
        self.added_required: list[Mapping] | None = None
        self.added_preferred: list[tuple[int, Mapping]] | None = None
        errs: list[str] = []
        if (required := added.get(REQUIRED)) is not None:
            if not isinstance(required, Mapping):
                raise InputError(f"{NAME} args: addedAffinity.{REQUIRED} must be a NodeSelector object")
            terms = list(required.get("nodeSelectorTerms") or ())
            path = f"addedAffinity.{REQUIRED}.nodeSelectorTerms"
            for i, term in enumerate(terms):
                if not is_empty_term(term):
                    errs.extend(term_errors(term, f"{path}[{i}]"))
            self.added_required = terms
        if preferred := added.get(PREFERRED):
            self.added_preferred, pref_errs = _preferred_terms(preferred, f"addedAffinity.{PREFERRED}")
            errs.extend(pref_errs)
        if errs:
            raise InputError(f"{NAME} args: {aggregate_message(errs)}")

    # -- filtering --------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status | None:
        required = _node_affinity(pod).get(REQUIRED)
        if required is None and self.added_required is None and not pod.node_selector:
            return Status.skip()
        state.write(PRE_FILTER_STATE_KEY, (dict(pod.node_selector), required))
        terms = (required or {}).get("nodeSelectorTerms") or []
        if not terms:
            return None
        # Terms are ORed: only when every term pins metadata.name (In) can the nodes be narrowed.
        names: set[str] = set()
        for term in terms:
            term_names: set[str] | None = None
            for req in term.get("matchFields") or ():
                if req.get("key") == NAME_FIELD and req.get("operator") == "In":
                    values = set(req.get("values") or ())
                    term_names = values if term_names is None else term_names & values
            if term_names is None:
                return None
            names |= term_names
        if not names:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_CONFLICT,), NAME)
        mask = np.zeros(cluster.n, dtype=bool)
        mask[[cluster.index[name] for name in names if name in cluster.index]] = True
        return Status(node_mask=mask, plugin=NAME, node_names=frozenset(names))

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        n = cluster.n
        enforced = np.ones(n, dtype=bool)
        if self.added_required is not None:
            enforced = node_selector_terms_mask(self.added_required, cluster)
        selector, required = state.get(PRE_FILTER_STATE_KEY) or (
            dict(pod.node_selector), _node_affinity(pod).get(REQUIRED))
        matches = match_labels_mask(selector, cluster) if selector else np.ones(n, dtype=bool)
        if required is not None:
            matches &= node_selector_terms_mask(required.get("nodeSelectorTerms"), cluster)
        short = np.stack([~enforced, enforced & ~matches], axis=1)

        def explain(i: int) -> list[str]:
            lines = []
            if not enforced[i]:
                lines.append("the node matches no term of the scheduler's addedAffinity")
                return lines
            labels = cluster.nodes[i].labels
            for key, value in (selector or {}).items():
                if labels.get(key) != value:
                    have = labels.get(key)
                    lines.append(f"nodeSelector {key}={value}: node has "
                                 + (f"{key}={have}" if have is not None else f"no label {key}"))
            if required is not None and not matches[i]:
                terms = required.get("nodeSelectorTerms") or []
                if not terms:
                    lines.append("required node affinity has no term, so no node matches")
                for t, term in enumerate(terms):
                    if is_empty_term(term):
                        lines.append(f"term {t}: empty, matches no node")
                        continue
                    for kind, field in (("matchExpressions", False), ("matchFields", True)):
                        for req in term.get(kind) or ():
                            if not requirement_mask(req, cluster, field)[i]:
                                key = req.get("key") or ""
                                have = cluster.names[i] if field else labels.get(key)
                                lines.append(f"term {t}: {describe_requirement(req)} not met (node has "
                                             + (f"{key}={have})" if have is not None else f"no label {key})"))
                                break
                        else:
                            continue
                        break
            return lines

        return NodeStatus.from_reasons(short, [ERR_REASON_ENFORCED, ERR_REASON_POD],
                                       Code.UNSCHEDULABLE_AND_UNRESOLVABLE, explain)

    # -- scoring ----------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState,
                  candidates: np.ndarray) -> Status | None:
        preferred = _node_affinity(pod).get(PREFERRED)
        if preferred is None and self.added_preferred is None:
            return Status.skip()
        terms, errs = _preferred_terms(preferred, "")
        if errs:
            return Status(Code.ERROR, (aggregate_message(errs),), NAME)
        state.write(PRE_SCORE_STATE_KEY, terms)
        return None

    def score(self, state: CycleState, pod: Pod, cluster: ClusterState, candidates: np.ndarray) -> np.ndarray:
        rows = np.asarray(candidates, dtype=np.intp)
        terms = state.get(PRE_SCORE_STATE_KEY)
        if terms is None:
            terms, errs = _preferred_terms(_node_affinity(pod).get(PREFERRED), "")
            if errs:
                raise InputError(f"pod {pod.key}: preferred node affinity: {aggregate_message(errs)}")
        out = _weighted_score(terms, cluster, rows)
        if self.added_preferred:
            out += _weighted_score(self.added_preferred, cluster, rows)
        return out

    def normalize_score(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray:
        return default_normalize_score(scores, reverse=False)
