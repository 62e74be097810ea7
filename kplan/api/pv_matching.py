"""Which PersistentVolume a claim can bind to, over all nodes at once (k8s.io/component-helpers/
storage/volume: FindMatchingVolume, CheckNodeAffinity, IsVolumeBoundToClaim, CheckAccessModes,
CheckVolumeModeMismatches).

FindMatchingVolume goes through the volumes of the claim's class in order and, on the scheduler's
path (a node given, delayed binding):
- skips volumes excluded (chosen for another claim of the pod), bound to another claim, smaller
  than the request, of another volume mode or VolumeAttributesClass, or being deleted;
- returns at once a volume pre-bound to this claim (claimRef naming it) when its node affinity
  admits the node, and nothing when it does not;
- else keeps the smallest volume that is Available, matches the claim's selector, is of the
  claim's class, admits the node and offers every access mode the claim asks for.
Here the node-independent checks run once per claim and the node affinity as a mask per volume.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from kplan.api.node_selectors import is_empty_term, requirement_mask
from kplan.api.storage import PersistentVolume, PersistentVolumeClaim

AVAILABLE = "Available"


def node_affinity_mask(terms: Sequence[Mapping] | None, cluster) -> np.ndarray:
    """CheckNodeAffinity over all nodes: no affinity admits every node; else any term whose label
    requirements all hold. The node it checks carries labels only, so matchFields are not checked
    (a term of matchFields alone admits every node), and a requirement that does not parse fails
    its term."""
    n = cluster.n
    if terms is None:
        return np.ones(n, dtype=bool)
    mask = np.zeros(n, dtype=bool)
    for term in terms:
        if is_empty_term(term):
            continue
        hit = np.ones(n, dtype=bool)
        for req in term.get("matchExpressions") or ():
            hit &= requirement_mask(req, cluster)
        mask |= hit
    return mask


def bound_to_claim(pv: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """IsVolumeBoundToClaim: the volume's claimRef names the claim (and its uid, when set)."""
    ref = pv.claim_ref
    if ref is None or ref.name != claim.name or ref.namespace != claim.namespace:
        return False
    return not ref.uid or ref.uid == claim.uid


def access_modes_offered(claim: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """CheckAccessModes: the volume offers every access mode the claim asks for."""
    return set(claim.access_modes) <= set(pv.access_modes)


@dataclass(frozen=True)
class Candidates:
    """The volumes a claim may bind to on some node, smallest first (ties in list order); a volume
    pre-bound to the claim is the only one."""

    volumes: tuple[PersistentVolume, ...]


def candidates(claim: PersistentVolumeClaim, volumes: Sequence[PersistentVolume], attributes_classes: bool,
               excluded: frozenset[str] = frozenset()) -> Candidates:
    """FindMatchingVolume's node-independent checks, in its order. `attributes_classes` is the
    VolumeAttributesClass gate: off, a claim or volume naming a class never matches."""
    if not attributes_classes and claim.attributes_class:
        return Candidates(())
    kept: list[PersistentVolume] = []
    for pv in volumes:
        if pv.name in excluded:
            continue
        if pv.claim_ref is not None and not bound_to_claim(pv, claim):
            continue
        if claim.request is not None and pv.capacity < claim.request:
            continue
        if pv.volume_mode != claim.volume_mode:
            continue
        if attributes_classes and claim.attributes_class != pv.attributes_class:
            continue
        if not attributes_classes and pv.attributes_class:
            continue
        if pv.terminating:
            continue
        if bound_to_claim(pv, claim):
            return Candidates((pv,))
        if pv.phase != AVAILABLE:
            continue
        if claim.selector is not None and not claim.selector.matches(pv.labels):
            continue
        if pv.storage_class != claim.storage_class or not access_modes_offered(claim, pv):
            continue
        kept.append(pv)
    # The smallest wins; among equal sizes the first in list order (a stable sort keeps it).
    return Candidates(tuple(sorted(kept, key=lambda pv: pv.capacity)))
