"""ClusterState: what-if changes to one row that are undone."""
from __future__ import annotations

import numpy as np
from builders import cluster, container, node, pod

from kplan.api.label_selectors import parse_selector
from kplan.api.objects import Pod, Taint
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


def test_without_takes_nodes_out_with_their_pods_and_leaves_the_table_unchanged():
    ported = container(requests={"cpu": "1"}, ports=[{"containerPort": 80, "hostPort": 8080}])
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    c = cluster([node("a", labels={"zone": "z1"}), node("b", labels={"zone": "z2"}), node("c", labels={"zone": "z3"})],
                [pod("p1", node_name="a", requests={"cpu": "1"}, labels={"app": "web"}),
                 pod("p2", node_name="b", requests={"cpu": "2"}, labels={"app": "web"}, spec={"affinity": anti}),
                 pod("p3", node_name="c", containers=[ported], labels={"app": "web"})])
    index = PodIndex.of(c)
    index.tables()
    c.label_column("zone")
    smaller = c.without([1])
    assert smaller.names == ["a", "c"] and smaller.index == {"a": 0, "c": 1} and smaller.n == 2
    assert smaller.requested[:, smaller.res_index["cpu"]].tolist() == [1000, 1000]
    assert smaller.pod_count.tolist() == [1, 1] and smaller.pods_total == 2
    assert [[p.name for p in ps] for ps in smaller.pods_by_node] == [["p1"], ["p3"]]
    assert list(smaller.used_ports) == [1]  # c's host port, now at position 1
    assert smaller.label_column("zone").codes.tolist() == [0, 2]
    # The index counts per new position; p2 (and its anti-affinity term) left with b.
    moved = smaller.pod_index
    web = moved.selector_mask(parse_selector({"matchLabels": {"app": "web"}}))
    assert moved.per_node(web).tolist() == [1, 1]
    matched = np.ones(1, dtype=bool)
    assert moved.existing_terms_per_node("requiredAntiAffinity", matched).tolist() == [0, 0]
    # The original is as it was, and the copies are independent.
    assert c.names == ["a", "b", "c"] and c.pods_total == 3 and index.per_node(index.selector_mask(
        parse_selector({"matchLabels": {"app": "web"}}))).tolist() == [1, 1, 1]
    smaller.assume(Pod(pod("x", requests={"cpu": "1"})), 0)
    assert [p.name for p in c.pods_by_node[0]] == ["p1"] and index.size == 3


def test_set_taints_changes_one_node_and_clones_keep_theirs():
    c = cluster([node("a"), node("b")])
    copy = c.clone()
    gone = Taint("ToBeDeletedByClusterAutoscaler", "", "NoSchedule")
    c.set_taints(0, (gone,))
    assert c.taint_sets[int(c.taint_set_ids[0])] == (gone,) and c.taint_sets[int(c.taint_set_ids[1])] == ()
    assert copy.taint_sets[int(copy.taint_set_ids[0])] == () and len(copy.taint_sets) == 1
    c.set_taints(0, ())
    assert c.taint_set_ids.tolist() == [0, 0]
