"""Framework.schedule(rank=False) chooses the node the full ranking would, replica after replica."""
import numpy as np
import pytest

from builders import cluster, node, pod
from topology_builders import replica_set, snapshot_of
from kplan.api.objects import Pod
from kplan.framework.config import default_profile
from kplan.framework.interfaces import Handle
from kplan.plugins.registry import REGISTRY
from kplan.framework.runtime import Framework, SCHEDULED


def nodes():
    # Identical nodes listed out of name order (ties broken by name), and a bigger and a tainted one.
    return [node("n-c", cpu="4"), node("n-a", cpu="4"), node("n-b", cpu="4"), node("big", cpu="8", memory="16Gi"),
            node("t", cpu="4", taints=[{"key": "k", "effect": "PreferNoSchedule"}]),
            node("n-d", cpu="4", labels={"zone": "z"})]


def with_owner() -> Handle:
    """A snapshot with the ReplicaSet that pod(owner_kind="ReplicaSet") names ("owner"): its pods get the
    default constraints, selecting app=web."""
    return Handle(snapshot=snapshot_of(replica_set("owner", {"matchLabels": {"app": "web"}})))


def spreads_by_default(fw, raw) -> bool:
    return bool(fw.plugins["PodTopologySpread"].constraints(Pod(raw), "ScheduleAnyway"))


@pytest.mark.parametrize("labels, owner", [({}, ""), ({"app": "web"}, "ReplicaSet")], ids=["plain", "spread-defaults"])
def test_fast_path_node_sequence_equals_full_path(labels, owner):
    fw = Framework(default_profile(), REGISTRY, with_owner())
    assert spreads_by_default(fw, pod("r", labels=labels, owner_kind=owner)) == bool(owner)
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
    from kplan.framework.replicas import ReplicaScheduler
    fw = Framework(default_profile(), REGISTRY, with_owner())
    full, fast = cluster(nodes()), cluster(nodes())
    replicas = ReplicaScheduler(fw, fast)
    replicas.LEVELS, replicas.LEVELS_AFTER = 3, levels_after  # small tables: rows beyond them re-run
    template = pod("r", requests={"cpu": "500m", "memory": "256Mi"}, labels=labels, owner_kind=owner, spec=extra)
    assert spreads_by_default(fw, template) == bool(owner)
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


def zoned_nodes():
    # Three zones of unequal size and a node without the zone label (ignored by own constraints).
    zones = {"a1": "za", "a2": "za", "a3": "za", "b1": "zb", "b2": "zb", "c1": "zc"}
    return [node(name, cpu="2", labels={"topology.kubernetes.io/zone": zone}) for name, zone in zones.items()] + \
        [node("bare", cpu="2")]


def spread(key, when, max_skew=1):
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "web"}}}


ZONE = "topology.kubernetes.io/zone"


@pytest.mark.parametrize("constraints", [
    [spread(ZONE, "ScheduleAnyway")],  # one domain constraint: scored by a per-domain table
    [spread(ZONE, "ScheduleAnyway", 2), spread("kubernetes.io/hostname", "ScheduleAnyway")],
    [spread(ZONE, "DoNotSchedule", 2)],  # a per-cycle filter: candidates other than the cached ones
], ids=["zone-anyway", "zone-and-host-anyway", "zone-do-not-schedule"])
@pytest.mark.parametrize("levels_after", [1, 1000], ids=["levels", "no-levels"])
def test_replica_scheduler_spread_equals_full_path(constraints, levels_after):
    """Domain counts kept per placement, candidate arrays kept while the candidates' domains stay,
    and the table lookup of a single domain constraint choose the nodes the full path chooses."""
    from kplan.framework.replicas import ReplicaScheduler
    existing = [pod(f"old-{k}", node_name=name, requests={"cpu": "500m"}, labels={"app": "web"})
                for k, name in enumerate(["a1", "a1", "b1", "bare"])]
    existing.append(pod("other", namespace="elsewhere", node_name="c1", labels={"app": "web"}))
    fw = Framework(default_profile(), REGISTRY)
    full, fast = cluster(zoned_nodes(), existing), cluster(zoned_nodes(), existing)
    replicas = ReplicaScheduler(fw, fast)
    reference = Framework(default_profile(), REGISTRY)  # per-candidate scores, no domain counts kept
    reference.plugins["PodTopologySpread"].score_by_table = False
    replicas.LEVELS, replicas.LEVELS_AFTER = 3, levels_after
    template = pod("r", requests={"cpu": "250m", "memory": "128Mi"}, labels={"app": "web"},
                   spec={"topologySpreadConstraints": constraints})
    seq_full, seq_fast = [], []
    for k in range(60):
        raw = {**template, "metadata": {**template["metadata"], "name": f"r-{k}"}}  # one shared spec
        reference.plugins["PodTopologySpread"]._zone_cache.clear()
        a = reference.schedule(Pod(raw), full, assume=True)
        b = replicas.schedule(Pod(raw))
        assert a.outcome == b.outcome, k
        seq_full.append(full.names[a.node] if a.outcome == SCHEDULED else None)
        seq_fast.append(fast.names[b.node] if b.outcome == SCHEDULED else None)
        if a.outcome == SCHEDULED:
            assert b.candidates.tolist() == a.candidates.tolist() and b.total.tolist() == a.total.tolist()
    assert seq_fast == seq_full
    assert None in seq_full and len(set(seq_full)) > 3
    assert (full.requested == fast.requested).all() and (full.pod_count == fast.pod_count).all()


def test_pods_total_follows_assume_and_forget():
    """The fast path's fingerprint reads ClusterState.pods_total instead of summing pod_count."""
    c = cluster(nodes(), [pod("old", node_name="n-a", requests={"cpu": "1"})])
    assert c.pods_total == int(c.pod_count.sum()) == 1
    placed = [Pod(pod(f"p{k}", requests={"cpu": "100m"})) for k in range(3)]
    for k, p in enumerate(placed):
        c.assume(p, k)
    c.forget(placed[1], 1)
    assert c.pods_total == int(c.pod_count.sum()) == 3


@pytest.mark.parametrize("share", [0, 10**9], ids=["pod-by-pod", "label-columns"])
def test_matching_counts_paths_agree(monkeypatch, share):
    """A namespace's matching pods are counted one by one when it holds few of the pods, over label
    columns otherwise: the same counts either way, then kept up to date incrementally."""
    from kplan.plugins import pod_topology_spread as pts
    monkeypatch.setattr(pts, "SMALL_NAMESPACE_SHARE", share)
    pods = [pod(f"w{k}", namespace="default" if k % 3 else "other", node_name=["n-a", "n-b", "big"][k % 3],
                labels={"app": "web" if k % 2 else "api"}) for k in range(30)]
    pods.append({**pod("gone", node_name="n-a", labels={"app": "web"}),
                 "metadata": {"name": "gone", "namespace": "default", "labels": {"app": "web"},
                              "deletionTimestamp": "2024-01-01T00:00:00Z"}})
    c = cluster(nodes(), pods)
    selector = pts.label_set_selector({"app": "web"})
    incoming = Pod(pod("x", labels={"app": "web"}))
    expected = np.zeros(c.n, dtype=np.int64)
    for p in pods[:-1]:
        if p["metadata"]["namespace"] == "default" and p["metadata"]["labels"]["app"] == "web":
            expected[c.index[p["spec"]["nodeName"]]] += 1
    assert pts.matching_counts(incoming, selector, c).counts.tolist() == expected.tolist()
    c.assume(Pod(pod("new", labels={"app": "web"})), c.index["t"])
    expected[c.index["t"]] += 1
    counts = pts.matching_counts(incoming, selector, c)
    assert counts.counts.tolist() == expected.tolist() and counts.added == [c.index["t"]]


def test_accounting_vectors_are_cached_per_spec():
    """Replicas sharing a spec are accounted with the vectors of the first (a resource no node
    offers gets its column first), and forget takes exactly as much back."""
    c = cluster(nodes())
    raw = pod("p", requests={"cpu": "500m", "example.com/gpu": "1"}, limits={"cpu": "2"})
    replicas = [Pod({**raw, "metadata": {**raw["metadata"], "name": f"p{k}"}}) for k in range(3)]
    for p in replicas:
        c.assume(p, 0)
    c.forget(replicas[0], 0)
    cpu, gpu = c.res_index["cpu"], c.res_index["example.com/gpu"]
    assert c.requested[0, cpu] == 1000 and c.requested[0, gpu] == 2
    assert c.allocated_limits[0, cpu] == 4000 and c.non_zero_limits[0].tolist()[0] == 4000
    assert c.non_zero_requested[0].tolist() == [1000, 2 * 200 * 1024 * 1024]
    assert c.pod_count[0] == c.pods_total == 2


@pytest.mark.parametrize("levels_after", [1, 1000], ids=["levels", "no-levels"])
def test_replica_scheduler_spread_after_labelled_nodes_fill(levels_after):
    """A zone spread scored per slot while the only zoned nodes fill up mid-run: the candidates
    left lack the key (all ignored, scored 0), and the cached candidate arrays follow each change."""
    from kplan.framework.replicas import ReplicaScheduler
    zoned = lambda: [node("a1", cpu="1", labels={ZONE: "za"}), node("b1", cpu="1", labels={ZONE: "zb"}),
                     node("bare-2", cpu="2"), node("bare-1", cpu="2")]
    fw = Framework(default_profile(), REGISTRY)
    full, fast = cluster(zoned()), cluster(zoned())
    replicas = ReplicaScheduler(fw, fast)
    reference = Framework(default_profile(), REGISTRY)
    reference.plugins["PodTopologySpread"].score_by_table = False
    replicas.LEVELS, replicas.LEVELS_AFTER = 3, levels_after
    template = pod("r", requests={"cpu": "250m"}, labels={"app": "web"},
                   spec={"topologySpreadConstraints": [spread(ZONE, "ScheduleAnyway")]})
    seq_full, seq_fast = [], []
    for k in range(28):
        raw = {**template, "metadata": {**template["metadata"], "name": f"r-{k}"}}
        reference.plugins["PodTopologySpread"]._zone_cache.clear()
        a = reference.schedule(Pod(raw), full, assume=True)
        b = replicas.schedule(Pod(raw))
        assert a.outcome == b.outcome, k
        seq_full.append(full.names[a.node] if a.outcome == SCHEDULED else None)
        seq_fast.append(fast.names[b.node] if b.outcome == SCHEDULED else None)
        if a.outcome == SCHEDULED:
            assert b.candidates.tolist() == a.candidates.tolist() and b.total.tolist() == a.total.tolist(), k
    assert seq_fast == seq_full
    assert seq_full[:8].count("a1") == 4 and seq_full[:8].count("b1") == 4  # the zoned nodes fill first
    assert set(seq_full[8:24]) == {"bare-1", "bare-2"} and seq_full[24:] == [None] * 4


@pytest.mark.parametrize("raw_selector", [
    {"matchLabels": {"app": "web", "tier": "front"}},  # matchLabels: matched as a subset of label items
    {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["back"]}]},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]},
], ids=["match-labels", "not-in", "in-two-values"])
def test_matching_counts_pod_by_pod_equals_label_columns(monkeypatch, raw_selector):
    from kplan.api.label_selectors import parse_selector
    from kplan.plugins import pod_topology_spread as pts
    labels = [{"app": "web", "tier": "front"}, {"app": "web"}, {"app": "api", "tier": "back"}, {}, None,
              {"app": "web", "tier": "front", "x": "y"}]
    pods = [{**pod(f"w{k}", node_name=["n-a", "n-b", "big"][k % 3]),
             "metadata": {"name": f"w{k}", "namespace": "default", "labels": labels[k % len(labels)]}}
            for k in range(24)]
    selector = parse_selector(raw_selector, "test")
    incoming = Pod(pod("x", labels={"app": "web"}))
    counts = {}
    for share in (0, 10**9):
        monkeypatch.setattr(pts, "SMALL_NAMESPACE_SHARE", share)
        counts[share] = pts.matching_counts(incoming, selector, cluster(nodes(), pods)).counts.tolist()
    assert counts[0] == counts[10**9] and sum(counts[0]) > 0


def test_dropping_full_nodes_keeps_the_normalized_scores_right(monkeypatch):
    """Nodes fill up and leave the candidates one by one. Where a node held a normalized plugin's
    lowest or highest raw score alone, the normalization changes and the base is rebuilt; otherwise
    the node is just dropped. Either way every cycle's totals are the full path's."""
    from kplan.framework.replicas import ReplicaScheduler

    def taints(k):
        return [{"key": f"k{j}", "value": "v", "effect": "PreferNoSchedule"} for j in range(k)]

    def mixed_nodes():
        # Untolerated PreferNoSchedule taints 0..2 and a preferred label on some: several nodes
        # share each raw score, and one node alone has two taints.
        return [node("a", cpu="1", taints=taints(1)), node("b", cpu="1", taints=taints(1), labels={"disk": "ssd"}),
                node("c", cpu="2", labels={"disk": "ssd"}), node("d", cpu="2"), node("e", cpu="1", taints=taints(2)),
                node("f", cpu="3", labels={"disk": "ssd"}), node("g", cpu="1")]

    prefer = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 7, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}}
    outcomes = []
    drop = ReplicaScheduler._drop_from_base
    monkeypatch.setattr(ReplicaScheduler, "_drop_from_base",
                        lambda self, t, i: outcomes.append(drop(self, t, i)) or outcomes[-1])
    fw = Framework(default_profile(), REGISTRY)
    full, fast = cluster(mixed_nodes()), cluster(mixed_nodes())
    replicas = ReplicaScheduler(fw, fast)
    template = pod("r", requests={"cpu": "500m", "memory": "64Mi"}, spec=prefer)
    for k in range(24):
        raw = {**template, "metadata": {**template["metadata"], "name": f"r-{k}"}}
        a = fw.schedule(Pod(raw), full, assume=True)
        b = replicas.schedule(Pod(raw))
        assert a.outcome == b.outcome, k
        if a.outcome != SCHEDULED:
            break
        assert full.names[a.node] == fast.names[b.node], k
        assert b.candidates.tolist() == a.candidates.tolist() and b.total.tolist() == a.total.tolist(), k
    assert True in outcomes and False in outcomes  # both a plain drop and a rebuild happened


def test_replica_scheduler_without_the_row_filters_equals_full_path():
    # A profile without NodeResourcesFit's and NodePorts' Filter still scores by them: the replica
    # scheduler re-scores the row of each placement with no filter row to reuse. Nothing bounds the
    # count, so all 60 replicas land, as the full path places them.
    from kplan.framework.config import load_config
    from kplan.framework.replicas import ReplicaScheduler
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "default-scheduler", "plugins": {"filter": {"disabled": [
               {"name": "NodeResourcesFit"}, {"name": "NodePorts"}]}}}]}
    fw = Framework(load_config(doc, "c.yaml")[0], REGISTRY, with_owner())
    full, fast = cluster(nodes()), cluster(nodes())
    replicas = ReplicaScheduler(fw, fast)
    replicas.LEVELS_AFTER = 1000
    template = pod("r", requests={"cpu": "500m", "memory": "256Mi"})
    seq_full, seq_fast = [], []
    for k in range(60):
        raw = {**template, "metadata": {**template["metadata"], "name": f"r-{k}"}}
        a = fw.schedule(Pod(raw), full, assume=True)
        b = replicas.schedule(Pod(raw))
        seq_full.append(full.names[a.node] if a.outcome == SCHEDULED else None)
        seq_fast.append(fast.names[b.node] if b.outcome == SCHEDULED else None)
    assert None not in seq_full and seq_fast == seq_full
