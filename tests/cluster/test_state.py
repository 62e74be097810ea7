"""ClusterState: what-if changes to one row that are undone."""
from __future__ import annotations

import numpy as np
from builders import cluster, container, node, pod

from kplan.api.objects import Pod
from kplan.cluster.pod_index import PodIndex


def _row(c, i):
    return (c.requested[i].tolist(), c.non_zero_requested[i].tolist(), c.allocated_limits[i].tolist(),
            c.non_zero_limits[i].tolist(), int(c.pod_count[i]), [p.name for p in c.pods_by_node[i]],
            list(c.used_ports.get(i, [])), c.pods_total)


def test_scratch_row_undoes_assume_and_forget_and_leaves_the_index_alone():
    ported = container(requests={"cpu": "1"}, ports=[{"containerPort": 80, "hostPort": 8080}])
    c = cluster([node("a"), node("b")],
                [pod("p1", node_name="a", requests={"cpu": "500m", "memory": "1Gi"}, limits={"cpu": "1"}),
                 pod("p2", node_name="a", containers=[ported]), pod("p3", node_name="b", requests={"cpu": "2"})])
    index = PodIndex.of(c)
    before, other, size = _row(c, 0), _row(c, 1), index.size
    with c.scratch_row(0):
        for p in list(c.pods_by_node[0]):
            c.forget(p, 0)
        c.assume(Pod(pod("x", requests={"cpu": "3"})), 0)
        assert int(c.pod_count[0]) == 1 and c.requested[0][c.res_index["cpu"]] == 3000
        assert c.used_ports.get(0) == []
        assert c.pod_index is None
    assert _row(c, 0) == before and _row(c, 1) == other
    assert c.pod_index is index and index.size == size and bool(np.all(index.alive[:size]))
