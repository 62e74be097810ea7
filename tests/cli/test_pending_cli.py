"""`kplan pending` through the real entry point, on samples/pending/cluster.yaml.

The sample (1.34.1 kubelets, so kplan answers as 1.34.1): node-a has 1 CPU free, node-b 500m,
gpu-1 is free but tainted nvidia.com/gpu=present:NoSchedule. Pending: shop/api-7 (priority
1000, 1 CPU), batch/train-1 (6 CPU, 16Gi), shop/worker-3 (1 CPU, created after train-1),
batch/report-1 (gated) and batch/custom-1 (schedulerName volcano).

Expectations follow kube-scheduler: PrioritySort pops api-7 first (higher priority) and it takes
node-a's last CPU, so worker-3, popped later, finds no node; 1.34 reports a request above a node's
whole allocatable as UnschedulableAndUnresolvable, so train-1's preemption finds no candidate.
"""
import json

import pytest
import yaml

from test_place_cli import ROOT, kplan

SAMPLE = "samples/pending/cluster.yaml"
NOW = "2026-11-25T12:00:00Z"

WORKER_NOW = ("0/3 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, "
              "2 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: "
              "1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.")
TRAIN_NOW = ("0/3 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, "
             "2 Insufficient cpu, 2 Insufficient memory. no new claims to deallocate, preemption: "
             "0/3 nodes are available: 3 Preemption is not helpful for scheduling.")


def pending(*args, snapshot=SAMPLE):
    code, out, err = kplan("pending", "-f", snapshot, "--now", NOW, *args)
    return code, out, err


def report(*args, snapshot=SAMPLE):
    code, out, err = pending("-o", "json", *args, snapshot=snapshot)
    assert code in (0, 1), err
    return code, json.loads(out)


def by_pod(rep):
    return {p["pod"]: p for p in rep["pods"]}


def test_queue_order_decides_who_gets_the_last_free_cpu():
    code, rep = report("-A")
    assert code == 1  # some pod would not schedule
    assert [p["pod"] for p in rep["pods"]] == ["shop/api-7", "batch/train-1", "shop/worker-3", "batch/report-1"]
    pods = by_pod(rep)
    assert pods["shop/api-7"]["placement"]["outcome"] == "Scheduled"
    assert pods["shop/api-7"]["placement"]["node"] == "node-a"
    assert pods["shop/worker-3"]["placement"]["outcome"] == "Unschedulable"
    assert pods["shop/worker-3"]["placement"]["message"] == WORKER_NOW
    assert pods["batch/train-1"]["placement"]["message"] == TRAIN_NOW
    assert rep["summary"] == {"pending": 5, "scheduled": 1, "needsPreemption": 0, "unschedulable": 2, "gated": 1,
                              "otherScheduler": 1, "agreeWithRecorded": 1, "disagreeWithRecorded": 1}
    assert rep["kubeVersion"] == "1.34.1"


def test_independent_places_each_pod_alone():
    # Alone against the snapshot, worker-3 takes node-a's free CPU itself.
    code, rep = report("-A", "--independent")
    assert by_pod(rep)["shop/worker-3"]["placement"]["node"] == "node-a"
    assert by_pod(rep)["shop/worker-3"]["agreesWithRecorded"] is False


def test_recorded_message_agrees_or_says_why_not():
    pods = by_pod(report("-A")[1])
    worker, train = pods["shop/worker-3"], pods["batch/train-1"]
    assert worker["recorded"] == {"reason": "Unschedulable", "time": "2026-11-24T09:00:01Z", "message": WORKER_NOW}
    assert worker["agreesWithRecorded"] is True and worker["why"] == ""
    # train-1's message was recorded when the cluster had two nodes.
    assert train["agreesWithRecorded"] is False
    assert train["why"].startswith("the cluster changed since 2026-11-23T12:00:02Z")


def test_gated_pod_and_pod_for_another_scheduler():
    rep = report("-A")[1]
    gated = by_pod(rep)["batch/report-1"]
    assert gated["gated"] is True and gated["gates"] == ["example.com/quota-approved"]
    assert gated["placement"]["outcome"] == "SchedulingGated" and gated["placement"]["nodes"] == []
    assert rep["otherScheduler"] == [{"pod": "batch/custom-1", "schedulerName": "volcano"}]


def test_nearest_node_of_a_pod_blocked_by_a_taint_and_the_hint():
    train = by_pod(report("-A")[1])["batch/train-1"]
    first = train["nearest"][0]
    # gpu-1 has room (8 CPU, 32Gi): only the taint keeps train-1 off it.
    assert first["node"] == "gpu-1"
    assert [(lack["plugin"], lack["kind"]) for lack in first["lacks"]] == [("TaintToleration", "taint")]
    assert "nvidia.com/gpu=present:NoSchedule" in first["lacks"][0]["text"]
    assert "gpu-1 would fit if the pod tolerated nvidia.com/gpu=present:NoSchedule" in train["hints"]


def test_nearest_nodes_of_a_pod_short_of_cpu_give_the_shortfall():
    worker = by_pod(report("-A")[1])["shop/worker-3"]
    lacks = {near["node"]: near["lacks"] for near in worker["nearest"]}
    # node-b has 500m free of the 1 CPU asked: 500m short; node-a (after api-7) 1 CPU short. gpu-1
    # has the room and lacks only the toleration: nearest, as it has no shortfall at all.
    assert [lack["text"] for lack in lacks["node-b"]] == ["500m cpu short"]
    assert [lack["text"] for lack in lacks["node-a"]] == ["1 cpu short"]
    assert [near["node"] for near in worker["nearest"]] == ["gpu-1", "node-b", "node-a"]


@pytest.mark.parametrize("args, pods", [
    (("shop/worker-3",), ["shop/worker-3"]),
    (("worker-3", "-n", "shop"), ["shop/worker-3"]),
    (("-n", "shop"), ["shop/api-7", "shop/worker-3"]),
    (("-A", "-l", "app in (train,api)"), ["shop/api-7", "batch/train-1"]),
    ((), []),  # the namespace "default" has no pending pod
])
def test_choosing_pods(args, pods):
    assert [p["pod"] for p in report(*args)[1]["pods"]] == pods


def test_nothing_pending_in_the_namespace_says_how_many_are_elsewhere():
    # Pending in the sample: worker-3 and api-7 in shop, train-1, report-1 and custom-1 in batch.
    code, out, _ = pending()
    assert code == 0
    assert out.splitlines()[0] == "No pending pods in namespace default; 5 in other namespaces (-A lists them)"
    code, rep = report()
    assert (rep["namespace"], rep["pendingInOtherNamespaces"]) == ("default", 5)
    _, out, _ = pending("-l", "app=train")  # the selector counts elsewhere too
    assert out.splitlines()[0] == "No pending pods in namespace default; 1 in other namespaces (-A lists them)"
    _, out, _ = pending("-n", "kube-system", "-l", "app=nope")
    assert out.splitlines()[0] == "No pending pods in namespace kube-system."
    _, out, _ = pending("-A", "-l", "app=nope")
    assert out.splitlines()[0] == "No pending pods."
    assert "namespace" not in report("-A")[1]


def test_table_lists_a_row_per_pod_then_the_detail():
    code, out, _ = pending("-A")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].split() == ["POD", "PRIORITY", "AGE", "OUTCOME", "NODE", "OR", "FIRST", "REASON"]
    # kubectl's AGE: 2h is "120m" (minutes under 3h), 48h "2d".
    assert lines[1].split()[:5] == ["shop/api-7", "1000", "120m", "Scheduled", "node-a"]
    assert lines[2].split()[:4] == ["batch/train-1", "0", "2d", "Unschedulable"]
    assert "kplan agrees with the message the cluster recorded." in out
    assert "Not for this scheduler (kube-scheduler ignores them): batch/custom-1 (volcano)" in out
    assert "hint:" in out


def test_exit_0_when_every_pending_pod_would_schedule():
    code, rep = report("shop/api-7")
    assert code == 0 and rep["summary"]["scheduled"] == 1


@pytest.mark.parametrize("args, message", [
    (("shop/nope",), "pod 'shop/nope' is not a pending pod of the snapshot"),
    (("-n", "shop", "-A"), "--namespace and --all-namespaces exclude each other"),
    (("-A", "-l", "app in (a"), "invalid label selector"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    code, out, err = pending(*args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_nominated_pending_pod_holds_room_for_the_pod_explained(tmp_path):
    # hold-0 (priority 500, 3500m) was nominated to node-a and waits for its victims to go; with
    # only small-1 asked about, hold-0 stays in the nominator, and small-1 (priority 0, 1 CPU) must
    # leave node-a's 3500m to it. node-a is otherwise empty in this variant; node-b has 500m free.
    cluster = yaml.safe_load((ROOT / SAMPLE).read_text())
    cluster["items"] = [o for o in cluster["items"] if o["kind"] != "Pod" or o["metadata"]["name"] == "web-1"]
    cluster["items"].append(pod_doc("hold-0", "3500m", 500, nominated="node-a"))
    cluster["items"].append(pod_doc("small-1", "1", 0))
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(cluster))
    small = by_pod(report("shop/small-1", snapshot=str(path))[1])["shop/small-1"]
    assert small["placement"]["outcome"] == "Unschedulable"
    assert small["placement"]["rejected"][0] == {"plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu"],
                                                 "nodes": 2, "examples": ["node-a", "node-b"]}
    # Without the nomination node-a would take it.
    del cluster["items"][-2]["status"]["nominatedNodeName"]
    path.write_text(yaml.safe_dump(cluster))
    assert by_pod(report("shop/small-1", snapshot=str(path))[1])["shop/small-1"]["placement"]["node"] == "node-a"


def pod_doc(name, cpu, priority, nominated=""):
    raw = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "shop", "creationTimestamp": "2026-11-25T09:00:00Z"},
           "spec": {"priority": priority, "containers": [{"name": "c", "image": "c",
                                                          "resources": {"requests": {"cpu": cpu}}}]},
           "status": {"phase": "Pending"}}
    if nominated:
        raw["status"]["nominatedNodeName"] = nominated
    return raw


def test_running_pod_re_planned(tmp_path):
    # legacy-0 runs on gpu-1 from before the node was tainted; taken off it and placed anew, the
    # scheduler would not put it back there (untolerated taint) but on node-a (1 CPU free, the
    # most left after it under LeastAllocated).
    cluster = yaml.safe_load((ROOT / SAMPLE).read_text())
    legacy = pod_doc("legacy-0", "500m", 0)
    legacy["spec"]["nodeName"] = "gpu-1"
    legacy["status"] = {"phase": "Running"}
    cluster["items"].append(legacy)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(cluster))
    code, out, err = kplan("place", "shop/legacy-0", "-f", str(path), "-o", "json")
    assert code == 0, err
    (p,) = json.loads(out)["placements"]
    assert (p["runsOn"], p["node"]) == ("gpu-1", "node-a")
    nodes = {n["name"]: n for n in p["nodes"]}
    assert nodes["gpu-1"]["plugin"] == "TaintToleration"
    code, out, _ = kplan("place", "shop/legacy-0", "-f", str(path))
    assert "Re-planned: the pod runs on gpu-1; kube-scheduler would not put it there now." in out
    # Re-planned where it runs: the same node.
    code, out, _ = kplan("place", "shop/web-1", "-f", SAMPLE, "-o", "json")
    (p,) = json.loads(out)["placements"]
    assert (p["runsOn"], p["node"]) == ("node-b", "node-b")


def test_re_planning_an_unknown_pod_is_an_input_error():
    code, _, err = kplan("place", "shop/nope", "-f", SAMPLE)
    assert code == 2 and "pod 'shop/nope': no such pod in the snapshot (and no such file)" in err


def test_daemon_set_pod_nearest_node_is_its_own(tmp_path):
    # A DaemonSet pod pinned to node-b (matchFields, as the DaemonSet controller writes it) asks for
    # 1 CPU where 500m is free: its nearest node is node-b, 500m short; node-a and gpu-1, outside
    # NodeAffinity's PreFilterResult, are no way for it.
    cluster = yaml.safe_load((ROOT / SAMPLE).read_text())
    agent = pod_doc("agent-b", "1", 0)
    agent["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-b"]}]}]}}}
    cluster["items"].append(agent)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(cluster))
    agent_entry = by_pod(report("shop/agent-b", snapshot=str(path))[1])["shop/agent-b"]
    assert agent_entry["placement"]["message"].startswith(
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].")
    assert [(n["node"], n["shortfall"]) for n in agent_entry["nearest"]] == [("node-b", {"cpu": "500m"})]


def two_nodes(tmp_path, pending_spec, running=(), node_b=None, labels_a=None):
    """node-a and node-b (4 CPU each, zones a and b), the running pods, and one pending pod 'p'."""
    def node(name, zone, extra=None, labels=None):
        raw = {"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                     "topology.kubernetes.io/zone": zone, **(labels or {})}},
               "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
        raw.update(extra or {})
        return raw
    pending_pod = pod_doc("p", "100m", 0)
    pending_pod["metadata"]["labels"] = {"app": "p"}
    pending_pod["spec"].update(pending_spec)
    items = [node("node-a", "a", labels=labels_a), node("node-b", "b", node_b), *running, pending_pod]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    entry = by_pod(report("shop/p", snapshot=str(path))[1])["shop/p"]
    assert entry["placement"]["outcome"] == "Unschedulable"
    return {near["node"]: near["lacks"] for near in entry["nearest"]}


def running(name, node, labels=None, spec=None):
    raw = pod_doc(name, "100m", 0)
    raw["metadata"]["labels"] = labels or {}
    raw["spec"].update({"nodeName": node, **(spec or {})})
    raw["status"] = {"phase": "Running"}
    return raw


def test_nearest_lacks_of_each_kind_of_rejection(tmp_path):
    # nodeSelector: node-a has disk=hdd, node-b no disk label.
    lacks = two_nodes(tmp_path, {"nodeSelector": {"disk": "ssd"}}, labels_a={"disk": "hdd"})
    assert [(x["kind"], x["text"]) for x in lacks["node-a"]] == [("node-selector", "nodeSelector disk=ssd: node has disk=hdd")]
    assert lacks["node-b"][0]["text"] == "nodeSelector disk=ssd: node has no label disk"
    # A busy host port: 8080 is held on node-a by shop/web-a, on node-b by shop/web.
    port = [{"name": "c", "image": "c", "ports": [{"containerPort": 8080, "hostPort": 8080}]}]
    web = running("web", "node-b", spec={"containers": port})
    holder = running("web-a", "node-a", spec={"containers": port})
    lacks = two_nodes(tmp_path, {"containers": port}, running=[web, holder])
    assert [x["text"] for x in lacks["node-b"]] == ["host port 8080/TCP in use by shop/web"]
    # Pod anti-affinity naming the conflicting pod, on both nodes.
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    lacks = two_nodes(tmp_path, {"affinity": anti},
                      running=[running("db-0", "node-a", {"app": "db"}), running("db-1", "node-b", {"app": "db"})])
    assert lacks["node-a"][0]["kind"] == "pod-anti-affinity" and "shop/db-0" in lacks["node-a"][0]["text"]
    # A zone spread: two matching pods in zone a, none in b; node-b is cordoned, node-a would make skew 3.
    spread = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "p"}}}]
    lacks = two_nodes(tmp_path, {"topologySpreadConstraints": spread},
                      running=[running("p-0", "node-a", {"app": "p"}), running("p-1", "node-a", {"app": "p"})],
                      node_b={"spec": {"unschedulable": True}})
    assert [x["kind"] for x in lacks["node-b"]] == ["unschedulable"]
    assert [x["text"] for x in lacks["node-a"]] == ["topology.kubernetes.io/zone: skew 3 > maxSkew 1"]


def test_disagreement_names_the_plugins_the_snapshot_cannot_answer_for(tmp_path):
    # The scheduler found no volume to bind; the snapshot holds no claim data-db-0, so kplan finds the
    # claim missing: the report names the object the snapshot lacks.
    cluster = yaml.safe_load((ROOT / SAMPLE).read_text())
    claim = pod_doc("db-0", "100m", 0)
    claim["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}]
    claim["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                      "message": "0/3 nodes are available: 3 node(s) didn't find available "
                                                 "persistent volumes to bind."}]
    cluster["items"].append(claim)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(cluster))
    entry = by_pod(report("shop/db-0", snapshot=str(path))[1])["shop/db-0"]
    assert entry["agreesWithRecorded"] is False
    assert entry["why"].startswith("the snapshot lacks what the scheduler saw for this pod")
    assert "PersistentVolumeClaim shop/data-db-0" in entry["why"] and "DynamicResources" not in entry["why"]
    assert entry["placement"]["message"] == ('0/3 nodes are available: persistentvolumeclaim "data-db-0" not found. '
                                             'not found')


def test_manifest_pod_already_in_the_snapshot_or_bound_says_what_kplan_did(tmp_path):
    # shop/web-0 runs on node-a (3 CPU); the manifest of the same name asks for 500m and binds it to
    # gpu-1. kube-scheduler never schedules a bound pod: kplan takes the snapshot's web-0 off node-a
    # (the manifest replaces it), drops nodeName, and places it: node-a, now empty, scores best.
    manifest = pod_doc("web-0", "500m", 0)
    manifest["spec"]["nodeName"] = "gpu-1"
    del manifest["status"]
    path = tmp_path / "web-0.yaml"
    path.write_text(yaml.safe_dump(manifest))
    code, out, err = kplan("place", str(path), "-f", SAMPLE, "-o", "json")
    assert code == 0, err
    (p,) = json.loads(out)["placements"]
    assert p["node"] == "node-a" and p["runsOn"] == "node-a"
    assert p["notes"] == ["It replaces the snapshot's pod shop/web-0, taken off node-a first.",
                          "Its spec.nodeName binds it to gpu-1: kube-scheduler never schedules a bound pod, "
                          "so kplan placed it as if unbound."]
    # node-a counts only the new web-0: 500m of 4 CPU.
    assert p["nodes"][0]["requestedAfter"]["cpu"] == 0.125
