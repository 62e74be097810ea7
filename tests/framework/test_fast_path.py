"""Framework.schedule(rank=False) chooses the node the full ranking would, replica after replica."""
import pytest

from builders import cluster, node, pod
from kplan.api.objects import Pod
from kplan.framework.config import default_profile
from kplan.framework.runtime import Framework, SCHEDULED


def nodes():
    # Identical nodes listed out of name order (ties broken by name), and a bigger and a tainted one.
    return [node("n-c", cpu="4"), node("n-a", cpu="4"), node("n-b", cpu="4"), node("big", cpu="8", memory="16Gi"),
            node("t", cpu="4", taints=[{"key": "k", "effect": "PreferNoSchedule"}]),
            node("n-d", cpu="4", labels={"zone": "z"})]


@pytest.mark.parametrize("labels, owner", [({}, ""), ({"app": "web"}, "ReplicaSet")], ids=["plain", "spread-defaults"])
def test_fast_path_node_sequence_equals_full_path(labels, owner):
    fw = Framework(default_profile())
    full, fast = cluster(nodes()), cluster(nodes())
    seq_full, seq_fast = [], []
    ties = 0
    for k in range(60):
        raw = pod(f"r-{k}", requests={"cpu": "500m", "memory": "256Mi"}, labels=labels, owner_kind=owner)
        a = fw.schedule(Pod(raw), full, assume=True)
        b = fw.schedule(Pod(raw), fast, assume=True, rank=False)
        assert a.outcome == b.outcome
        seq_full.append(full.names[a.node] if a.outcome == SCHEDULED else None)
        seq_fast.append(fast.names[b.node] if b.outcome == SCHEDULED else None)
        if a.outcome == SCHEDULED:
            assert b.ranking.tolist() == [a.ranking[0]]
            ties += len(a.tied_with_selected()) > 1
    assert seq_fast == seq_full
    assert ties  # the name tie-break was exercised
    # 28 CPUs in all (five 4-CPU nodes and an 8-CPU one) hold 56 replicas of 500m; the rest do not fit.
    assert seq_full.count(None) == 4 and seq_full[-4:] == [None] * 4


@pytest.mark.parametrize("labels, owner, extra", [
    ({}, "", {}),
    ({"app": "web"}, "ReplicaSet", {}),
    ({"app": "web"}, "", {"tolerations": [{"key": "k", "operator": "Exists", "effect": "PreferNoSchedule"}],
                          "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                              {"weight": 5, "preference": {"matchExpressions": [
                                  {"key": "zone", "operator": "In", "values": ["z"]}]}}]}}}),
    ({"app": "web"}, "", {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "500m"}},
                                          "ports": [{"containerPort": 80, "hostPort": 8080}]}]}),
    ({"app": "web"}, "", {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                           "labelSelector": {"matchLabels": {"app": "web"}}}}]}}}),
], ids=["plain", "spread-defaults", "preferences", "host-port", "own-anti-affinity"])
@pytest.mark.parametrize("levels_after", [1, 3, 1000], ids=["levels-at-once", "levels-later", "no-levels"])
def test_replica_scheduler_node_sequence_equals_full_path(labels, owner, extra, levels_after):
    from kplan.framework.runtime import ReplicaScheduler
    fw = Framework(default_profile())
    full, fast = cluster(nodes()), cluster(nodes())
    replicas = ReplicaScheduler(fw, fast)
    replicas.LEVELS, replicas.LEVELS_AFTER = 3, levels_after  # small tables: rows beyond them re-run
    template = pod("r", requests={"cpu": "500m", "memory": "256Mi"}, labels=labels, owner_kind=owner, spec=extra)
    seq_full, seq_fast = [], []
    for k in range(60):
        raw = {**template, "metadata": {**template["metadata"], "name": f"r-{k}"}}  # one shared spec
        a = fw.schedule(Pod(raw), full, assume=True)
        b = replicas.schedule(Pod(raw))
        assert a.outcome == b.outcome, k
        seq_full.append(full.names[a.node] if a.outcome == SCHEDULED else None)
        seq_fast.append(fast.names[b.node] if b.outcome == SCHEDULED else None)
    assert seq_fast == seq_full
    assert None in seq_full
    assert (full.requested == fast.requested).all() and (full.pod_count == fast.pod_count).all()
