"""What would make it fit: the nearest nodes of a pod no node accepts, what each lacks, and hints.

- `verdicts`: `analyze` runs every PreFilter and Filter plugin of the pod's profile over every
  node, without kube-scheduler's short-circuits, so every plugin's verdict on every node is known.
- `nodes`: the rejected nodes nearest to fitting (`nearest_nodes`) and what one node lacks
  (`lacks_of`), plugin by plugin.
- `hints`: the cluster-wide hints, in their fixed order.
- One module per kind of lack, each with what a node lacks for its plugin and the hints that plugin
  alone leads to: `resources` (NodeResourcesFit), `taints` (TaintToleration, NodeUnschedulable),
  `node_labels` (NodeAffinity), `spread` (PodTopologySpread), `pod_terms` (InterPodAffinity),
  `host_ports` (NodePorts); the volume plugins' hints are `kplan.planning.volume_hints`.
- `lack`: the Lack and NearNode a caller receives, the kinds, and the wording they share.

Nothing here changes the node table; nothing prints.
"""
