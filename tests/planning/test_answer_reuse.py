"""Equal replicas meeting an unchanged table get the answer the previous one got, computed once.

The reuse must never show: `kplan check` and `kplan capacity` print the same bytes with it and
without it, over random clusters and workloads (seeded), with and without preemption applied.
"""
import json
import random

import pytest
from typer.testing import CliRunner

from builders import container, node, pod
from kplan.api.objects import Node, Pod
from kplan.cli.app import app
from kplan.cluster.state import ClusterState
from kplan.framework.config import default_profile
from kplan.framework.interfaces import Handle
from kplan.framework.replicas import ReplicaScheduler
from kplan.framework.runtime import Framework, UNSCHEDULABLE
from kplan.plugins.registry import REGISTRY

ZONES = ("zone-a", "zone-b", "zone-c")
PRIORITY_CLASSES = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                     "value": 1000},
                    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"},
                     "value": 10}]


def random_cluster(rng: random.Random) -> list[dict]:
    nodes = [node(f"n{k}", cpu=rng.choice(("2", "4", "8")), memory=rng.choice(("4Gi", "8Gi")),
                  labels={"topology.kubernetes.io/zone": ZONES[k % 3]}) for k in range(rng.randint(3, 8))]
    pods = []
    for k in range(rng.randint(5, 30)):
        target = rng.choice(nodes)["metadata"]["name"]
        spec = {"priorityClassName": rng.choice(("low", "high")), "priority": 0}
        spec["priority"] = 1000 if spec["priorityClassName"] == "high" else 10
        pods.append(pod(f"run-{k}", "apps", node_name=target, labels={"app": rng.choice(("web", "db", "batch"))},
                        requests={"cpu": rng.choice(("250m", "500m", "1")), "memory": "512Mi"}, spec=spec))
    return [*PRIORITY_CLASSES, *nodes, *pods]


def random_deployment(rng: random.Random, k: int) -> dict:
    spec: dict = {"containers": [container(requests={"cpu": rng.choice(("500m", "1", "2", "3")),
                                                     "memory": rng.choice(("256Mi", "1Gi"))})],
                  "priorityClassName": rng.choice(("low", "high"))}
    labels = {"app": rng.choice(("web", "db", "burst"))}
    if rng.random() < 0.4:
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                              "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": {"matchLabels": labels}}]
    if rng.random() < 0.3:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": labels}}]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"d{k}", "namespace": "apps"},
            "spec": {"replicas": rng.randint(2, 25), "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


def run(args: list[str], reuse: bool, monkeypatch) -> str:
    monkeypatch.setattr(ReplicaScheduler, "reuse_answers", reuse)
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 1), result.output
    return result.stdout


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("preemption", [False, True])
def test_check_prints_the_same_bytes_with_and_without_reuse(tmp_path, monkeypatch, seed, preemption):
    rng = random.Random(seed)
    dump, manifest = tmp_path / "cluster.json", tmp_path / "deploy.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": random_cluster(rng)}))
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                    "items": [random_deployment(rng, k) for k in range(rng.randint(1, 3))]}))
    args = ["check", str(manifest), "-f", str(dump), "-o", "json", *(["--allow-preemption"] if preemption else [])]
    reused, fresh = run(args, True, monkeypatch), run(args, False, monkeypatch)
    assert reused == fresh
    assert json.loads(fresh)["summary"]["pods"] > 0


@pytest.mark.parametrize("seed", range(6))
def test_capacity_prints_the_same_bytes_with_and_without_reuse(tmp_path, monkeypatch, seed):
    rng = random.Random(100 + seed)
    dump, manifest = tmp_path / "cluster.json", tmp_path / "pod.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": random_cluster(rng)}))
    template = random_deployment(rng, 0)["spec"]["template"]
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "Pod",
                                    "metadata": {"name": "one", "namespace": "apps", **template["metadata"]},
                                    "spec": template["spec"]}))
    args = ["capacity", str(manifest), "-f", str(dump), "-o", "json"]
    assert run(args, True, monkeypatch) == run(args, False, monkeypatch)


def overfull() -> tuple[ClusterState, Framework, dict]:
    """One node of 3 CPUs running a 2-CPU pod, and a template asking for 2 CPUs: nothing fits."""
    running = Pod(pod("running", node_name="n1", requests={"cpu": "2"}))
    cluster = ClusterState([Node(node("n1", cpu="3"))], [running])
    fw = Framework(default_profile(), REGISTRY, Handle())
    template = pod("replica", requests={"cpu": "2"})
    return cluster, fw, template


def replica(template: dict, k: int) -> Pod:
    return Pod({**template, "metadata": {**template["metadata"], "name": f"replica-{k}"}})


def test_an_equal_replica_on_an_unchanged_table_runs_no_cycle(monkeypatch):
    cluster, fw, template = overfull()
    replicas = ReplicaScheduler(fw, cluster)
    cycles = []
    real = Framework.schedule
    monkeypatch.setattr(Framework, "schedule", lambda self, *a, **k: cycles.append(a[0].name) or real(self, *a, **k))
    shared_spec = template["spec"]
    results = [replicas.schedule(Pod({**template, "metadata": {**template["metadata"], "name": f"r{k}"},
                                      "spec": shared_spec})) for k in range(3)]
    assert cycles == ["r0"]
    assert [r.outcome for r in results] == [UNSCHEDULABLE] * 3
    assert [r.pod.name for r in results] == ["r0", "r1", "r2"]  # each answer names its own pod
    assert len({r.message for r in results}) == 1


@pytest.mark.parametrize("spread", [False, True], ids=["row-local", "spread"])
def test_a_preemption_dry_run_without_candidates_is_run_once(monkeypatch, spread):
    """A 3-CPU replica of priority 1000 on a 4-CPU node running a 1-CPU pod of priority 10 and a 2-CPU
    pod of priority 1000: the dry run takes the low pod off, 2 CPUs are free, the replica still does
    not fit: no candidate. The dry run puts the node back as it was, so the next replica meets the
    same table and gets the same answer without a cycle. With a zone spread constraint, the dry run
    goes pod by pod through the table (PodTopologySpread counts other nodes' pods); without, it
    works on a copy of the row."""
    low = Pod(pod("low", node_name="n1", requests={"cpu": "1"}))
    high = Pod(pod("high", node_name="n1", requests={"cpu": "2"}))
    low.priority, high.priority = 10, 1000
    cluster = ClusterState([Node(node("n1", cpu="4", labels={"topology.kubernetes.io/zone": "a"}))], [low, high])
    replicas = ReplicaScheduler(Framework(default_profile(), REGISTRY, Handle()), cluster)
    cycles = []
    real = Framework.schedule
    monkeypatch.setattr(Framework, "schedule", lambda self, *a, **k: cycles.append(a[0].name) or real(self, *a, **k))
    template = pod("big", requests={"cpu": "3"}, labels={"app": "big"}, spec={"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "big"}}}]} if spread else None)
    results = []
    for k in range(3):
        p = Pod({**template, "metadata": {**template["metadata"], "name": f"r{k}"}, "spec": template["spec"]})
        p.priority = 1000
        results.append(replicas.schedule(p))
    assert cycles == ["r0"]
    assert [r.outcome for r in results] == [UNSCHEDULABLE] * 3
    assert results[2].message == ("0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
                                  "preemption: 0/1 nodes are available: 1 Insufficient cpu.")
    assert [p.name for p in cluster.pods_by_node[0]] == ["low", "high"]


def test_a_changed_table_is_answered_afresh():
    cluster, fw, template = overfull()
    replicas = ReplicaScheduler(fw, cluster)
    spec = template["spec"]
    first = replicas.schedule(Pod({**template, "metadata": {**template["metadata"], "name": "r0"}, "spec": spec}))
    assert first.outcome == UNSCHEDULABLE
    running = cluster.pods_by_node[0][0]
    cluster.forget(running, 0)  # room for one replica now
    second = replicas.schedule(Pod({**template, "metadata": {**template["metadata"], "name": "r1"}, "spec": spec}))
    assert second.outcome == "Scheduled" and second.node == 0


def test_a_replica_of_another_template_is_answered_afresh(monkeypatch):
    cluster, fw, template = overfull()
    replicas = ReplicaScheduler(fw, cluster)
    replicas.schedule(replica(template, 0))
    smaller = pod("small", requests={"cpu": "1"})
    assert replicas.schedule(Pod(smaller)).outcome == "Scheduled"


def test_a_pod_with_claims_made_for_it_is_never_reused():
    cluster, fw, template = overfull()
    replicas = ReplicaScheduler(fw, cluster)
    spec = {**template["spec"], "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}]}
    assert replicas._answer_key(Pod({**template, "spec": spec}), False) is None
    assert replicas._answer_key(Pod(template), False) is not None


@pytest.mark.parametrize("change", ["assume", "forget", "set_taints"])
def test_every_change_to_the_table_moves_its_generation(change):
    running = Pod(pod("running", node_name="n1", requests={"cpu": "1"}))
    cluster = ClusterState([Node(node("n1"))], [running])
    before = cluster.generation
    if change == "assume":
        cluster.assume(Pod(pod("new", requests={"cpu": "1"})), 0)
    elif change == "forget":
        cluster.forget(running, 0)
    else:
        cluster.set_taints(0, ())
    assert cluster.generation > before
