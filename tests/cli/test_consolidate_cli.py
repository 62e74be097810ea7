"""`kplan consolidate` through the real entry point, on clusters whose plans are worked out by hand.

Utilization is requested over allocatable (cpu and memory, the higher counts); candidates are the
nodes under the threshold, visited least utilized first; a node's pods go through
cluster-autoscaler's drainability rules, then move with the scheduling cycle (kube-scheduler's
default profile: the least allocated node wins), the node leaving the table once they all fit.
"""
import json
from functools import partial

import yaml

from builders import node, pdb, pod, ready
from run_kplan import run_kplan

kplan = partial(run_kplan, columns=200)
SAMPLE = "samples/consolidate/cluster.yaml"


def write(tmp_path, *objects):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def plan(*args):
    code, out, err = kplan("consolidate", *args, "-o", "json")
    assert code == 0, err
    return json.loads(out)


def blockers(report):
    return {e["node"]: [(b["reason"], b["pod"]) for b in e["blockers"]] for e in report["blocked"]}


def test_exactly_two_of_five_nodes_can_go():
    # node-e (10% cpu), node-c (15%), node-d (20%) are under 50%; node-a and node-b at 65% are not.
    # node-e is visited first and blocked: batch/report has no controller. node-c's cache-0 moves to the
    # least allocated node, node-e (its 400m of 4 cpu against node-a/b's 2600m), and node-c leaves;
    # node-d's worker goes to node-e too. The DaemonSet pods go with their nodes, blocking nothing.
    report = plan("-f", SAMPLE)
    assert report["kind"] == "ConsolidationReport" and report["rules"] == "cluster-autoscaler 1.34"
    assert report["summary"] == {"nodes": 5, "selected": 5, "candidates": 3, "visited": 3, "removable": 2,
                                 "blocked": 1, "notVisited": 0, "podsMoved": 2}
    assert [(e["order"], e["node"], e["zone"], e["pool"]) for e in report["removable"]] == [
        (1, "node-c", "zone-c", "general"), (2, "node-d", "zone-a", "general")]
    assert [e["moves"] for e in report["removable"]] == [
        [{"pod": "shop/cache-0", "to": "node-e", "again": False}],
        [{"pod": "shop/worker-6f7c9-d1", "to": "node-e", "again": False}]]
    assert report["removable"][0]["leaving"] == [{"pod": "kube-system/log-agent-c", "rule": "DaemonSet"}]
    assert report["removable"][0]["utilization"] == {"cpu": 0.15, "memory": 0.0703}  # 600m/4, 1152Mi/16Gi
    (blocked,) = report["blocked"]
    assert blocked["node"] == "node-e" and blocked["blockers"] == [{
        "pod": "batch/report", "rule": "Replicated", "reason": "NotReplicated",
        "message": "batch/report is not replicated",
        "source": "cluster-autoscaler 1.34 simulator/drainability/rules/replicated"}]
    assert report["saved"] == {"nodes": 2, "cpu": "8", "memory": "32Gi",
                               "perZone": {"zone-a": {"nodes": 1, "cpu": "4", "memory": "16Gi"},
                                           "zone-c": {"nodes": 1, "cpu": "4", "memory": "16Gi"}},
                               "perPool": {"general": {"nodes": 2, "cpu": "8", "memory": "32Gi"}}}
    # cpu 7000m of 20 before, 6800m of 12 after (node-c's and node-d's DaemonSet pods left with them);
    # memory 21120Mi of 80Gi before, 20864Mi of 48Gi after.
    assert report["ratios"] == {"before": {"cpu": 0.35, "memory": 0.2578},
                                "after": {"cpu": 0.5667, "memory": 0.4245}}


def test_table_names_the_plan_and_exits_0():
    code, out, err = kplan("consolidate", "-f", SAMPLE)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == ("2 of 5 node(s) can go; 3 candidate(s) under 50% of allocatable, 3 visited least "
                        "utilized first: 2 removable, 1 blocked")
    assert any(line.split() == ["1", "node-c", "zone-c", "general", "15%", "7%", "1", "node-e"] for line in lines)
    assert any(line.split()[:4] == ["node-e", "10%", "7%", "NotReplicated"] for line in lines)
    assert "Requested / allocatable: cpu 35% → 57%, memory 26% → 42%" in lines
    code, wide, _ = kplan("consolidate", "-f", SAMPLE, "-o", "wide")
    assert any(line.split() == ["shop/cache-0", "node-c", "node-e"] for line in wide.splitlines())


def every_blocker_cluster():
    """Two busy sinks (2500m of 4 cpu requested: 62%) and nine candidates, each with one 100m pod that
    meets one blocker, or annotated on the node."""
    rs = {"owner_kind": "ReplicaSet"}

    def one(host, name, namespace="shop", **kw):
        args = {**rs, **kw}
        return ready(pod(name, namespace, node_name=host, requests={"cpu": "100m"}, labels={"app": name}, **args))

    nodes = [node("sink-1", labels={"disk": "hdd"}), node("sink-2", labels={"disk": "hdd"})]
    pods = [ready(pod(f"big-{k}", "shop", node_name=f"sink-{k}", requests={"cpu": "2500m"}, **rs)) for k in (1, 2)]
    blocked_pods = {
        "n-annotated": one("n-annotated", "careful", annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}),
        "n-karpenter": one("n-karpenter", "pinned", annotations={"karpenter.sh/do-not-disrupt": "true"}),
        "n-solo": one("n-solo", "solo", owner_kind=""),
        "n-system": one("n-system", "dns", namespace="kube-system"),
        "n-local": one("n-local", "scratch", spec={"volumes": [{"name": "tmp", "emptyDir": {}}]}),
        "n-budget": one("n-budget", "db"),
        # Only its own node is labelled disk=ssd: it fits nowhere else.
        "n-ssd": one("n-ssd", "ssd-only", spec={"nodeSelector": {"disk": "ssd"}}),
    }
    for name in blocked_pods:
        nodes.append(node(name, labels={"disk": "ssd"} if name == "n-ssd" else {"disk": "hdd"}))
    nodes.append(node("n-disabled", annotations={"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}))
    nodes.append(node("n-karpenter-node", annotations={"karpenter.sh/do-not-disrupt": "true"}))
    budget = pdb("db", "shop", match_labels={"app": "db"}, min_available=1,
                 status={"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1})
    return [*nodes, *pods, *blocked_pods.values(), budget]


def test_one_node_blocked_by_each_blocker_kind(tmp_path):
    report = plan("-f", write(tmp_path, *every_blocker_cluster()))
    assert report["summary"]["removable"] == 0 and report["summary"]["blocked"] == 9
    assert blockers(report) == {
        "n-annotated": [("NotSafeToEvictAnnotation", "shop/careful")],
        "n-karpenter": [("DoNotDisrupt", "shop/pinned")],
        "n-solo": [("NotReplicated", "shop/solo")],
        "n-system": [("UnmovableKubeSystemPod", "kube-system/dns")],
        "n-local": [("LocalStorageRequested", "shop/scratch")],
        "n-budget": [("NotEnoughPdb", "shop/db")],
        "n-ssd": [("NoPlaceToMovePods", "shop/ssd-only")],
        "n-disabled": [("ScaleDownDisabledAnnotation", None)],
        "n-karpenter-node": [("DoNotDisrupt", None)]}
    by_node = {e["node"]: e["blockers"][0] for e in report["blocked"]}
    assert by_node["n-annotated"]["message"] == "pod annotated as not safe to evict present: careful"
    assert by_node["n-system"]["message"] == ("non-daemonset, non-mirrored, non-pdb-assigned kube-system pod "
                                              "present: dns")
    assert by_node["n-local"]["message"] == "pod with local storage present: scratch"
    assert by_node["n-budget"]["message"] == "not enough pod disruption budget to move shop/db"
    assert by_node["n-budget"]["pdb"] == "shop/db"
    assert by_node["n-budget"]["source"] == "cluster-autoscaler 1.34 simulator/drainability/rules/pdb"
    # The pod that fits nowhere: its own node carries the ToBeDeletedByClusterAutoscaler taint while its
    # pods move, the ten others lack disk=ssd; no preemption helps on any of them (DynamicResources, a
    # PostFilter of the default profile since 1.34, answers first that it has no claim to deallocate).
    ssd = by_node["n-ssd"]
    assert ssd["message"] == ("0/11 nodes are available: 1 node(s) had untolerated taint(s), 10 node(s) didn't "
                              "match Pod's node affinity/selector. no new claims to deallocate, preemption: 0/11 "
                              "nodes are available: 11 Preemption is not helpful for scheduling.")
    assert ssd["source"] == "cluster-autoscaler 1.34 simulator/cluster.go (findPlaceFor)"
    # Over the nodes that stay (n-ssd left out) no node is labelled disk=ssd.
    assert ssd["hints"][0] == "no node is labelled disk=ssd, which the pod's nodeSelector asks for"
    assert ssd["nearest"] and all(n["plugin"] == "NodeAffinity" and n["node"] != "n-ssd" for n in ssd["nearest"])
    assert ssd["podsNotTried"] == 0


def test_a_budget_shared_by_two_candidates_lets_only_one_go(tmp_path):
    # db-1 on p1 (500m of 4: 12.5%) and db-2 on p2 (600m + a 100m DaemonSet pod: 17.5%) share a PDB of
    # maxUnavailable 1 without status: the disruption controller would allow 2 healthy - (2 - 1) = 1.
    # p1 goes first: db-1 moves to the sink (p2 holds its 2 allowed pods) and spends the disruption;
    # p2's db-2 then finds none left. The DaemonSet pod on p2 blocks nothing.
    db = {"owner_kind": "ReplicaSet", "labels": {"app": "db"}}
    objects = [node("sink", cpu="8", memory="32Gi"), node("p1"), node("p2", pods=2),
               ready(pod("filler", "shop", node_name="sink", requests={"cpu": "5", "memory": "20Gi"},
                         owner_kind="ReplicaSet")),
               ready(pod("db-1", "shop", node_name="p1", requests={"cpu": "500m"}, **db)),
               ready(pod("db-2", "shop", node_name="p2", requests={"cpu": "600m"}, **db)),
               ready(pod("agent", "kube-system", node_name="p2", requests={"cpu": "100m"}, owner_kind="DaemonSet")),
               pdb("db", "shop", match_labels={"app": "db"}, max_unavailable=1)]
    report = plan("-f", write(tmp_path, *objects))
    assert [(e["node"], e["moves"]) for e in report["removable"]] == [
        ("p1", [{"pod": "shop/db-1", "to": "sink", "again": False}])]
    assert blockers(report) == {"p2": [("NotEnoughPdb", "shop/db-2")]}
    assert report["blocked"][0]["blockers"][0]["pdb"] == "shop/db"


def moving_again(big_free_cpu):
    """m1 and m2 each run a 1-cpu pod (25% of 4); `big` has 4 cpu with 4 - big_free_cpu requested (over 50%).
    m1 goes first (ties by name): its pod a goes to the least allocated node, m2 (1 cpu used against big's
    more), so m2 holds b and a when its turn comes; both must move again, b first (pods in node order)."""
    rs = {"owner_kind": "ReplicaSet"}
    return [node("big"), node("m1"), node("m2"),
            ready(pod("filler", "shop", node_name="big", requests={"cpu": f"{4 - big_free_cpu}"}, **rs)),
            ready(pod("a", "shop", node_name="m1", requests={"cpu": "1"}, **rs)),
            ready(pod("b", "shop", node_name="m2", requests={"cpu": "1"}, **rs))]


def test_a_pod_moved_onto_a_later_candidate_moves_again(tmp_path):
    # big has 2.5 cpu free: b and then a (again) fit there, so m1 and m2 both go; 2 nodes saved, not more.
    report = plan("-f", write(tmp_path, *moving_again(2.5)))
    assert [(e["node"], e["moves"]) for e in report["removable"]] == [
        ("m1", [{"pod": "shop/a", "to": "m2", "again": False}]),
        ("m2", [{"pod": "shop/b", "to": "big", "again": False}, {"pod": "shop/a", "to": "big", "again": True}])]
    assert report["saved"]["nodes"] == 2 and report["saved"]["cpu"] == "8" and report["summary"]["podsMoved"] == 3


def test_a_later_candidate_holding_a_moved_pod_is_blocked_when_it_cannot_move_again(tmp_path):
    # big has 1.5 cpu free: b fits there, then a (moved from m1) fits nowhere: m1 is gone, m2 carries the
    # ToBeDeletedByClusterAutoscaler taint, big has 500m left. m2 stays; only m1 is saved.
    report = plan("-f", write(tmp_path, *moving_again(1.5)))
    assert [e["node"] for e in report["removable"]] == ["m1"]
    (entry,) = report["blocked"]
    (blocker,) = entry["blockers"]
    assert entry["node"] == "m2" and (blocker["reason"], blocker["pod"]) == ("NoPlaceToMovePods", "shop/a")
    assert blocker["message"] == ("0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated "
                                  "taint(s). no new claims to deallocate, preemption: 0/2 nodes are available: 1 No "
                                  "preemption victims found for incoming pod, 1 Preemption is not helpful for "
                                  "scheduling.")
    # After: big (filler 2.5) and m2 (b and a back on it, 2 cpu) are left: 4.5 of 8 cpu.
    assert report["saved"]["nodes"] == 1 and report["ratios"]["after"]["cpu"] == 0.5625


def test_max_nodes_and_the_selector_limit_the_plan(tmp_path):
    report = plan("-f", SAMPLE, "--max-nodes", "1")
    assert [e["node"] for e in report["removable"]] == ["node-c"]
    assert report["summary"]["visited"] == 2 and report["summary"]["notVisited"] == 1
    report = plan("-f", SAMPLE, "-l", "topology.kubernetes.io/zone=zone-a")
    assert report["summary"]["selected"] == 2 and report["summary"]["candidates"] == 1
    assert [e["node"] for e in report["removable"]] == ["node-d"] and report["blocked"] == []
    # A threshold of 15% leaves node-e (10%) alone: node-c sits at 15%, which is not under it.
    report = plan("-f", SAMPLE, "--threshold", "0.15")
    assert report["summary"]["candidates"] == 1 and blockers(report) == {"node-e": [("NotReplicated", "batch/report")]}


def test_gpu_nodes_are_candidates_by_their_gpus(tmp_path):
    # g-busy: 4 of 4 GPUs requested (100%) though only 10% of its cpu: not a candidate. g-idle: 1 of 4 GPUs.
    gpu = {"nvidia.com/gpu": "4"}
    objects = [node("big", cpu="16", memory="64Gi"), node("g-busy", extra=gpu), node("g-idle", extra=gpu),
               ready(pod("filler", "shop", node_name="big", requests={"cpu": "12"}, owner_kind="ReplicaSet")),
               ready(pod("train", "shop", node_name="g-busy", requests={"cpu": "400m", "nvidia.com/gpu": "4"},
                         owner_kind="Job")),
               ready(pod("infer", "shop", node_name="g-idle", requests={"cpu": "3", "nvidia.com/gpu": "1"},
                         owner_kind="ReplicaSet"))]
    report = plan("-f", write(tmp_path, *objects))
    assert report["summary"]["candidates"] == 1
    (entry,) = report["blocked"]  # infer's GPU fits nowhere else
    assert entry["node"] == "g-idle" and entry["utilization"] == {"cpu": 0.75, "memory": 0.0, "nvidia.com/gpu": 0.25}


def test_html_page_and_bad_input(tmp_path):
    page = tmp_path / "plan.html"
    code, _, err = kplan("consolidate", "-f", SAMPLE, "--html", str(page))
    assert code == 0, err
    html = page.read_text()
    assert "2 of 5 nodes can go" in html and "batch/report is not replicated" in html
    assert html.count('id="node-') == 2  # a details block per removable node
    for args, message in [(["--threshold", "1.5"], "--threshold 1.5"), (["--max-nodes", "0"], "--max-nodes 0"),
                          (["-l", "zone in (a"], "zone in (a")]:
        code, _, err = kplan("consolidate", "-f", SAMPLE, *args)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (args, err)


def test_pods_deleted_longer_ago_than_their_grace_period_do_not_count(tmp_path):
    # t1 runs `old` (3 cpu, deleted at midnight, default grace 30s) and `new` (500m). At 00:05 `old` is
    # 30s past its grace period and 30s more: it no longer counts (500m of 4: 12.5%, a candidate), and as
    # a long-terminating pod it moves without a blocker. At 00:00:40 it still counts: 87.5%, no candidate.
    old = ready(pod("old", "shop", node_name="t1", requests={"cpu": "3"}, owner_kind=""))
    old["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    objects = [node("sink", cpu="16"), node("t1"), old,
               ready(pod("filler", "shop", node_name="sink", requests={"cpu": "10"}, owner_kind="ReplicaSet")),
               ready(pod("new", "shop", node_name="t1", requests={"cpu": "500m"}, owner_kind="ReplicaSet"))]
    cluster = write(tmp_path, *objects)
    report = plan("-f", cluster, "--now", "2026-01-01T00:05:00Z")
    (entry,) = report["removable"]
    assert entry["node"] == "t1" and entry["utilization"]["cpu"] == 0.125
    assert {m["pod"] for m in entry["moves"]} == {"shop/old", "shop/new"}
    assert plan("-f", cluster, "--now", "2026-01-01T00:00:40Z")["summary"]["candidates"] == 0


def test_pods_with_volumes_move_where_their_volumes_can_follow():
    # samples/storage: db-0 (node-b2) and db-1 (node-c2) use zonal EBS volumes of zone-b and zone-c; the
    # bare web pods block their nodes. At a 90% threshold every node is a candidate; at 25% cpu the b and
    # c nodes come first, by name: node-b1 (blocked), node-b2 (db-0 can only go to node-b1, the other
    # zone-b node), node-c1 (blocked), node-c2 (db-1 to node-c1, on a table without node-b2, whose
    # volume state must follow the rows that are left).
    report = plan("-f", "samples/storage/cluster.yaml", "--threshold", "0.9")
    assert [(e["node"], e["moves"]) for e in report["removable"]] == [
        ("node-b2", [{"pod": "shop/db-0", "to": "node-b1", "again": False}]),
        ("node-c2", [{"pod": "shop/db-1", "to": "node-c1", "again": False}])]
    assert [e["node"] for e in report["blocked"]] == ["node-b1", "node-c1", "node-a1", "node-a2"]
