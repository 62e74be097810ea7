"""ElasticQuota bounds and usage, ported from scheduler-plugins pkg/capacityscheduling:
elasticquota_test.go (TestReserveResource, TestUnReserveResource, TestUsedOverMinWith,
TestUsedOverMaxWith, TestUsedOverMin, TestNewElasticQuotaInfo) and capacity_scheduling_test.go
(TestAddElasticQuota, TestAddPod, TestDeletePod)."""
import pytest
from builders import pod

from kplan.api.elastic_quota import (
    UPPER_BOUND_OF_MAX, QuotaInfo, QuotaInfos, as_resource, build_infos, load_quotas, parse_elastic_quota,
    quota_request,
)
from kplan.api.objects import Pod
from kplan.errors import InputError
from kplan.sources.snapshot import Snapshot

GPU = "nvidia.com/gpu"


def res(cpu=0, mem=0, eph=0, gpu=None):
    out = as_resource({"cpu": cpu, "memory": mem, "ephemeral-storage": eph})
    if gpu is not None:
        out[GPU] = gpu
    return out


def make_pod(name, ns, mem, cpu, gpu, node_name="node-a"):
    return Pod(pod(name, ns, node_name=node_name,
                   requests={"memory": str(mem), "cpu": f"{cpu}m", GPU: str(gpu)}, spec={"priority": 100}))


PODS = [make_pod("t1-p1", "ns1", 50, 1000, 1), make_pod("t1-p2", "ns2", 100, 2000, 0), make_pod("t1-p3", "ns2", 0, 0, 2)]


def test_reserve_resource():
    info = QuotaInfo("ns1", None, None, res(1000, 200, gpu=2))
    for p in PODS:
        for r, v in quota_request(p).items():
            info.used[r] = info.used.get(r, 0) + v
    assert info.used == res(4000, 350, gpu=5)


def test_unreserve_resource():
    info = QuotaInfo("ns1", None, None, res(4000, 200, gpu=5))
    for p in PODS:
        for r, v in quota_request(p).items():
            info.used[r] = info.used.get(r, 0) - v
    assert info.used == res(1000, 50, gpu=2)


OVER_MIN_WITH = [
    ("Sum Of PodRequest And Used Is Bigger Than Min", res(4000, 200, gpu=5), res(3000, 100, gpu=5), res(1500, 100), True),
    ("Sum Of PodRequest And Used Is Not Bigger Than Min", res(300, 100, gpu=5), res(4000, 200, gpu=5), res(100, 50), False),
    ("ElasticQuotaInfo Doesn't Have Max", res(3900, 100, gpu=5), None, res(100, 100), True),
    ("Used And Min Don't Have GPU Value", res(10, 10), res(3000, 100), res(10, 10, gpu=5), True),
    ("EphemeralStorage", res(10, 10, 10), res(3000, 100, 100), res(10, 10, 10), False),
]


@pytest.mark.parametrize("used,lo,req,want", [c[1:] for c in OVER_MIN_WITH], ids=[c[0] for c in OVER_MIN_WITH])
def test_used_over_min_with(used, lo, req, want):
    assert QuotaInfo("ns1", lo, None, used).used_over_min_with(req) is want


OVER_MAX_WITH = [
    ("Sum Of PodRequest And Used Is Bigger Than Max", res(4000, 200, gpu=5), res(4000, 200, gpu=5), res(100, 100), True),
    ("Sum Of PodRequest And Used Is Not Bigger Than Max", res(3900, 100, gpu=5), res(4000, 200, gpu=5), res(100, 100), False),
    ("ElasticQuotaInfo Doesn't Have Max", res(3900, 100, gpu=5), None, res(100, 100), False),
    ("Used And Max Don't Have GPU Value", res(10, 10), res(3000, 100), res(10, 10, gpu=5), False),
    ("EphemeralStorage", res(10, 10, 10), res(3000, 100, 100), res(10, 10, 100), True),
]


@pytest.mark.parametrize("used,hi,req,want", [c[1:] for c in OVER_MAX_WITH], ids=[c[0] for c in OVER_MAX_WITH])
def test_used_over_max_with(used, hi, req, want):
    assert QuotaInfo("ns1", None, hi, used).used_over_max_with(req) is want


OVER_MIN = [
    ("Used Is Bigger Than Min", res(4000, 200, gpu=5), res(3000, 300, gpu=5), True),
    ("Used Is Not Bigger Than Min", res(300, 100, gpu=5), res(4000, 200, gpu=5), False),
    ("ElasticQuotaInfo Doesn't Have Min", res(3900, 100, gpu=5), None, True),
    ("Used Has GPU But Min Doesn't Have GPU", res(300, 100, gpu=5), res(4000, 200), True),
    ("EphemeralStorage", res(300, 100, 100), res(4000, 200, 10), True),
]


@pytest.mark.parametrize("used,lo,want", [c[1:] for c in OVER_MIN], ids=[c[0] for c in OVER_MIN])
def test_used_over_min(used, lo, want):
    assert QuotaInfo("ns1", lo, None, used).used_over_min() is want


def eq_raw(ns="ns1", mx=None, mn=None, group="scheduling.sigs.k8s.io/v1alpha1"):
    spec = {}
    if mx is not None:
        spec["max"] = mx
    if mn is not None:
        spec["min"] = mn
    return {"apiVersion": group, "kind": "ElasticQuota", "metadata": {"name": "t1-eq1", "namespace": ns}, "spec": spec}


def rl(cpu, mem):
    """makeResourceList: cpu in milli-units, memory in bytes."""
    return {"cpu": f"{cpu}m", "memory": str(mem)}


MAX = UPPER_BOUND_OF_MAX
NEW_INFO = [
    # TestNewElasticQuotaInfo / TestAddElasticQuota: (max, min) -> (Max, Min) as framework.Resource
    ("ElasticQuota", rl(100, 1000), rl(10, 100), res(100, 1000), res(10, 100)),
    ("ElasticQuota Without Max", None, rl(10, 100), res(MAX, MAX, MAX), res(10, 100)),
    ("ElasticQuota Without Min", rl(100, 1000), None, res(100, 1000), res(0, 0, 0)),
    ("ElasticQuota Without Max and Min", None, None, res(MAX, MAX, MAX), res(0, 0, 0)),
]


@pytest.mark.parametrize("mx,mn,want_max,want_min", [c[1:] for c in NEW_INFO], ids=[c[0] for c in NEW_INFO])
def test_new_elastic_quota_info(mx, mn, want_max, want_min):
    info = QuotaInfo.of(parse_elastic_quota(eq_raw(mx=mx, mn=mn)))
    assert (info.max, info.min, info.used, info.pods) == (want_max, want_min, res(), set())


def test_add_pod():
    """TestAddPod: three pods of 50 memory and 10m cpu each."""
    infos = build_infos(load_quotas([eq_raw(mx=rl(100, 1000), mn=rl(10, 100))])[0],
                        [make_pod(f"t1-p{k}", "ns1", 50, 10, 0) for k in (1, 2, 3)])
    assert infos["ns1"].used == res(30, 150, gpu=0)
    assert infos["ns1"].pods == {"uid-ns1-t1-p1", "uid-ns1-t1-p2", "uid-ns1-t1-p3"}


@pytest.mark.parametrize("deleted,want_used,want_pods", [
    (("t1-p1", "t1-p2"), res(0, 0, gpu=0), set()),
    (("t1-p1",), res(30, 100, gpu=0), {"uid-ns1-t1-p2"}),
], ids=["Delete All Pods", "Delete one Pod"])
def test_delete_pod(deleted, want_used, want_pods):
    """TestDeletePod: 100 memory and 30m cpu per pod."""
    pods = {name: make_pod(name, "ns1", 100, 30, 0) for name in ("t1-p1", "t1-p2")}
    infos = build_infos(load_quotas([eq_raw(mx=rl(100, 1000), mn=rl(10, 100))])[0], pods.values())
    for name in deleted:
        infos["ns1"].remove_pod(pods[name])
    assert (infos["ns1"].used, infos["ns1"].pods) == (want_used, want_pods)


def test_aggregated_used_over_min_with():
    infos = QuotaInfos({"a": QuotaInfo("a", res(mem=1000), res(mem=2000), res(mem=1800)),
                        "b": QuotaInfo("b", res(mem=1000), res(mem=2000), res(mem=200))})
    assert infos.aggregated_used_over_min_with(res(mem=1)) is True
    assert infos.aggregated_used_over_min_with(res(mem=0)) is False


# -- parsing ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("group", ["scheduling.x-k8s.io/v1alpha1", "scheduling.sigs.k8s.io/v1alpha1"])
def test_both_api_groups_are_loaded(group):
    snap = Snapshot()
    snap.add(eq_raw(mx={"cpu": "2"}, group=group), "eq.yaml", 1)
    (quota,) = load_quotas(snap.objects["ElasticQuota"])[0].values()
    assert quota.max["cpu"] == 2000 and quota.api_version == group


def test_a_max_that_omits_memory_bounds_it_at_zero():
    quota = parse_elastic_quota(eq_raw(mx={"cpu": "2"}, mn={"cpu": "1", GPU: "1"}))
    assert quota.max == {"cpu": 2000, "memory": 0, "ephemeral-storage": 0, "pods": 0}
    assert quota.min == {"cpu": 1000, "memory": 0, "ephemeral-storage": 0, "pods": 0, GPU: 1}
    info = QuotaInfo.of(quota)
    assert info.used_over_max_with(res(mem=1)) is True  # any memory request is over a max of 0
    assert info.used_over_max_with(res(cpu=500, gpu=4)) is False  # a scalar max not listed is unlimited
    assert quota.surprises() == ["spec.max omits memory, ephemeral-storage: upstream bounds them at 0, "
                                 "so any pod requesting them is rejected"]


def test_first_quota_of_a_namespace_wins():
    first, second = eq_raw(mx={"cpu": "1"}), eq_raw(mx={"cpu": "9"})
    second["metadata"]["name"] = "second"
    quotas, ignored = load_quotas([first, second])
    assert quotas["ns1"].max["cpu"] == 1000 and [q.name for q in ignored] == ["second"]


def test_invalid_quantity_is_an_input_error():
    with pytest.raises(InputError, match="invalid quantity"):
        parse_elastic_quota(eq_raw(mx={"cpu": "two"}))


def test_quota_request_takes_init_containers_as_a_floor_and_adds_overhead():
    raw = pod("p", "ns1", containers=[{"name": "a", "resources": {"requests": {"cpu": "2", "memory": "1G"}}},
                                      {"name": "b", "resources": {"requests": {"cpu": "1", "memory": "1G"}}}],
              init_containers=[{"name": "i1", "resources": {"requests": {"cpu": "2", "memory": "1G"}}},
                               {"name": "i2", "resources": {"requests": {"cpu": "2", "memory": "3G"}}}],
              spec={"overhead": {"cpu": "100m"}})
    assert quota_request(Pod(raw)) == res(3100, 3 * 10**9)  # the example of computePodResourceRequest
