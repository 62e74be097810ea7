"""CapacityScheduling, ported from scheduler-plugins pkg/capacityscheduling/capacity_scheduling_test.go.

Upstream builds ElasticQuotaInfos by hand with a `Used` that matches the pods it lists; kplan
derives `used` from the bound pods, so each case lists the pods behind the upstream numbers.
"""
import pytest
from builders import node, pod

from kplan.api.elastic_quota import QuotaInfo, QuotaInfos, as_resource, quota_request
from kplan.api.objects import Pod
from kplan.framework.config import default_profile
from kplan.framework.interfaces import CycleState, Handle
from kplan.framework.status import Code
from kplan.planning.place import Planner
from kplan.planning.quota import quota_profile
from kplan.plugins.capacity_scheduling import (
    PRE_FILTER_STATE_KEY, SNAPSHOT_KEY, CapacityScheduling, PreFilterState, QuotaSnapshot, signature,
)
from kplan.sources.snapshot import Snapshot

MID, HIGH = 100, 1000
GPU = "nvidia.com/gpu"


def eq(ns, mn=None, mx=None):
    spec = {}
    if mn is not None:
        spec["min"] = mn
    if mx is not None:
        spec["max"] = mx
    return {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
            "metadata": {"name": f"eq-{ns}", "namespace": ns}, "spec": spec}


def make_pod(name, ns, mem=0, cpu=0, gpu=0, priority=0, node_name="", **kw):
    """makePod of the upstream test: one container requesting memory (bytes), cpu (milli) and gpus."""
    raw = pod(name, ns, node_name=node_name,
              requests={"memory": str(mem), "cpu": f"{cpu}m", GPU: str(gpu)}, spec={"priority": priority}, **kw)
    return raw


def snapshot_of(nodes=(), pods=(), quotas=(), extra=()):
    snap = Snapshot()
    for obj in (*nodes, *pods, *quotas, *extra):
        snap.add(obj, "test", 1)
    return snap.finish()


def mem_node(name, mem="150"):
    """st.MakeNode().Capacity({memory: 150}): 32 pods, no cpu."""
    return node(name, cpu="0", memory=mem, pods=32)


def schedule(snap, raw_pod):
    profile = quota_profile()
    planner = Planner(snap, [profile], profile.scheduler_name)
    p = Pod(raw_pod)
    snap.resolve_priority(p)
    fw = planner.frameworks[profile.scheduler_name]
    return fw.schedule(p, planner.cluster, assume=False, apply_preemption=False)


# -- TestPreFilter ---------------------------------------------------------------------------------

PRE_FILTER = [
    ("pod subjects to ElasticQuota",
     [eq("ns1", {"memory": "1000"}, {"memory": "2000"})], [make_pod("used", "ns1", mem=300, node_name="n")],
     [("ns1-p1", "ns1", 500), ("ns1-p2", "ns1", 1800)], [Code.SUCCESS, Code.UNSCHEDULABLE]),
    ("the sum of used is bigger than the sum of min",
     [eq("ns1", {"memory": "1000"}, {"memory": "2000"}), eq("ns2", {"memory": "1000"}, {"memory": "2000"})],
     [make_pod("u1", "ns1", mem=1800, node_name="n"), make_pod("u2", "ns2", mem=200, node_name="n")],
     [("ns2-p1", "ns2", 500)], [Code.UNSCHEDULABLE]),
    ("without elasticQuotaInfo", [], [], [("ns2-p1", "ns2", 500)], [Code.SUCCESS]),
]


@pytest.mark.parametrize("quotas,bound,pods,codes", [c[1:] for c in PRE_FILTER], ids=[c[0] for c in PRE_FILTER])
def test_pre_filter(quotas, bound, pods, codes):
    snap = snapshot_of([node("n", memory="1Gi")], bound, quotas)
    planner = Planner(snap)
    plugin = CapacityScheduling(None, Handle(snapshot=snap))
    for (name, ns, mem), want in zip(pods, codes):
        status = plugin.pre_filter(CycleState(), Pod(make_pod(name, ns, mem=mem)), planner.cluster)
        assert (status.code if status else Code.SUCCESS) == want


def test_pre_filter_messages():
    snap = snapshot_of([node("n", memory="1Gi")],
                       [make_pod("u1", "ns1", mem=1800, node_name="n"), make_pod("u2", "ns2", mem=200, node_name="n")],
                       [eq("ns1", {"memory": "1000"}, {"memory": "2000"}), eq("ns2", {"memory": "1000"}, {"memory": "2000"})])
    planner = Planner(snap)
    plugin = CapacityScheduling(None, Handle(snapshot=snap))
    over_max = plugin.pre_filter(CycleState(), Pod(make_pod("p", "ns1", mem=500)), planner.cluster)
    assert over_max.reasons == ("Pod ns1/p is rejected in PreFilter because ElasticQuota ns1 is more than Max",)
    over_min = plugin.pre_filter(CycleState(), Pod(make_pod("q", "ns2", mem=500)), planner.cluster)
    assert over_min.reasons == ("Pod ns2/q is rejected in PreFilter because total ElasticQuota used is more than min",)


# -- TestPostFilter and TestDryRunPreemption --------------------------------------------------------

def in_namespace_pods(p2_priority=MID):
    return [make_pod("t1-p1", "ns1", mem=50, priority=MID, node_name="node-a"),
            make_pod("t1-p2", "ns2", mem=50, priority=p2_priority, node_name="node-a"),
            make_pod("t1-p3", "ns2", mem=50, priority=MID, node_name="node-a")]


POST_FILTER = [
    # name, quotas, existing pods, nominated node, victims on node-a
    ("in-namespace preemption",
     [eq("ns1", {"memory": "50"}, {"memory": "200"}), eq("ns2", {"memory": "200"}, {"memory": "200"})],
     in_namespace_pods(), "node-a", ["ns1/t1-p1"]),
    ("cross-namespace preemption",
     [eq("ns1", {"memory": "150"}, {"memory": "200"}), eq("ns2", {"memory": "50"}, {"memory": "200"})],
     in_namespace_pods(p2_priority=HIGH), "node-a", ["ns2/t1-p3"]),
    ("without elasticQuotas", [], in_namespace_pods(), "node-a", None),
]


@pytest.mark.parametrize("quotas,pods,nominated,victims", [c[1:] for c in POST_FILTER], ids=[c[0] for c in POST_FILTER])
def test_post_filter_and_dry_run_preemption(quotas, pods, nominated, victims):
    """TestPostFilter (nominated node) and TestDryRunPreemption (the candidate's victims)."""
    snap = snapshot_of([mem_node("node-a")], pods, quotas)
    result = schedule(snap, make_pod("t1-p", "ns1", mem=50, priority=HIGH))
    assert result.outcome == "NeedsPreemption"
    assert result.post_filter.status.code == Code.SUCCESS
    assert snap.nodes[result.node].name == nominated
    (candidate,) = result.post_filter.candidates
    assert candidate.name == "node-a"
    if victims is not None:
        assert sorted(v.key for v in candidate.victims) == victims
        assert candidate.pdb_violations == 0


def test_a_victim_that_fits_back_stays_one_while_the_quota_is_still_exceeded():
    # SelectVictimsOnNode's reprievePod: a victim added back that still leaves room on the node stays
    # a victim when the preemptor's quota would go over its max with it. ns1 (min 100, max 150) runs
    # keep (50, the more important) and go (50); the preemptor asks 100 (200 > 150: PreFilter
    # refuses, preemption runs). Both are removed; with keep back ns1 uses 150, not over max, and the
    # cluster's 150 is within the sum of min (ns2's 1000 too): keep is reprieved; with go back
    # too, 200 is over max: go stays a victim. node-a has room for all of them.
    quotas = [eq("ns1", {"memory": "100"}, {"memory": "150"}), eq("ns2", {"memory": "1000"}, {"memory": "1000"})]
    pods = [make_pod("keep", "ns1", mem=50, priority=MID + 1, node_name="node-a"),
            make_pod("go", "ns1", mem=50, priority=MID, node_name="node-a")]
    snap = snapshot_of([mem_node("node-a", mem="1000")], pods, quotas)
    result = schedule(snap, make_pod("p", "ns1", mem=100, priority=HIGH))
    assert result.outcome == "NeedsPreemption"
    (candidate,) = result.post_filter.candidates
    assert [v.key for v in candidate.victims] == ["ns1/go"]


def test_post_filter_keeps_the_cluster_unchanged():
    snap = snapshot_of([mem_node("node-a")], in_namespace_pods(),
                       [eq("ns1", {"memory": "50"}, {"memory": "200"}), eq("ns2", {"memory": "200"}, {"memory": "200"})])
    profile = quota_profile()
    planner = Planner(snap, [profile], profile.scheduler_name)
    before = ([p.key for p in planner.cluster.pods_by_node[0]], planner.cluster.requested.copy())
    planner.frameworks[profile.scheduler_name].schedule(Pod(make_pod("t1-p", "ns1", mem=50, priority=HIGH)),
                                                        planner.cluster, assume=False, apply_preemption=False)
    assert [p.key for p in planner.cluster.pods_by_node[0]] == before[0]
    assert (planner.cluster.requested == before[1]).all()


# -- TestPodEligibleToPreemptOthers ----------------------------------------------------------------

def info(ns, mx, mn, used):
    return QuotaInfo(ns, as_resource({"memory": mn}), as_resource({"memory": mx}), as_resource({"memory": used}))


TERMINATING = {"deletionTimestamp": "2026-01-01T00:00:00Z"}


def eligible_pod(name, ns="default", nominated="", policy=""):
    raw = pod(name, ns, requests={"memory": "0"}, spec={"priority": HIGH, **({"preemptionPolicy": policy} if policy else {})})
    if nominated:
        raw["status"]["nominatedNodeName"] = nominated
    return raw


def terminating_pod(name, ns):
    raw = pod(name, ns, node_name="node-a", spec={"priority": MID})
    raw["metadata"].update(TERMINATING)
    return raw


ELIGIBLE = [
    ("Pod with PreemptNever preemption policy", eligible_pod("t1-p1", policy="Never"),
     [make_pod("t1-p0", "ns1", mem=50, cpu=10, priority=MID, node_name="node-a")],
     Code.UNSCHEDULABLE_AND_UNRESOLVABLE, {"ns1": (150, 50, 0)}, False),
    ("Pod with unschedulableAndUnresolvable nominated node", eligible_pod("t1-p1", nominated="node-a"),
     [make_pod("t1-p0", "ns1", mem=50, cpu=10, priority=MID, node_name="node-a")],
     Code.UNSCHEDULABLE_AND_UNRESOLVABLE, {"ns1": (150, 50, 0)}, True),
    ("Pod with terminating pod in the same namespace", eligible_pod("t1-p1", "ns1", nominated="node-a"),
     [terminating_pod("t1-p0", "ns1")], Code.SUCCESS, {"ns1": (150, 50, 0)}, False),
    ("Pod with terminating pod in another namespace", eligible_pod("t1-p1", "ns1", nominated="node-a"),
     [terminating_pod("t1-p0", "ns2")], Code.SUCCESS, {"ns1": (150, 50, 0), "ns2": (150, 50, 100)}, False),
    ("Pod without elasticQuotas and terminating pod exists in the same namespace",
     eligible_pod("t1-p1", "ns1", nominated="node-a"), [terminating_pod("t1-p0", "ns2")], Code.SUCCESS, {}, False),
    ("Pod without ElasticQuotas and terminating pod exists in another namespace",
     eligible_pod("t1-p1", "ns1", nominated="node-a"), [terminating_pod("t1-p0", "ns2")], Code.SUCCESS,
     {"ns2": (150, 50, 100)}, True),
]


@pytest.mark.parametrize("raw,existing,nominated_code,quotas,want", [c[1:] for c in ELIGIBLE], ids=[c[0] for c in ELIGIBLE])
def test_pod_eligible_to_preempt_others(raw, existing, nominated_code, quotas, want):
    snap = snapshot_of([mem_node("node-a")], existing)
    planner = Planner(snap)
    plugin = CapacityScheduling(None, Handle(snapshot=snap))
    p = Pod(raw)
    req = quota_request(p)
    state = CycleState()
    state.write(PRE_FILTER_STATE_KEY, PreFilterState(req, req, req))
    state.write(SNAPSHOT_KEY, QuotaSnapshot(QuotaInfos({ns: info(ns, *v) for ns, v in quotas.items()})))
    code = nominated_code if p.raw["status"].get("nominatedNodeName") else None
    assert plugin.pod_eligible_to_preempt_others(state, p, planner.cluster, code)[0] is want


# -- TestReserve and TestUnreserve ------------------------------------------------------------------

def plugin_with(infos):
    """A plugin whose cache is the given ElasticQuotaInfos (as upstream's tests set elasticQuotaInfos)."""
    cluster = Planner(snapshot_of([mem_node("node-a")])).cluster
    plugin = CapacityScheduling(None, Handle())
    plugin._infos, plugin._synced = infos, signature(cluster)
    return plugin, cluster


def test_reserve():
    """TestReserve: a pod of a quota namespace is counted once; another namespace's pod changes nothing."""
    plugin, cluster = plugin_with(QuotaInfos({"ns1": info("ns1", 2000, 1000, 300)}))
    for raw in (make_pod("t1-p1", "ns1", mem=50, priority=MID, node_name="node-a"),
                make_pod("t1-p2", "ns2", mem=50, priority=MID, node_name="node-a")):
        p = Pod(raw)
        assert plugin.reserve(CycleState(), p, cluster, 0) is None
        cluster.assume(p, 0)
        assert plugin.infos(cluster)["ns1"].used["memory"] == 350
        assert plugin.infos(cluster)["ns1"].pods == {"uid-ns1-t1-p1"}


def test_unreserve():
    """TestUnreserve: only a pod the quota counts is taken off its usage."""
    plugin, cluster = plugin_with(QuotaInfos({"ns1": info("ns1", 2000, 1000, 300)}))
    plugin._infos["ns1"].pods = {"uid-ns1-t1-p3", "uid-ns1-t1-p4"}
    want = [(300, {"uid-ns1-t1-p3", "uid-ns1-t1-p4"}), (300, {"uid-ns1-t1-p3", "uid-ns1-t1-p4"}),
            (250, {"uid-ns1-t1-p4"})]
    for raw, (used, pods) in zip((make_pod("t1-p1", "ns1", mem=50, node_name="node-a"),
                                  make_pod("t1-p2", "ns2", mem=50, node_name="node-a"),
                                  make_pod("t1-p3", "ns1", mem=50, node_name="node-a")), want):
        plugin.unreserve(CycleState(), Pod(raw), cluster, 0)
        assert plugin.infos(cluster)["ns1"].used["memory"] == used and plugin.infos(cluster)["ns1"].pods == pods


def test_pods_placed_by_another_profile_count_in_the_quota():
    """Upstream's cache counts every assigned pod, whichever scheduler placed it."""
    snap = snapshot_of([node("n", memory="1Gi")], [], [eq("ns1", {"memory": "100"}, {"memory": "150"})])
    profile = quota_profile()
    planner = Planner(snap, [profile, default_profile()])
    capacity = planner.frameworks[profile.scheduler_name]
    first = Pod(make_pod("a", "ns1", mem=100))
    assert planner.frameworks["default-scheduler"].schedule(first, planner.cluster).outcome == "Scheduled"
    second = capacity.schedule(Pod(make_pod("b", "ns1", mem=100)), planner.cluster, assume=False)
    assert second.prefilter_status.reasons == ("Pod ns1/b is rejected in PreFilter because ElasticQuota ns1 is more than Max",)


def test_reserve_through_place_counts_later_pods():
    """Reserve as `kplan place` runs it: the second pod sees the first one's usage and hits max."""
    snap = snapshot_of([node("n", memory="1Gi")], [], [eq("ns1", {"memory": "100"}, {"memory": "150"})])
    profile = quota_profile()
    planner = Planner(snap, [profile], profile.scheduler_name)
    first = planner.place(Pod(make_pod("a", "ns1", mem=100)))
    second = planner.place(Pod(make_pod("b", "ns1", mem=100)))
    assert first.outcome == "Scheduled"
    assert second.outcome == "Unschedulable"
    assert second.prefilter_status.reasons == ("Pod ns1/b is rejected in PreFilter because ElasticQuota ns1 is more than Max",)
