"""`kplan capacity --allow-preemption` and `check --allow-preemption`'s victims, through the real entry point.

Every expectation is worked out by hand from DefaultPreemption's rules (victims: pods of lower priority;
reprieve from the most important down, PDB violators first; pickOneNodeForPreemption: fewest PDB
violations, then lowest highest-victim priority, ..., ties to the first node by name) and from
CapacityScheduling's quota rules.
"""
import json
from functools import partial

import yaml

from builders import container, node, pdb, pod, ready
from run_kplan import run_kplan

kplan = partial(run_kplan, columns=200)


def write(tmp_path, name, *docs) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def replica(name="rep", namespace="default", priority=100, **requests):
    return pod(name, namespace, requests=requests or {"cpu": "1", "memory": "100Mi"}, spec={"priority": priority})


# n1 (4 cpu): low-a (1 cpu, 1Gi) and low-b (1 cpu, 512Mi), priority 0; n2 (4 cpu): high (3 cpu), priority 1000.
# Replicas of 1 cpu at priority 100: 2 fit in n1's free room and 1 in n2's (3 free). The 4th fits nowhere;
# preemption finds victims on n1 only (high outranks the replica, and the replicas do not outrank each
# other): with low-a and low-b removed it fits, low-a is reprieved first (equal priority, first in the
# node's list) and still fits beside the 3 cpu, low-b does not: low-b goes. The 5th evicts low-a. The 6th
# finds no lower-priority pod anywhere: unschedulable.
TWO_NODES = (node("n1", cpu="4", memory="8Gi"), node("n2", cpu="4", memory="8Gi"),
             pod("low-a", node_name="n1", requests={"cpu": "1", "memory": "1Gi"}, spec={"priority": 0}),
             pod("low-b", node_name="n1", requests={"cpu": "1", "memory": "512Mi"}, spec={"priority": 0}),
             pod("high", node_name="n2", requests={"cpu": "3", "memory": "1Gi"}, spec={"priority": 1000}))


def test_three_fit_free_and_two_more_by_evicting_priority_0_pods(tmp_path):
    cluster = write(tmp_path, "cluster.yaml", *TWO_NODES)
    rep = write(tmp_path, "rep.yaml", replica())
    code, out, _ = kplan("capacity", rep, "-f", cluster, "--allow-preemption", "-o", "json")
    report = json.loads(out)
    assert code == 0
    assert (report["replicas"], report["replicasFree"], report["replicasByPreemption"]) == (5, 3, 2)
    assert report["preemptingReplicas"] == 2 and report["allowPreemption"] is True
    assert report["perNode"] == {"n1": 4, "n2": 1}
    assert report["stopOutcome"] == "Unschedulable"
    assert report["stopReason"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert ("preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
            in report["stopReason"])
    victims = report["victims"]
    assert victims["pods"] == 2 and victims["cpu"] == "2" and victims["memory"] == "1536Mi"
    assert victims["perPriority"] == [{"priority": 0, "priorityClassName": "", "pods": 2, "cpu": "2",
                                       "memory": "1536Mi"}]
    assert victims["perNamespace"] == [{"namespace": "default", "pods": 2, "cpu": "2", "memory": "1536Mi"}]
    assert victims["evicted"] == [
        {"pod": "default/low-b", "node": "n1", "priority": 0, "priorityClassName": "", "cpu": "1", "memory": "512Mi",
         "preemptor": "default/rep-4"},
        {"pod": "default/low-a", "node": "n1", "priority": 0, "priorityClassName": "", "cpu": "1", "memory": "1Gi",
         "preemptor": "default/rep-5"}]
    assert report["withPreemption"] is None


def test_a_higher_priority_pod_is_never_evicted(tmp_path):
    # The run goes until nothing is left to preempt: the priority-1000 pod on n2 is still there, and the
    # replicas never preempt each other (equal priority).
    cluster = write(tmp_path, "cluster.yaml", *TWO_NODES)
    rep = write(tmp_path, "rep.yaml", replica())
    _, out, _ = kplan("capacity", rep, "-f", cluster, "--allow-preemption", "-o", "json")
    evicted = [e["pod"] for e in json.loads(out)["victims"]["evicted"]]
    assert "default/high" not in evicted and not any(p.startswith("default/rep-") for p in evicted)


def test_table_gives_both_counts_and_the_victims_wide_lists_them(tmp_path):
    cluster = write(tmp_path, "cluster.yaml", *TWO_NODES)
    rep = write(tmp_path, "rep.yaml", replica())
    code, out, _ = kplan("capacity", rep, "-f", cluster, "--allow-preemption")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "5 more replica(s) of default/rep fit: 3 in free room, 2 only by preempting"
    assert "Evicted: 2 pod(s) (priority 0: 2) holding 2 cpu, 1.5Gi memory" in lines
    assert "Evicted pods are not placed again: their controllers would recreate them, pending." in lines
    assert ["0", "<none>", "2", "2", "1.5Gi"] in [ln.split() for ln in lines]  # the per-priority row
    assert "default/low-b" not in out  # the pods by name: wide and JSON only
    _, wide, _ = kplan("capacity", rep, "-f", cluster, "--allow-preemption", "-o", "wide")
    rows = [ln.split() for ln in wide.splitlines()]
    # One unit per column: the memory column reaches 1Gi, so 512Mi reads 0.5Gi.
    assert ["default/low-b", "n1", "0", "1", "0.5Gi", "default/rep-4"] in rows
    assert ["default/low-a", "n1", "0", "1", "1Gi", "default/rep-5"] in rows


def test_without_the_flag_the_count_stops_and_says_preemption_would_add_at_least_one(tmp_path):
    cluster = write(tmp_path, "cluster.yaml", *TWO_NODES)
    rep = write(tmp_path, "rep.yaml", replica())
    code, out, _ = kplan("capacity", rep, "-f", cluster, "-o", "json")
    report = json.loads(out)
    assert code == 0 and report["replicas"] == 3 and report["stopOutcome"] == "NeedsPreemption"
    assert (report["replicasFree"], report["replicasByPreemption"], report["victims"]) == (3, 0, None)
    more = report["withPreemption"]
    assert (more["more"], more["exact"], more["replica"], more["node"]) == (1, False, "default/rep-4", "n1")
    assert [e["pod"] for e in more["victims"]["evicted"]] == ["default/low-b"]
    _, table, _ = kplan("capacity", rep, "-f", cluster)
    assert ("With preemption, at least 1 more would fit: default/rep-4 would evict on n1 1 pod(s) (priority 0: 1) "
            "holding 1 cpu, 512Mi memory; --allow-preemption counts them all.") in table.splitlines()


def test_without_the_flag_the_count_is_exact_when_the_next_replica_is_the_last_asked_for(tmp_path):
    cluster = write(tmp_path, "cluster.yaml", *TWO_NODES)
    rep = write(tmp_path, "rep.yaml", replica())
    code, out, _ = kplan("capacity", rep, "-f", cluster, "--replicas", "4", "-o", "json")
    report = json.loads(out)
    assert code == 1 and report["replicas"] == 3
    assert (report["withPreemption"]["more"], report["withPreemption"]["exact"]) == (1, True)
    code, out, _ = kplan("capacity", rep, "-f", cluster, "--replicas", "4", "--allow-preemption", "-o", "json")
    assert code == 0 and json.loads(out)["replicas"] == 4


def test_no_more_with_preemption_when_the_stop_was_unschedulable(tmp_path):
    # Every pod already outranks the replica (priority 0): the 4th copy is unschedulable, preemption or not.
    cluster = write(tmp_path, "cluster.yaml", *TWO_NODES)
    rep = write(tmp_path, "rep.yaml", replica(priority=0))
    _, out, _ = kplan("capacity", rep, "-f", cluster, "-o", "json")
    report = json.loads(out)
    assert report["replicas"] == 3 and report["withPreemption"] == {"more": 0, "exact": True}
    _, out, _ = kplan("capacity", rep, "-f", cluster, "--allow-preemption", "-o", "json")
    report = json.loads(out)
    assert report["replicas"] == 3 and report["victims"]["pods"] == 0 and report["victims"]["evicted"] == []


# n1 and n2 (2 cpu each) each run one 1-cpu priority-0 pod; the replica (1 cpu, priority 100) fits once on
# each. The 3rd must preempt: both nodes are candidates with one priority-0 victim, equal in every criterion,
# so without a PDB the first by name, n1, is chosen. A PDB allowing no disruption of n1's pod makes n1's
# candidate violate it once: fewest violations first, so n2 is chosen. The 4th then has only n1 left and
# evicts the protected pod anyway (a PDB is a preference of preemption, not a bar).
def pdb_cluster(tmp_path, protected: bool) -> str:
    docs = [node("n1", cpu="2"), node("n2", cpu="2"),
            pod("guarded", node_name="n1", requests={"cpu": "1"}, labels={"app": "guarded"}, spec={"priority": 0}),
            pod("plain", node_name="n2", requests={"cpu": "1"}, spec={"priority": 0})]
    if protected:
        docs.append(pdb("guard", match_labels={"app": "guarded"}, min_available=1,
                        status={"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}))
    return write(tmp_path, "cluster.yaml", *docs)


def test_a_pdb_protecting_a_would_be_victim_changes_the_node_chosen(tmp_path):
    rep = write(tmp_path, "rep.yaml", replica(memory="10Mi", cpu="1"))
    _, out, _ = kplan("capacity", rep, "-f", pdb_cluster(tmp_path, protected=False), "--allow-preemption", "-o", "json")
    evicted = [(e["pod"], e["node"], e["preemptor"]) for e in json.loads(out)["victims"]["evicted"]]
    assert evicted == [("default/guarded", "n1", "default/rep-3"), ("default/plain", "n2", "default/rep-4")]
    _, out, _ = kplan("capacity", rep, "-f", pdb_cluster(tmp_path, protected=True), "--allow-preemption", "-o", "json")
    report = json.loads(out)
    evicted = [(e["pod"], e["node"], e["preemptor"]) for e in report["victims"]["evicted"]]
    assert evicted == [("default/plain", "n2", "default/rep-3"), ("default/guarded", "n1", "default/rep-4")]
    assert report["replicas"] == 4 and report["replicasFree"] == 2


# n1, n2, n3 (2 cpu each) each run one 1-cpu priority-0 pod: g1 (n1) and g2 (n2) under one PDB that allows
# one disruption, plain (n3) under none. The replica fits once per node; then each copy must preempt.
# The 4th: three candidates of one victim each, none violating (one disruption allowed): n1 by name, g1
# goes. If g1 was healthy (Ready), the disruption controller now counts one healthy pod less and the PDB
# allows no more: for the 5th, n2's candidate violates it, so n3 (plain) is chosen, and the 6th takes g2.
# A g1 that was not Ready counted for nothing: the PDB still allows one, and the 5th takes n2's g2 by name.
def spent_budget_cluster(tmp_path, healthy: bool) -> str:
    def guarded(name, on):
        p = pod(name, node_name=on, requests={"cpu": "1"}, labels={"app": "guarded"}, spec={"priority": 0})
        return ready(p) if healthy else p
    docs = [node("n1", cpu="2"), node("n2", cpu="2"), node("n3", cpu="2"), guarded("g1", "n1"), guarded("g2", "n2"),
            pod("plain", node_name="n3", requests={"cpu": "1"}, spec={"priority": 0}),
            pdb("guard", match_labels={"app": "guarded"}, max_unavailable=1,
                status={"disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2})]
    return write(tmp_path, "cluster.yaml", *docs)


def test_evictions_spend_the_pdb_and_later_preemptions_see_it(tmp_path):
    rep = write(tmp_path, "rep.yaml", replica(cpu="1"))
    _, out, _ = kplan("capacity", rep, "-f", spent_budget_cluster(tmp_path, healthy=True), "--allow-preemption",
                      "-o", "json")
    assert [e["node"] for e in json.loads(out)["victims"]["evicted"]] == ["n1", "n3", "n2"]
    _, out, _ = kplan("capacity", rep, "-f", spent_budget_cluster(tmp_path, healthy=False), "--allow-preemption",
                      "-o", "json")
    assert [e["node"] for e in json.loads(out)["victims"]["evicted"]] == ["n1", "n2", "n3"]


# CapacityScheduling (the profile of samples/quota/scheduler-config.yaml): team-a and team-b each have min 2,
# max 4 cpu on one 4-cpu node, where team-b runs three 1-cpu pods at priority 1000 (3 used: 1 borrowed).
# Replicas of a team-a pod (1 cpu, priority 0): the 1st fits in the free cpu (total used 4 = total min).
# The 2nd is rejected in PreFilter (total used would pass total min); team-a stays within its min (1 + 1
# <= 2), so it may evict pods of quotas over their min whatever their priority: team-b's least important
# pod (the latest started, b-3) goes, after which team-b is back at its min. The 3rd would take team-a over
# its min: only lower-priority pods of team-a may go, and there are none.
def quota_cluster(tmp_path) -> str:
    def quota(ns):
        return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "ElasticQuota",
                "metadata": {"name": f"{ns}-quota", "namespace": ns},
                "spec": {"min": {"cpu": "2"}, "max": {"cpu": "4"}}}

    def team_b(name, started):
        p = pod(name, "team-b", node_name="n1", requests={"cpu": "1"},
                spec={"priority": 1000, "schedulerName": "capacityscheduler"})
        p["status"]["startTime"] = started
        return p
    docs = [node("n1", cpu="4"), quota("team-a"), quota("team-b"), team_b("b-1", "2026-01-01T10:00:00Z"),
            team_b("b-2", "2026-01-01T10:01:00Z"), team_b("b-3", "2026-01-01T10:02:00Z")]
    return write(tmp_path, "cluster.yaml", *docs)


def test_capacity_scheduling_quota_rules_pick_the_victims(tmp_path):
    rep = write(tmp_path, "rep.yaml", pod("rep", "team-a", requests={"cpu": "1"},
                                          spec={"priority": 0, "schedulerName": "capacityscheduler"}))
    code, out, _ = kplan("capacity", rep, "-f", quota_cluster(tmp_path), "--allow-preemption", "-o", "json",
                         "--config", "samples/quota/scheduler-config.yaml")
    report = json.loads(out)
    assert code == 0 and (report["replicas"], report["replicasFree"], report["replicasByPreemption"]) == (2, 1, 1)
    assert [(e["pod"], e["priority"], e["preemptor"]) for e in report["victims"]["evicted"]] == [
        ("team-b/b-3", 1000, "team-a/rep-2")]
    assert report["stopOutcome"] == "Unschedulable"


def test_check_lists_victims_per_workload(tmp_path):
    # The Deployment's 3 replicas (1 cpu, priority 100) on TWO_NODES: 3 fit free; then the Job's 2 pods
    # (1 cpu, priority 100) preempt low-b and low-a on n1, as the capacity run's 4th and 5th copies do.
    cluster = write(tmp_path, "cluster.yaml", *TWO_NODES)

    def workload(kind, name, replicas):
        pod_spec = {"priority": 100, "containers": [container(requests={"cpu": "1"})]}
        spec = {"template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec}}
        if kind == "Deployment":
            spec.update(replicas=replicas, selector={"matchLabels": {"app": name}})
        else:
            spec.update(parallelism=replicas, completions=replicas)
            pod_spec["restartPolicy"] = "Never"
        return {"apiVersion": "apps/v1" if kind == "Deployment" else "batch/v1", "kind": kind,
                "metadata": {"name": name, "namespace": "default"}, "spec": spec}
    manifest = write(tmp_path, "apps.yaml", workload("Deployment", "web", 3), workload("Job", "batch", 2))
    code, out, _ = kplan("check", manifest, "-f", cluster, "--allow-preemption", "-o", "json")
    report = json.loads(out)
    assert code == 0 and report["summary"]["evicted"] == 2
    web, batch = report["workloads"]
    assert web["victims"]["pods"] == 0 and web["victims"]["evicted"] == []
    assert batch["needsPreemption"] == 2 and batch["victims"]["pods"] == 2
    assert [e["pod"] for e in batch["victims"]["evicted"]] == ["default/low-b", "default/low-a"]
    assert [p.get("victims") for p in report["placements"][3:]] == [["default/low-b"], ["default/low-a"]]
    assert "victims" not in report["placements"][0]
    _, table, _ = kplan("check", manifest, "-f", cluster, "--allow-preemption")
    assert "Job/default/batch evicts 2 pod(s) (priority 0: 2) holding 2 cpu, 1.5Gi memory" in table.splitlines()
    assert "default/low-b" not in table
    _, wide, _ = kplan("check", manifest, "-f", cluster, "--allow-preemption", "-o", "wide")
    evicting = [ln.strip() for ln in wide.splitlines() if ln.startswith("  evicts ")]
    assert [ln.rsplit(" for ", 1)[0] for ln in evicting] == ["evicts default/low-b on n1 (priority 0)",
                                                            "evicts default/low-a on n1 (priority 0)"]
    _, table, _ = kplan("check", manifest, "-f", cluster)
    assert "evicts" not in table
    code, out, _ = kplan("check", manifest, "-f", cluster, "-o", "json")
    report = json.loads(out)
    assert code == 1 and "evicted" not in report["summary"] and "victims" not in report["workloads"][1]


def test_the_checkout_sample(tmp_path):
    # samples/capacity, by hand. Free room: node-a 4 - 0.1 - 1.5 - 1 = 1.4 cpu, node-b 4 - 2 - 1 = 1,
    # node-c 4 - 3 = 1: 3 replicas (1 cpu, PriorityClass critical = 10000). Then, with victims of lower
    # priority than 10000 (never coredns-1 nor train-1):
    # 4th: node-a would evict etl-2 (etl-1 started first, is reprieved first and still fits), node-b
    #      web-1 (report-1, PDB-protected, is reprieved first): the lowest highest-victim priority wins,
    #      node-b (0 against 100);
    # 5th: node-a's etl-2 (no PDB violation) against node-b's report-1 (one): node-a;
    # 6th: node-a's etl-1 against node-b's report-1: node-a;
    # 7th: only node-b's report-1 is left; 8th: lands in the 1 cpu report-1 freed; 9th: nothing to evict.
    code, out, _ = kplan("capacity", "samples/capacity/checkout.yaml", "-f", "samples/capacity/cluster.yaml",
                         "--allow-preemption", "-o", "json")
    report = json.loads(out)
    assert code == 0
    assert (report["replicas"], report["replicasFree"], report["replicasByPreemption"],
            report["preemptingReplicas"]) == (8, 3, 5, 4)
    assert [(e["pod"], e["node"]) for e in report["victims"]["evicted"]] == [
        ("shop/web-1", "node-b"), ("batch/etl-2", "node-a"), ("batch/etl-1", "node-a"), ("batch/report-1", "node-b")]
    assert report["victims"]["perPriority"] == [
        {"priority": 0, "priorityClassName": "", "pods": 1, "cpu": "1", "memory": "1Gi"},
        {"priority": 100, "priorityClassName": "batch", "pods": 3, "cpu": "4500m", "memory": "10Gi"}]
    assert report["perNode"] == {"node-a": 3, "node-b": 4, "node-c": 1}
