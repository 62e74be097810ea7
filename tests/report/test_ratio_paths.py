"""A report on one node (pending, a large check) computes its ratios with Python floats, a report on
many nodes over arrays: both must write the very same numbers."""
import random

import numpy as np

from builders import node, pod
from kplan.api.objects import Node, Pod
from kplan.cluster.state import ClusterState
from kplan.report.ratios import FEW_NODES, _nums, placement_ratios, ratio, rounded_ratio


def _random_cluster(rng: random.Random, n: int) -> ClusterState:
    nodes = [Node(node(f"n{i}", cpu=f"{rng.randrange(0, 64000)}m", memory=f"{rng.randrange(0, 10**12)}",
                       extra={"example.com/gpu": str(rng.randrange(0, 9))})) for i in range(n)]
    pods = [Pod(pod(f"p{k}", node_name=f"n{rng.randrange(n)}",
                    requests={"cpu": f"{rng.randrange(1, 4000)}m", "memory": str(rng.randrange(1, 10**10))},
                    limits={"cpu": f"{rng.randrange(4000, 9000)}m", "memory": str(rng.randrange(10**10, 2 * 10**10)),
                            "example.com/gpu": str(rng.randrange(0, 3))}))
            for k in range(6 * n)]
    return ClusterState(nodes, pods)


def test_one_node_at_a_time_writes_what_the_array_path_writes():
    rng = random.Random(7)
    cluster = _random_cluster(rng, 40)
    incoming = Pod(pod("new", requests={"cpu": "1500m", "memory": "3Gi", "example.com/gpu": "1"},
                       limits={"cpu": "2", "memory": "3Gi", "example.com/gpu": "1"}))
    rows = np.arange(cluster.n)
    over_arrays = placement_ratios(cluster, rows, incoming)
    assert len(rows) > FEW_NODES
    assert [placement_ratios(cluster, [i], incoming)[0] for i in rows.tolist()] == over_arrays
    assert any(v["example.com/gpu"]["request"] is None for v in over_arrays)  # nodes without GPUs: null


def test_requested_after_one_node_at_a_time_is_the_array_paths():
    from types import SimpleNamespace
    from kplan.report.model import _request_ratios_after
    cluster = _random_cluster(random.Random(11), 30)
    result = SimpleNamespace(pod=Pod(pod("new", requests={"cpu": "750m", "memory": "1536Mi"})))
    over_arrays = _request_ratios_after(result, cluster, np.arange(cluster.n))
    singles = [_request_ratios_after(result, cluster, np.array([i])) for i in range(cluster.n)]
    assert {r: [one[r][0] for one in singles] for r in over_arrays} == over_arrays


def test_rounded_ratio_is_the_array_paths_division_and_rounding():
    rng = random.Random(3)
    pairs = [(rng.randrange(0, 10**13), rng.randrange(1, 10**13)) for _ in range(20_000)]
    pairs += [(rng.randrange(0, 10**6), rng.randrange(1, 10**3)) for _ in range(20_000)]
    pairs += [(k * 5 + 1, 20_000) for k in range(2_000)]  # quotients on the half-way points of 4 digits
    pairs += [(5, 0), (0, 0), (7, -1)]
    amounts, allocatable = np.array([[a for a, _ in pairs]]), np.array([[b for _, b in pairs]])
    assert [rounded_ratio(a, b) for a, b in pairs] == _nums(ratio(amounts, allocatable))[0]
