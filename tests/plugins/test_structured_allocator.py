"""The structured allocator on one node: which devices a claim gets, in upstream's search order, and
the per-node counting path checked against the search on random clusters."""
import random

import numpy as np
import pytest

from builders import node
from dra_builders import claim, device, device_class, exact, first_available, gpus, resource_slice
from kplan.api.dra import DeviceObjects, parse
from kplan.api.objects import Node
from kplan.cluster.devices import DeviceState, claim_base_name
from kplan.cluster.state import ClusterState
from kplan.plugins.structured_allocator import AllocationError, Allocator, Features


def state(objects, nodes=("n1",)) -> DeviceState:
    dra = DeviceObjects()
    for obj in objects:
        dra.add(parse(obj["kind"], obj, "test"))
    cluster = ClusterState([Node(node(n)) for n in nodes], [])
    return DeviceState(dra, cluster)


def allocate(objects, *claims, features=Features(), node_index=0):
    devices = state([*objects, *claims])
    parsed = [devices.claims[("default", c["metadata"]["name"])] for c in claims]
    result = Allocator(parsed, devices, features).allocate(node_index)
    if result is None:
        return None
    return [[(r.request, r.device) for r in a.results] for a in result]


BASE = [device_class(), device_class("t4", 'device.attributes["gpu.example.com"].model == "t4"')]


def test_devices_are_taken_in_slice_order():
    objs = BASE + [resource_slice("n1", gpus(4))]
    assert allocate(objs, claim("c", exact(count=2))) == [[("gpu", "gpu-0"), ("gpu", "gpu-1")]]


def test_pools_in_driver_then_name_order():
    objs = BASE + [resource_slice("n1", [device("a")], driver="z.example.com", pool="p1", name="s1"),
                   resource_slice("n1", [device("b")], pool="p2", name="s2"),
                   resource_slice("n1", [device("c")], pool="p1", name="s3"),
                   device_class("any", "true")]
    assert allocate(objs, claim("c", exact(device_class_name="any", count=3))) == [
        [("gpu", "c"), ("gpu", "b"), ("gpu", "a")]]


def test_later_claims_of_the_pod_skip_devices_earlier_ones_took():
    objs = BASE + [resource_slice("n1", gpus(3))]
    assert allocate(objs, claim("a", exact(count=2)), claim("b", exact(count=1))) == [
        [("gpu", "gpu-0"), ("gpu", "gpu-1")], [("gpu", "gpu-2")]]
    assert allocate(objs, claim("a", exact(count=2)), claim("b", exact(count=2))) is None


def test_requests_search_back_for_an_assignment_that_works():
    # gpu-0 is a t4, gpu-1 an a100: a first request of any GPU takes gpu-0 first; the second request
    # wants a t4, so the search gives the first request gpu-1 instead.
    objs = BASE + [resource_slice("n1", [device("gpu-0", model="t4"), device("gpu-1", model="a100")])]
    got = allocate(objs, claim("c", exact("any"), exact("small", device_class_name="t4")))
    assert got == [[("any", "gpu-1"), ("small", "gpu-0")]]


def test_first_available_records_the_alternative_taken():
    objs = BASE + [resource_slice("n1", gpus(2, model="a100"))]
    got = allocate(objs, claim("c", first_available("gpu", ("t4", "t4", 1), ("any", "gpu.example.com", 2))))
    assert got == [[("gpu/any", "gpu-0"), ("gpu/any", "gpu-1")]]


def test_admin_access_may_use_held_devices_and_holds_none():
    objs = BASE + [resource_slice("n1", gpus(1))]
    devices = state([*objs, claim("c", exact(admin=True))])
    devices._allocated = {("gpu.example.com", "n1", "gpu-0"): 1}
    (allocated,) = Allocator([devices.claims[("default", "c")]], devices, Features()).allocate(0)
    assert allocated.results[0].admin_access is True
    with pytest.raises(AllocationError, match="admin access is requested, but the feature is disabled"):
        Allocator([devices.claims[("default", "c")]], devices, Features(admin_access=False)).allocate(0)


def test_too_many_devices_for_one_claim_is_an_error():
    objs = BASE + [resource_slice("n1", gpus(40))]
    with pytest.raises(AllocationError, match="number of requested devices 33 exceeds the claim limit of 32"):
        allocate(objs, claim("c", exact(count=33)))


def test_incomplete_pool_gives_no_device_and_fails_all_mode():
    objs = BASE + [resource_slice("n1", gpus(2), count=2)]
    assert allocate(objs, claim("c", exact(count=1))) is None
    with pytest.raises(AllocationError, match="resource pool gpu.example.com/n1 is currently being updated"):
        allocate(objs, claim("c", exact(mode="All")))


def test_newer_generation_replaces_the_pool():
    objs = BASE + [resource_slice("n1", gpus(1), name="old"),
                   resource_slice("n1", [device("fresh")], name="new", generation=2)]
    assert allocate(objs, claim("c", exact())) == [[("gpu", "fresh")]]


def test_duplicate_device_names_make_the_pool_invalid():
    objs = BASE + [resource_slice("n1", gpus(1), name="a", count=2), resource_slice("n1", gpus(1), name="b", count=2)]
    with pytest.raises(AllocationError, match="pool n1 is invalid: duplicate device name gpu-0"):
        allocate(objs, claim("c", exact()))


def test_node_selector_of_the_allocation():
    shared = resource_slice("", gpus(1), pool="net", nodeSelector={"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]})
    devices = state(BASE + [shared, claim("c", exact())])
    (allocated,) = Allocator([devices.claims[("default", "c")]], devices, Features()).allocate(0)
    assert allocated.node_selector == ({"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                                              "values": ["n1"]}]},)
    local = state(BASE + [resource_slice("n1", gpus(1)), claim("c", exact())])
    (allocated,) = Allocator([local.claims[("default", "c")]], local, Features()).allocate(0)
    assert allocated.node_selector == ({"matchFields": [{"key": "metadata.name", "operator": "In",
                                                         "values": ["n1"]}]},)


def test_device_taints_count_from_1_36():
    tainted = device("gpu-0")
    tainted["taints"] = [{"key": "broken", "effect": "NoSchedule"}]
    objs = BASE + [resource_slice("n1", [tainted])]
    assert allocate(objs, claim("c", exact())) == [[("gpu", "gpu-0")]]
    assert allocate(objs, claim("c", exact()), features=Features(device_taints=True)) is None
    tolerant = exact()
    tolerant["exactly"]["tolerations"] = [{"key": "broken", "operator": "Exists"}]
    assert allocate(objs, claim("c", tolerant), features=Features(device_taints=True)) == [[("gpu", "gpu-0")]]


def test_device_allowing_multiple_allocations_goes_to_one_claim_with_consumable_capacity_off():
    # DRAConsumableCapacity is off in every release kplan answers for: the allocator that runs then
    # hands such a device out once, as any other.
    shared = device("gpu-0")
    shared["allowMultipleAllocations"] = True
    objs = BASE + [resource_slice("n1", [shared])]
    assert allocate(objs, claim("a", exact())) == [[("gpu", "gpu-0")]]
    assert allocate(objs, claim("a", exact()), claim("b", exact())) is None


def test_claim_base_name_is_cut_in_proportion():
    assert claim_base_name("web-0", "gpu") == "web-0-gpu-"
    long = claim_base_name("p" * 60, "c" * 20)
    assert long == "p" * (60 * 57 // 82) + "-" + "c" * (20 * 57 // 82) and len(long) <= 57


@pytest.mark.parametrize("seed", range(40))
def test_counting_per_node_agrees_with_the_search(seed):
    """The numpy path (exact counts, no constraints, disjoint classes) against the search on every node."""
    rng = random.Random(seed)
    models = ["t4", "a100", "h100"]
    objs = [device_class(), *(device_class(m, f'device.attributes["gpu.example.com"].model == "{m}"')
                              for m in models)]
    nodes = [f"n{k}" for k in range(6)]
    held = []
    for name in nodes:
        size = rng.randint(0, 5)
        if size:
            objs.append(resource_slice(name, [device(f"gpu-{k}", model=rng.choice(models)) for k in range(size)]))
            held += [(name, f"gpu-{k}") for k in range(size) if rng.random() < 0.3]
    picks = rng.sample(models, rng.randint(1, 2))
    claims = [claim(f"c{k}", exact(f"r{k}", m, rng.randint(1, 3))) for k, m in enumerate(picks)]
    devices = state([*objs, *claims], nodes)
    devices._allocated = {("gpu.example.com", n, d): 1 for n, d in held}
    parsed = [devices.claims[("default", c["metadata"]["name"])] for c in claims]
    allocator = Allocator(parsed, devices, Features())
    counted, errors = allocator.feasible()
    assert allocator._counted() is not None and not errors
    searched = np.array([Allocator(parsed, devices, Features()).allocate(i) is not None for i in range(len(nodes))])
    assert counted.tolist() == searched.tolist()
