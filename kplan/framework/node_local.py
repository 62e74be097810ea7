"""Which plugins read only the pod and one node, and a one-node view of the table for them.

The replica fast path caches these plugins' results per template; preemption's dry run, which
re-checks one node after each victim it removes or adds back, runs them on that node alone.
"""
from __future__ import annotations

from kplan.cluster.state import ClusterState

# Plugins whose Filter and Score depend only on the pod template and the node (its labels, taints,
# images, name), never on the pods placed.
STATIC_PLUGINS = frozenset({"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "ImageLocality",
                            "NodeDeclaredFeatures"})
# Static too while the template has no pod (anti-)affinity terms: it then reads only existing
# pods' terms, and replicas without terms add none.
STATIC_WITHOUT_POD_TERMS = frozenset({"InterPodAffinity"})
# Plugins whose Filter and Score of a node depend only on the template and that node's own row
# (requested, pod count, used ports).
ROW_PLUGINS = frozenset({"NodeResourcesFit", "NodeResourcesBalancedAllocation", "NodePorts"})
# Row plugins whose row depends only on the row's resource columns (not on pods_by_node or ports).
LEVELED_PLUGINS = frozenset({"NodeResourcesFit", "NodeResourcesBalancedAllocation"})
_ROW_COLUMNS = ("allocatable", "requested", "non_zero_requested", "pod_count", "allowed_pods", "unschedulable",
                "taint_set_ids", "allocated_limits", "non_zero_limits", "name_array")


def row_view(cluster: ClusterState, i: int) -> ClusterState:
    """Returns a one-node view of row i for the row plugins: its columns share the table's memory,
    but its pod list and ports are those of now, so a view is for use before the next change."""
    view = object.__new__(type(cluster))  # a shallow copy, without copy.copy's generic protocol
    view.__dict__.update(cluster.__dict__)
    view.n = 1
    view.nodes = [cluster.nodes[i]]
    view.names = [cluster.names[i]]
    view.index = {cluster.names[i]: 0}
    for name in _ROW_COLUMNS:
        col = getattr(cluster, name, None)
        if col is not None:
            setattr(view, name, col[i:i + 1])
    view.pods_by_node = [cluster.pods_by_node[i]]
    view.used_ports = {0: cluster.used_ports[i]} if i in cluster.used_ports else {}
    view._label_columns = {}
    view._image_index = None
    view.pod_index = view.pods_as_loaded = None
    return view
