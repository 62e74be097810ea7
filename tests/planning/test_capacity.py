"""`kplan capacity` (run_capacity) on clusters where the answer is worked out by hand; the victims memo
against fresh dry runs."""
from builders import node, pod
from kplan.api.objects import Pod
from kplan.planning.check import run_capacity as simulate_capacity
from kplan.planning.place import Planner
from kplan.report.check import capacity_report
from kplan.sources.snapshot import Snapshot

ZONE = "topology.kubernetes.io/zone"


def run_capacity(*args, **kwargs):
    """The CapacityReport of a count, as `kplan capacity -o json` writes it."""
    return capacity_report(simulate_capacity(*args, **kwargs))


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


def random_cluster(seed: int) -> list[dict]:
    """Nodes of 4 to 8 cpu with pods of mixed priorities, start times and apps (some Ready), host ports, a
    tainted node, PDBs with one and with no disruption left, and a pending pod nominated to a node."""
    import random
    from builders import container, pdb, ready
    rnd = random.Random(seed)
    docs = [node(f"n{k:02d}", cpu=str(rnd.choice([4, 6, 8])), memory="16Gi",
                 taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}] if k == 3 else None)
            for k in range(10)]
    for j in range(45):
        app = rnd.choice("abc")
        ports = [{"containerPort": 80, "hostPort": 8080}] if rnd.random() < 0.1 else None
        p = pod(f"p{j:02d}", node_name=f"n{rnd.randrange(10):02d}", labels={"app": app},
                containers=[container(requests={"cpu": rnd.choice(["250m", "500m", "1"]), "memory": "512Mi"},
                                      ports=ports)],
                spec={"priority": rnd.choice([0, 10, 100, 1000])})
        p["status"]["startTime"] = f"2026-01-01T{rnd.randrange(10, 20)}:00:00Z"
        docs.append(ready(p) if rnd.random() < 0.7 else p)
    docs.append(pdb("a", match_labels={"app": "a"}, max_unavailable=2, status={"disruptionsAllowed": 2}))
    docs.append(pdb("b", match_labels={"app": "b"}, min_available=1, status={"disruptionsAllowed": 0}))
    waiting = pod("waiting", requests={"cpu": "1"}, spec={"priority": 500})
    waiting["status"]["nominatedNodeName"] = "n05"
    return [*docs, waiting]


def test_victims_memo_answers_as_a_fresh_dry_run(monkeypatch):
    # DefaultPreemption reuses each node's SelectVictimsOnNode answer for the next replica of the template
    # while nothing it reads changed. The same runs with every node asked afresh must give the same
    # reports, and the memo must have spared some of the work.
    import kplan.plugins.default_preemption as dp
    from kplan.framework.preemption import VictimsMemo
    template = Pod(pod("rep", requests={"cpu": "1", "memory": "256Mi"}, spec={"priority": 200}))

    def run(docs, fresh: bool):
        asked = []
        with monkeypatch.context() as m:
            m.setattr(dp, "default_victims", lambda *args: asked.append(1) or real(*args))
            if fresh:
                m.setattr(VictimsMemo, "get", lambda self, i, key: None)
            report = run_capacity(planner(docs[:10], docs[10:]), template, max_replicas=80, allow_preemption=True)
        return report, len(asked)

    real = dp.default_victims
    for seed in range(4):
        docs = random_cluster(seed)
        (with_memo, memo_asked), (fresh, fresh_asked) = run(docs, False), run(docs, True)
        assert with_memo == fresh, seed
        assert with_memo["preemptingReplicas"] >= 3 and memo_asked < fresh_asked, seed


def test_victims_of_a_replica_that_reserve_refuses_on_its_nominated_node_are_still_listed():
    # node-a (1 cpu) runs low (1 cpu, priority 0, Ready) under a PDB allowing 1 disruption. The first replica
    # (1 cpu, priority 100) preempts low; a Reserve plugin then refuses it on node-a: the replica is
    # unschedulable and the count stops at 0, but low is gone, and the PDB has spent its disruption.
    from builders import pdb, ready
    from kplan.framework.config import load_config
    from kplan.framework.runtime import Framework
    from kplan.framework.status import Code, Status
    from kplan.plugins.registry import REGISTRY

    class Refuses:
        name = "Refuses"

        def reserve(self, state, pod, cluster, node):
            return Status(Code.UNSCHEDULABLE, ("no room at the inn",))

        def unreserve(self, state, pod, cluster, node):
            pass
    p = planner([node("node-a", cpu="1")],
                [ready(pod("low", node_name="node-a", requests={"cpu": "1"}, labels={"app": "low"})),
                 pdb("low", match_labels={"app": "low"}, max_unavailable=1, status={"disruptionsAllowed": 1})])
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "default-scheduler",
                         "plugins": {"reserve": {"enabled": [{"name": "Refuses"}]}}}]}
    p.frameworks["default-scheduler"] = Framework(load_config(doc, "config.yaml")[0],
                                                  {**REGISTRY, "Refuses": lambda args, h: Refuses()}, p.handle)
    report = run_capacity(p, Pod(pod("rep", requests={"cpu": "1"}, spec={"priority": 100})), allow_preemption=True)
    assert report["replicas"] == 0 and report["stopOutcome"] == "Unschedulable"
    assert report["stopReason"] == "0/1 nodes are available: 1 no room at the inn."
    assert [(e["pod"], e["node"], e["preemptor"]) for e in report["victims"]["evicted"]] == [
        ("default/low", "node-a", "default/rep-1")]
    assert p.cluster.pods_by_node[0] == [] and [b.disruptions_allowed for b in p.handle.pdbs] == [0]
