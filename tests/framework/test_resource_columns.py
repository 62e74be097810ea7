"""The resource scorers' column path (usage_columns) gives the matrix path's scores to the unit, on random
tables: requests beyond allocatable, pods without requests, odd amounts."""
import random

import numpy as np
import pytest

from builders import cluster, node, pod
from kplan.api.objects import Pod
from kplan.framework.interfaces import CycleState
from kplan.framework.resource_scoring import pod_request_list, resource_usage, usage_columns, weighted_mean
from kplan.plugins import node_resources_balanced_allocation as balanced
from kplan.plugins import node_resources_fit as fit


def random_table(rng: random.Random):
    nodes = [node(f"n{i}", cpu=f"{rng.randint(1, 64000)}m", memory=f"{rng.randint(1, 2 ** 20)}Ki")
             for i in range(40)]
    pods = [pod(f"p{k}", node_name=f"n{rng.randrange(40)}",
                requests={"cpu": f"{rng.randint(0, 9000)}m", "memory": f"{rng.randint(0, 2 ** 18)}Ki"}
                if rng.random() < 0.8 else None) for k in range(120)]
    return cluster(nodes, pods)


def incoming(rng: random.Random, k: int) -> Pod:
    requests = {"cpu": f"{rng.randint(0, 70000)}m", "memory": f"{rng.randint(0, 2 ** 21)}Ki"} if k % 4 else None
    return Pod(pod(f"in{k}", requests=requests))


@pytest.mark.parametrize("seed", range(5))
def test_least_allocated_columns_equal_the_matrix_path(seed):
    rng = random.Random(seed)
    table = random_table(rng)
    plugin = fit.NodeResourcesFit()
    candidates = np.array(sorted(rng.sample(range(table.n), 30)), dtype=np.intp)
    for k in range(20):
        p = incoming(rng, k)
        requests = pod_request_list(p, plugin.resources, use_requested=False)
        usage = resource_usage(table, candidates, plugin.resources, requests, use_requested=False)
        weights = [s.weight for s in plugin.resources]
        expected = weighted_mean(fit._least_allocated(usage.requested, usage.allocatable), weights, usage.scored)
        columns = usage_columns(table, candidates, plugin.resources, use_requested=False)
        assert columns is not None
        assert fit._least_allocated_columns(columns, requests, weights).tolist() == expected.tolist()
        assert plugin.score(CycleState(), p, table, candidates).tolist() == expected.tolist()


@pytest.mark.parametrize("release", [(1, 35), (1, 36)], ids=["1.35", "1.36"])
@pytest.mark.parametrize("seed", range(5))
def test_balanced_allocation_columns_equal_the_matrix_path(seed, release):
    rng = random.Random(seed)
    table = random_table(rng)
    plugin = balanced.NodeResourcesBalancedAllocation(kube_version=release)
    candidates = np.arange(table.n, dtype=np.intp)
    for k in range(20):
        p = incoming(rng, k)
        state = CycleState()
        skipped = plugin.pre_score(state, p, table, candidates)
        if skipped is not None:  # a pod without requests, from 1.36
            continue
        requests = pod_request_list(p, plugin.resources, use_requested=True)
        usage = resource_usage(table, candidates, plugin.resources, requests, use_requested=True)
        if plugin.semantics.score_balance_change:
            expected = balanced.balance_change_scores(usage.requested, usage.allocated, usage.allocatable)
        else:
            expected = balanced.balance_scores(usage.requested, usage.allocatable)
        assert plugin.score(state, p, table, candidates).tolist() == expected.tolist()


def test_columns_stand_aside_for_a_node_without_memory():
    table = cluster([node("a", memory="0"), node("b")])
    assert usage_columns(table, np.arange(2), fit.NodeResourcesFit().resources, use_requested=False) is None
