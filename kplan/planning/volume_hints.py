"""Hints for a pod whose volumes decide where it can go.

- A claim bound to a volume only some nodes can reach (its node affinity, e.g. one zone) pins the
  pod there: when every such node is rejected for other reasons, say which volume pins it and what
  those nodes lack ("claim data-db-2 is bound to volume pv-7 in zone-a: every node it can use is
  rejected (node-a1: 300m cpu short; ...)").
- A WaitForFirstConsumer claim already being provisioned for one node pins the pod to that node.
- Nodes NodeVolumeLimits alone rejects: how many volumes of which driver they hold against its
  limit ("node-3 would fit with room for 1 more ebs.csi.aws.com volume (it holds 39 of 39)").

`describe(i)` says what node i lacks but for its volumes (the nearest-nodes analysis's lines, ""
when only volumes reject it), so the facts come from the same analysis the nearest nodes show.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from kplan.api.node_selectors import describe_terms
from kplan.plugins import node_volume_limits, volume_binding, volume_restrictions

MAX_NODES = 3  # nodes a hint names before "and N more"

Describe = Callable[[int], str]


def volume_hints(v, describe: Describe) -> list[str]:
    return (_pinned_by_bound_volumes(v, describe) + _pinned_by_provisioning(v, describe) + _claims_in_use(v)
            + _disks_in_use(v) + _attach_limits(v))


def _claims(v) -> volume_binding.PodVolumeClaims | None:
    return v.state.get(volume_binding.STATE_KEY)


def _others_rejecting(v, nodes: np.ndarray, describe: Describe) -> str:
    shown = [f"{v.cluster.names[i]}: {describe(i) or 'its volumes'}" for i in nodes[:MAX_NODES].tolist()]
    more = len(nodes) - MAX_NODES
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


def _pinned_by_bound_volumes(v, describe: Describe) -> list[str]:
    claims = _claims(v)
    if claims is None or not claims.bound:
        return []
    volumes = v.cluster.volumes
    out = []
    for claim in claims.bound:
        pv = volumes.binder_volume(claim.volume_name)
        if pv is None or pv.node_affinity is None:
            continue
        admitted = np.flatnonzero(volumes.affinity_mask(pv))
        where = f"in {pv.zone_summary()}" if pv.zone_summary() else f"({describe_terms(pv.node_affinity)})"
        if not len(admitted):
            out.append(f"claim {claim.name} is bound to volume {pv.name} {where}, which no node can use")
        elif (v.failing[admitted] > 0).all():
            out.append(f"claim {claim.name} is bound to volume {pv.name} {where}: every node it can use is rejected "
                       f"({_others_rejecting(v, admitted, describe)})")
    return out


def _pinned_by_provisioning(v, describe: Describe) -> list[str]:
    claims = _claims(v)
    if claims is None:
        return []
    out = []
    for claim in claims.delayed:
        node = v.cluster.index.get(claim.selected_node) if claim.selected_node is not None else None
        if claim.selected_node is None:
            continue
        if node is None:
            out.append(f"claim {claim.name} is being provisioned for node {claim.selected_node}, which is not in the "
                       "snapshot")
        elif v.failing[node] > 0 and describe(node):
            out.append(f"claim {claim.name} is being provisioned for node {claim.selected_node} (WaitForFirstConsumer), "
                       f"which rejects the pod: {describe(node)}")
    return out


def _claims_in_use(v) -> list[str]:
    """ReadWriteOncePod claims another pod uses: no node can take the pod while that pod runs."""
    pre = v.state.get(volume_restrictions.PRE_FILTER_STATE_KEY)
    if pre is None or not pre.conflicts:
        return []
    out = []
    for name in sorted(pre.claims):
        holder = v.cluster.volumes.claim_user(v.pod.namespace, name)
        if holder is not None:
            other, node = holder
            out.append(f"claim {name} is ReadWriteOncePod and pod {other.key} on {node} uses it: no other pod can "
                       "use it while that one runs")
    return out


def _disks_in_use(v) -> list[str]:
    """Nodes VolumeRestrictions alone rejects for an inline disk a pod there mounts already."""
    name = volume_restrictions.NAME
    if name not in v.statuses:
        return []
    status = v.statuses[name]
    column = status.reasons.index(volume_restrictions.DISK_CONFLICT)
    nodes = np.flatnonzero(status.reason_mask[:, column] & (v.failing == 1))
    if not len(nodes):
        return []
    first = int(nodes[0])
    who = v.cluster.names[first] if len(nodes) == 1 else f"{len(nodes)} nodes"
    return [f"{who} would fit if the pod's inline disk were free there ({v.cluster.names[first]}: "
            f"{'; '.join(status.explain(first))})"]


def _attach_limits(v) -> list[str]:
    name = node_volume_limits.NAME
    if name not in v.plugins:
        return []
    only = v.column(name) & (v.failing == 1)
    nodes = np.flatnonzero(only)
    if not len(nodes):
        return []
    status = v.statuses[name]
    first = int(nodes[0])
    detail = "; ".join(status.explain(first)) if status.explain is not None else ""
    who = v.cluster.names[first] if len(nodes) == 1 else f"{len(nodes)} nodes"
    return [f"{who} would fit with room for more attached volumes ({v.cluster.names[first]}: {detail})"]
