"""A node's columns as kubectl shows them: its STATUS, its taints, its label columns (-L), and
the groups of nodes by a label's value."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from kplan.api.objects import Node, Taint
from kplan.cluster.state import ClusterState
from kplan.planning.check import NO_ZONE as NO_GROUP  # the group of nodes without the label


def kubectl_status(node: Node) -> str:
    """The STATUS `kubectl get nodes` prints (printNode): "Ready" or "NotReady" from the Ready
    condition ("NotReady" for a status of False or Unknown), "Unknown" without one, then
    ",SchedulingDisabled" for a cordoned node."""
    conditions = (node.raw.get("status") or {}).get("conditions") or ()
    ready = next((c for c in conditions if isinstance(c, dict) and c.get("type") == "Ready"), None)
    status = "Unknown" if ready is None else "Ready" if ready.get("status") == "True" else "NotReady"
    return status + ",SchedulingDisabled" if node.unschedulable else status


def taint_entry(taint: Taint) -> dict[str, str]:
    """A taint in the JSON: key, value (left out when empty, as the API server does) and effect."""
    entry = {"key": taint.key, "effect": taint.effect}
    if taint.value:
        entry["value"] = taint.value
    return entry


def taints_text(taints: Sequence[dict[str, Any]]) -> str:
    """Taints as kubectl describe lists them: key=value:Effect, comma-separated."""
    return ", ".join(f"{t['key']}{'=' + t['value'] if t.get('value') else ''}:{t['effect']}" for t in taints)


def label_header(key: str) -> str:
    """kubectl's header of a -L column (formatLabelHeaders): the key's last path segment
    ("node.kubernetes.io/instance-type" -> INSTANCE-TYPE, upper-cased by the table)."""
    return key.split("/")[-1]


def group_names(cluster: ClusterState, rows: np.ndarray, key: str) -> list[str]:
    """Each row's value of the label (NO_GROUP where the node has none)."""
    column = cluster.label_column(key)
    return [column.values[c] if c >= 0 else NO_GROUP for c in column.codes[rows].tolist()]
