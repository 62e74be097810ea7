"""`kplan capacity` (run_capacity) on clusters where the answer is worked out by hand."""
from builders import node, pod
from kplan.api.objects import Pod
from kplan.planning.check import run_capacity
from kplan.planning.place import Planner
from kplan.sources.snapshot import Snapshot

ZONE = "topology.kubernetes.io/zone"


def planner(nodes, pods=()):
    s = Snapshot()
    for obj in [*nodes, *pods]:
        s.add(obj, "test", 1)
    return Planner(s.finish())


def test_three_nodes_of_four_cpus():
    # n1: 4 CPU, 1 used   -> 3 free -> 3 one-CPU replicas
    # n2: 4 CPU, 2.5 used -> 1.5 free -> 1 replica
    # n3: 4 CPU, 0 used   -> 4 free -> 4 replicas
    # 8 in all; zone-a (n1, n2) 3 + 1 = 4, zone-b (n3) 4. Memory (100Mi each) and pods (110) never bind.
    # The ninth replica finds no node with a free CPU: "3 Insufficient cpu"; preemption finds nothing
    # to evict (every pod has priority 0, as the replica).
    p = planner([node("n1", cpu="4", labels={ZONE: "zone-a"}), node("n2", cpu="4", labels={ZONE: "zone-a"}),
                 node("n3", cpu="4", labels={ZONE: "zone-b"})],
                [pod("used1", node_name="n1", requests={"cpu": "1"}),
                 pod("used2", node_name="n2", requests={"cpu": "2500m"})])
    report = run_capacity(p, Pod(pod("rep", requests={"cpu": "1", "memory": "100Mi"})))
    assert report["kind"] == "CapacityReport" and report["apiVersion"] == "kplan/v1alpha1"
    assert report["replicas"] == 8
    assert report["perNode"] == {"n1": 3, "n2": 1, "n3": 4}
    assert report["perZone"] == {"zone-a": 4, "zone-b": 4}
    assert report["stopReason"].startswith("0/3 nodes are available: 3 Insufficient cpu.")
    assert report["stopOutcome"] == "Unschedulable"


def test_max_stops_early():
    p = planner([node("n1", cpu="4")])
    report = run_capacity(p, Pod(pod("rep", requests={"cpu": "1"})), max_replicas=2)
    assert report["replicas"] == 2 and report["stopReason"] == "reached --max 2" and report["perZone"] == {"<none>": 2}


def test_preemption_does_not_count_as_fitting():
    # One 2-CPU node with a 1-CPU priority-0 pod: the first priority-100 replica fits in the free CPU;
    # the second fits only by evicting the low-priority pod, which stops the count at 1.
    p = planner([node("n1", cpu="2")], [pod("low", node_name="n1", requests={"cpu": "1"})])
    report = run_capacity(p, Pod(pod("rep", requests={"cpu": "1"}, spec={"priority": 100})))
    assert report["replicas"] == 1 and report["stopOutcome"] == "NeedsPreemption"
    assert "preemption does not count as fitting" in report["stopReason"]
    assert [x.name for x in p.cluster.pods_by_node[0]] == ["low", "rep-1"]  # nothing was evicted
