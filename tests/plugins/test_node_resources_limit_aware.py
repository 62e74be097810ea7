"""NodeResourcesLimitAware: resource-limit-aware scoring as scheduler-plugins KEP 217 specifies it.

The KEP was never implemented upstream, so there is no upstream test table; the cases are the
KEP's worked example (node1 limits 10/8 vs node2 5/8, pod5 request 1 limit 4) and the rules
its Design Details state: raw = (allocatable - limit) * 100 / allocatable, weighted over the
configured resources (cpu and memory by default), negative when over-subscribed, min-max
normalized to 0..100; a BestEffort pod uses a default limit (configured, else allocatable).
"""
from __future__ import annotations

import numpy as np
import pytest

from builders import cluster, container, pod
from kplan.api.objects import Pod
from kplan.errors import InputError
from kplan.framework.interfaces import CycleState
from kplan.plugins.node_resources_limit_aware import NodeResourcesLimitAware


def bare_node(name: str, allocatable: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {}},
            "spec": {}, "status": {"allocatable": dict(allocatable), "capacity": dict(allocatable)}}


def cpu_pod(name, request, limit, node_name="", memory=None) -> dict:
    requests, limits = {"cpu": str(request)}, {"cpu": str(limit)}
    if memory:
        requests["memory"] = limits["memory"] = memory
    return pod(name, node_name=node_name, containers=[container("c", requests=requests, limits=limits)])


def kep_cluster(node2_memory_limit=None):
    """KEP 217's use case: two 8-core nodes; node1 runs limits 6 + 4, node2 3 + 2."""
    nodes = [bare_node("node1", {"cpu": "8", "memory": "32Gi"}), bare_node("node2", {"cpu": "8", "memory": "32Gi"})]
    pods = [cpu_pod("pod1", 2, 6, "node1"), cpu_pod("pod2", 2, 4, "node1"),
            cpu_pod("pod3", 3, 3, "node2", memory=node2_memory_limit), cpu_pod("pod4", 2, 2, "node2")]
    return cluster(nodes, pods)


def scores(args, p: dict, c):
    plugin = NodeResourcesLimitAware(args)
    the_pod = Pod(p)
    state = CycleState()
    candidates = np.arange(c.n)
    assert plugin.pre_score(state, the_pod, c, candidates) is None
    raw = plugin.score(state, the_pod, c, candidates)
    return raw.tolist(), plugin.normalize_score(state, the_pod, raw).tolist()


BEST_EFFORT = pod("be", containers=[container("c")])

CASES = [
    # (14 - 8) over 8 -> -75; (9 - 8) over 8 -> -12 (Go truncation of -12.5).
    ("KEP example, cpu only", {"resources": [{"name": "cpu", "weight": 1}]}, cpu_pod("pod5", 1, 4), None,
     [-75, -12], [0, 100]),
    # Default resources cpu and memory: memory has no limits anywhere, so it scores 100 on both.
    ("KEP example, default cpu and memory", {}, cpu_pod("pod5", 1, 4), None, [12, 44], [0, 100]),
    ("scoringResourceWeights spelling", {"scoringResourceWeights": {"cpu": 1}}, cpu_pod("pod5", 1, 4), None,
     [-75, -12], [0, 100]),
    # Weighted mean: cpu 3, memory 1; node2 has 16Gi of memory limits (50 on memory):
    # (-75*3 + 100) / 4 = -31 (Go truncation), (-12*3 + 50) / 4 = 3.
    ("weights", {"resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]},
     cpu_pod("pod5", 1, 4), "16Gi", [-31, 3], [0, 100]),
    # A BestEffort pod without defaultLimits counts the node's allocatable: -(10)*100/8, -(5)*100/8.
    ("best effort uses allocatable", {"resources": [{"name": "cpu"}]}, BEST_EFFORT, None, [-125, -62], [0, 100]),
    ("best effort uses defaultLimits", {"resources": [{"name": "cpu"}], "defaultLimits": {"cpu": "1"}},
     BEST_EFFORT, None, [-37, 25], [0, 100]),
    # A resource no node has is left out; with nothing left every raw score is 0 and so is every score.
    ("resource the nodes lack", {"resources": [{"name": "example.com/gpu"}]}, cpu_pod("pod5", 1, 4), None,
     [0, 0], [0, 0]),
]


@pytest.mark.parametrize("name,args,p,mem,raw,normalized", CASES, ids=[c[0] for c in CASES])
def test_score(name, args, p, mem, raw, normalized):
    assert scores(args, p, kep_cluster(mem)) == (raw, normalized)


def test_kep_example_three_nodes_normalizes_between():
    c = cluster([bare_node(n, {"cpu": "8"}) for n in ("a", "b", "c")],
                [cpu_pod("x", 1, 10, "a"), cpu_pod("y", 1, 6, "b")])
    # raw: (8-14)*100/8 = -75, (8-10)*100/8 = -25, (8-4)*100/8 = 50 -> 0, 40, 100
    assert scores({"resources": [{"name": "cpu"}]}, cpu_pod("p", 1, 4), c) == ([-75, -25, 50], [0, 40, 100])


@pytest.mark.parametrize("args,message", [
    ({"defaultLimits": {"cpu": "lots"}}, "defaultLimits"),
    ({"defaultLimits": ["cpu"]}, "defaultLimits must be a resource list"),
    ({"resources": [{"name": "cpu", "weight": 101}]}, "not in valid range"),
    ({"resources": [{"name": "cpu"}], "scoringResourceWeights": {"cpu": 1}}, "not both"),
    ({"ratio": 1}, "unknown field(s) ratio"),
])
def test_bad_args(args, message):
    with pytest.raises(InputError) as err:
        NodeResourcesLimitAware(args)
    assert message in str(err.value)
