"""NodeAffinity: the nodeSelector labels and required node-affinity terms a node does not meet,
labels no node has, and the labels that would let nodes in."""
from __future__ import annotations

from typing import Any

import numpy as np

from kplan.api.node_selectors import describe_requirement, is_empty_term, node_selector_terms_mask, requirement_mask
from kplan.framework.status import NodeStatus
from kplan.planning.nearest.lack import NODE_AFFINITY, NODE_SELECTOR, Lack, by_count, from_reasons, joined, nodes_phrase
from kplan.planning.nearest.verdicts import Verdicts
from kplan.plugins import node_affinity

AFFINITY = node_affinity.NAME


def selector_and_required(v: Verdicts) -> tuple[dict[str, str], Any]:
    """The pod's nodeSelector and required node affinity, as NodeAffinity's PreFilter kept them."""
    state = v.state.get(node_affinity.PRE_FILTER_STATE_KEY)
    if state is not None:
        return state
    required = ((v.pod.affinity or {}).get("nodeAffinity") or {}).get(node_affinity.REQUIRED)
    return dict(v.pod.node_selector), required


def _unmet_terms(v: Verdicts, terms: list, i: int) -> list[dict[str, Any]]:
    """For each term, the first requirement node i does not meet (terms are ORed; a node matching
    none fails)."""
    cluster = v.cluster
    labels = cluster.nodes[i].labels
    out = []
    for t, term in enumerate(terms):
        if is_empty_term(term):
            out.append({"term": t, "requirement": "", "text": f"term {t} is empty and matches no node"})
            continue
        for kind, is_field in (("matchExpressions", False), ("matchFields", True)):
            unmet = next((req for req in term.get(kind) or ()
                          if not v.cached(("requirement", id(req)), lambda req=req, f=is_field: requirement_mask(
                              req, cluster, f))[i]), None)
            if unmet is not None:
                key = unmet.get("key") or ""
                have = cluster.names[i] if is_field else labels.get(key)
                seen = f"node has {key}={have}" if have is not None else f"node has no label {key}"
                out.append({"term": t, "requirement": describe_requirement(unmet), "key": key, "have": have,
                            "text": f"{describe_requirement(unmet)} not met ({seen})"})
                break
    return out


def lacks(v: Verdicts, plugin_name: str, i: int, status: NodeStatus) -> list[Lack]:
    cluster = v.cluster
    plugin = v.framework.plugins.get(AFFINITY)
    out = []
    added = getattr(plugin, "added_required", None)
    if added is not None and not v.cached("enforced", lambda: node_selector_terms_mask(added, cluster))[i]:
        unmet = _unmet_terms(v, added, i)
        out.append(Lack(AFFINITY, NODE_AFFINITY,
                        "matches no term of the scheduler-enforced node affinity: "
                        + "; ".join(f"term {u['term']}: {u['text']}" for u in unmet),
                        {"enforced": True, "terms": [{k: x for k, x in u.items() if k != "text"} for u in unmet]}))
    selector, required = selector_and_required(v)
    labels = cluster.nodes[i].labels
    mismatched = [(key, str(want), labels.get(key)) for key, want in (selector or {}).items()
                  if labels.get(key) != str(want)]
    if mismatched:
        texts = [f"nodeSelector {key}={want}: node has " + (f"{key}={have}" if have is not None else f"no label {key}")
                 for key, want, have in mismatched]
        out.append(Lack(AFFINITY, NODE_SELECTOR, "; ".join(texts),
                        {"mismatched": [{"key": key, "want": want, "have": have} for key, want, have in mismatched]}))
    if required is not None:
        terms = list(required.get("nodeSelectorTerms") or [])
        if not v.cached("required", lambda: node_selector_terms_mask(terms, cluster))[i]:
            unmet = _unmet_terms(v, terms, i)
            if not terms:
                text = "required node affinity has no term, so no node matches"
            elif len(terms) == 1:
                text = f"required node affinity: {unmet[0]['text']}"
            else:
                text = "no required node-affinity term matches: " + "; ".join(
                    f"term {u['term']}: {u['text']}" for u in unmet)
            out.append(Lack(AFFINITY, NODE_AFFINITY, text,
                            {"terms": [{k: x for k, x in u.items() if k != "text"} for u in unmet]}))
    return out or from_reasons(v, plugin_name, i, status)


def labels_would_help(v: Verdicts) -> bool:
    """Whether a new label can let a node in: the pod has a nodeSelector and no required node
    affinity, its own or the scheduler's, whose terms a new label could break."""
    selector, required = selector_and_required(v)
    plugin = v.framework.plugins.get(AFFINITY)
    return bool(selector) and required is None and getattr(plugin, "added_required", None) is None


def unlabelled(v: Verdicts) -> list[str]:
    """The nodeSelector labels no node has."""
    if AFFINITY not in v.statuses:
        return []
    selector, _ = selector_and_required(v)
    return [f"no node is labelled {key}={want}, which the pod's nodeSelector asks for"
            for key, want in sorted((selector or {}).items())
            if not v.cluster.label_column(key).isin([want]).any()]


def label(v: Verdicts) -> list[str]:
    """Nodes NodeAffinity alone rejects for the pod's nodeSelector only: the labels that would make
    them fit."""
    only = v.alone(AFFINITY)
    if not only.any() or not labels_would_help(v):
        return []
    selector, _ = selector_and_required(v)
    only &= ~v.outside.get(AFFINITY, np.zeros(v.cluster.n, dtype=bool))
    items = sorted(selector.items())
    mismatch = np.column_stack([~v.cluster.label_column(key).isin([want]) for key, want in items])[only]
    rows = np.flatnonzero(only)
    patterns, inverse = np.unique(mismatch, axis=0, return_inverse=True)
    out = []
    for p, pattern in enumerate(patterns):
        nodes = rows[inverse.reshape(-1) == p]
        labels = joined([f"{key}={want}" for (key, want), miss in zip(items, pattern) if miss])
        out.append((len(nodes), f"{nodes_phrase(len(nodes), nodes, v.cluster)} would fit if labelled {labels}"))
    return by_count(out)

