"""`kplan place` with PodTopologySpread and InterPodAffinity: replicas placed in sequence, explain, bad selectors."""
import copy
import json
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
import yaml

from run_kplan import run_kplan

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
CLUSTER = str(SAMPLES / "cluster.yaml")
ZONE_OF = {"node-a1": "zone-a", "gpu-a1": "zone-a", "node-b1": "zone-b", "node-b2": "zone-b",
           "node-c1": "zone-c", "node-c2": "zone-c"}


kplan = partial(run_kplan, columns=120)


def place_json(*args):
    code, out, err = kplan("place", *args, "-f", CLUSTER, "-o", "json")
    assert "Traceback" not in err
    return code, json.loads(out)


def test_six_zone_spread_replicas_land_two_per_zone():
    code, report = place_json("samples/topology/storefront-replicas.yaml")
    assert code == 0
    nodes = [p["node"] for p in report["placements"]]
    assert len(nodes) == 6 and all(nodes)
    assert Counter(ZONE_OF[n] for n in nodes) == {"zone-a": 2, "zone-b": 2, "zone-c": 2}
    assert all(p["weights"]["PodTopologySpread"] == 2 and p["weights"]["InterPodAffinity"] == 2
               for p in report["placements"])


def test_anti_affinity_twins_never_share_a_node(tmp_path):
    first = yaml.safe_load((SAMPLES / "topology" / "cache-anti-affinity.yaml").read_text())
    twins = []
    for name in ("cache-1", "cache-2", "cache-3"):
        twin = copy.deepcopy(first)
        twin["metadata"]["name"] = name
        twins.append(twin)
    (tmp_path / "twins.yaml").write_text(yaml.safe_dump_all(twins))
    code, report = place_json(str(tmp_path / "twins.yaml"))
    assert code == 0
    nodes = [p["node"] for p in report["placements"]]
    assert len(set(nodes)) == 3 and "node-b1" not in nodes  # cache-0 already runs on node-b1
    for p in report["placements"]:
        rejected = {n["name"]: n for n in p["nodes"] if not n["feasible"]}
        assert rejected["node-b1"]["plugin"] == "InterPodAffinity"
        assert rejected["node-b1"]["reasons"] == ["node(s) didn't match pod anti-affinity rules"]


def test_fourth_twin_is_unschedulable_with_upstream_message(tmp_path):
    first = yaml.safe_load((SAMPLES / "topology" / "cache-anti-affinity.yaml").read_text())
    twins = [dict(copy.deepcopy(first), metadata={**first["metadata"], "name": f"cache-{k}"}) for k in range(1, 5)]
    (tmp_path / "twins.yaml").write_text(yaml.safe_dump_all(twins))
    code, report = place_json(str(tmp_path / "twins.yaml"))
    assert code == 1
    last = report["placements"][-1]
    assert last["outcome"] == "Unschedulable"
    assert last["message"].startswith("0/6 nodes are available: 1 node(s) had untolerated taint(s), "
                                      "1 node(s) were unschedulable, 4 node(s) didn't match pod anti-affinity rules.")


def test_explain_shows_domain_counts_and_skew():
    code, report = place_json("samples/topology/web-spread.yaml", "--explain", "node-a1")
    assert code == 0
    (p,) = report["placements"]
    assert ZONE_OF[p["node"]] == "zone-c"
    explained = p["explain"][0]
    assert explained["plugin"] == "PodTopologySpread"
    (step,) = [s for s in explained["steps"] if s["plugin"] == "PodTopologySpread"]
    assert step["reasons"] == ["node(s) didn't match pod topology spread constraints"]
    assert "zone-a: 1 matching pods, min 0, skew would be 2 > maxSkew 1" in step["details"]
    assert any("domains zone-a=1, zone-b=1, zone-c=0" in line for line in step["details"])


def test_explain_shows_anti_affinity_counts():
    code, report = place_json("samples/topology/cache-anti-affinity.yaml", "--explain", "node-b1")
    (step,) = [s for s in report["placements"][0]["explain"][0]["steps"] if s["plugin"] == "InterPodAffinity"]
    assert step["result"] == "rejected"
    assert "anti-affinity term 0 (app=cache): kubernetes.io/hostname=node-b1 has 1 matching pod(s)" in step["details"]


def _with(path, mutate):
    doc = yaml.safe_load((SAMPLES / "topology" / path).read_text())
    mutate(doc["spec"])
    return doc


@pytest.mark.parametrize("doc,message", [
    (_with("cache-anti-affinity.yaml", lambda s: s["affinity"]["podAntiAffinity"]
           ["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"].update(
               matchExpressions=[{"key": "app", "operator": "Near", "values": ["x"]}])),
     'operator: Invalid value: "Near": not a valid selector operator'),
    (_with("cache-anti-affinity.yaml", lambda s: s["affinity"]["podAntiAffinity"]
           ["requiredDuringSchedulingIgnoredDuringExecution"][0].update(topologyKey="")),
     "topologyKey: Required value: can not be empty"),
    (_with("web-spread.yaml", lambda s: s["topologySpreadConstraints"][0].update(topologyKey="")),
     "topologyKey: Required value: can not be empty"),
    (_with("web-spread.yaml", lambda s: s["topologySpreadConstraints"][0]["labelSelector"].update(
        matchExpressions=[{"key": "app", "operator": "Equals", "values": ["web"]}])),
     'operator: Invalid value: "Equals": not a valid selector operator'),
], ids=["anti-affinity invalid operator", "anti-affinity empty topologyKey", "spread empty topologyKey",
        "spread invalid operator"])
def test_bad_selectors_are_input_errors(tmp_path, doc, message):
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(doc))
    code, out, err = kplan("place", str(tmp_path / "bad.yaml"), "-f", CLUSTER)
    assert code == 2, (out, err)
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


# -- default spreading: the selector from Services and controllers (helper.DefaultSelector) --------------

def pts_scores(placement):
    return {n["name"]: n["scores"].get("PodTopologySpread") for n in placement["nodes"] if n["feasible"]}


def test_pod_behind_a_service_spreads_without_an_owner():
    # web-new (shop, app=web, no owner) with the Service web among the manifests: the system default
    # constraints select app=web. Web pods run on node-a1 (zone-a) and node-b1 (zone-b): raw scores
    # round(1 * log(6) + 2 + 1 * log(5) + 4) = 9 there, 6 on node-c1 and node-c2; normalized 66 and 100.
    code, report = place_json("samples/topology/web-service.yaml", "samples/pod-burstable.yaml", "--top", "0")
    assert code == 0 and [p["pod"] for p in report["placements"]] == ["shop/web-new"]
    assert pts_scores(report["placements"][0]) == {"node-c1": 100, "node-c2": 100, "node-b1": 66, "node-a1": 66}
    # Without the Service nothing selects it: PreScore skips, no PodTopologySpread score at all.
    code, report = place_json("samples/pod-burstable.yaml", "--top", "0")
    assert set(pts_scores(report["placements"][0]).values()) == {None}
    # The Service as cluster state works the same way.
    code, out, _ = kplan("place", "samples/pod-burstable.yaml", "-f", CLUSTER, "-f",
                         "samples/topology/web-service.yaml", "-o", "json", "--top", "0")
    assert pts_scores(json.loads(out)["placements"][0])["node-a1"] == 66


def test_deployment_replicas_spread_by_their_replicasets_selector(tmp_path):
    # The Deployment's ReplicaSet joins the cluster, so its pods get the system default constraints with
    # the ReplicaSet's selector (app=web plus pod-template-hash). Three hosts without a zone label, so
    # only the hostname term scores: the second replica gets round(1 * log(5) + 2) = 4 on the first
    # one's node and 2 elsewhere, normalized 50 and 100.
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}},
              "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}} for n in ("n1", "n2", "n3")]
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all(nodes))
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
              "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                           {"name": "c", "image": "web:1", "resources": {"requests": {"cpu": "100m"}}}]}}}}
    (tmp_path / "deploy.yaml").write_text(yaml.safe_dump(deploy))
    code, out, err = kplan("place", str(tmp_path / "deploy.yaml"), "-f", str(tmp_path / "nodes.yaml"),
                           "-o", "json", "--top", "0")
    assert code == 0, err
    first, second = json.loads(out)["placements"]
    assert pts_scores(first) == {"n1": 100, "n2": 100, "n3": 100}
    assert pts_scores(second) == {n: (50 if n == first["node"] else 100) for n in ("n1", "n2", "n3")}
    assert second["node"] != first["node"]


# -- preemption with a spread constraint: what the dry run's PreFilterExtensions count --------------------
# Two nodes, one per zone, 2 CPUs each. The incoming pod (priority 1000, 1 CPU) fits nowhere: node-a
# keeps a low-priority pod whose eviction the spread constraint may or may not allow; node-b runs
# `b1` (priority 10, 1500m, not matching), an eviction the constraint always allows. When node-a is
# a candidate it wins: its victim has the lower priority (pickOneNodeForPreemption's second rule).

ZONE = "topology.kubernetes.io/zone"


def spread_node(name, zone):
    alloc = {"cpu": "2", "memory": "8Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, ZONE: zone}},
            "status": {"allocatable": alloc, "capacity": alloc}}


def prio_pod(name, cpu, priority, node_name="", ns="default", labels=None, terminating=False, nominated=""):
    raw = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": ns, "labels": dict(labels or {})},
           "spec": {"priority": priority, "containers": [{"name": "c", "image": "busybox",
                                                           "resources": {"requests": {"cpu": cpu}}}]},
           "status": {"phase": "Running" if node_name else "Pending"}}
    if node_name:
        raw["spec"]["nodeName"] = node_name
    if terminating:
        raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if nominated:
        raw["status"]["nominatedNodeName"] = nominated
    return raw


def preempt_for_spread(tmp_path, on_node_a, selector):
    """Places a web pod (spread over zones, maxSkew 1, `selector`) beside `on_node_a` and node-b's b1."""
    items = [spread_node("node-a", "zone1"), spread_node("node-b", "zone2"), *on_node_a,
             prio_pod("b1", "1500m", 10, "node-b", labels={"app": "batch"})]
    (tmp_path / "cluster.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    incoming = prio_pod("web-new", "1", 1000, labels={"app": "web"})
    incoming["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}]
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(incoming))
    code, out, err = kplan("place", str(tmp_path / "pod.yaml"), "-f", str(tmp_path / "cluster.json"), "-o", "json")
    assert code == 1 and "Traceback" not in err, err  # NeedsPreemption: not placed as the cluster is
    (p,) = json.loads(out)["placements"]
    assert p["outcome"] == "NeedsPreemption"
    return p["node"], p["preemption"]["victims"], {c["node"]: c["victims"] for c in p["candidates"]}


WEB = {"matchLabels": {"app": "web"}}


def test_evicting_a_terminating_pod_lowers_the_spread_count_it_was_never_in(tmp_path):
    # zone1 counts h1 only: PreFilter skips the terminating t1 (countPodsMatchSelector), zone2 counts
    # nothing, so node-a fails with skew 1+1-0 = 2. Upstream's RemovePod (updateWithPod) does not look
    # at deletionTimestamp: evicting t1 takes zone1 to 0 and the skew to 1, so node-a is a candidate
    # with t1 as its victim, and wins over node-b. Were t1's removal not counted, node-a would stay
    # rejected and b1 on node-b would be evicted.
    on_node_a = [prio_pod("h1", "500m", 2000, "node-a", labels={"app": "web"}),
                 prio_pod("t1", "1500m", 0, "node-a", labels={"app": "web"}, terminating=True)]
    node, victims, candidates = preempt_for_spread(tmp_path, on_node_a, WEB)
    assert (node, victims) == ("node-a", ["default/t1"])
    assert candidates == {"node-a": ["default/t1"], "node-b": ["default/b1"]}


def test_evicting_a_pod_under_an_empty_selector_lowers_the_spread_count(tmp_path):
    # An empty selector {} counts no pod in PreFilter (countPodsMatchSelector returns 0 for it) but
    # matches every pod of the namespace in AddPod and RemovePod. Removals alone cannot change a
    # verdict (every domain starts at 0 and the node's own drops to the minimum), so node-a also holds
    # the nominated pod `nominee` (priority 1000, room kept for the incoming pod's equal priority):
    # adding it takes zone1 to 1, and node-a fails with skew 2. Evicting v1 first takes zone1 to -1,
    # then the nominee brings it back to 0: skew 0+1-0 = 1, so node-a is a candidate with v1 as its
    # victim, and wins. Were v1's removal not counted, node-a would stay rejected (skew 2).
    on_node_a = [prio_pod("v1", "1500m", 0, "node-a", labels={"app": "batch"}),
                 prio_pod("nominee", "500m", 1000, labels={"app": "batch"}, nominated="node-a")]
    node, victims, candidates = preempt_for_spread(tmp_path, on_node_a, {})
    assert (node, victims) == ("node-a", ["default/v1"])
    assert candidates == {"node-a": ["default/v1"], "node-b": ["default/b1"]}


def test_evicting_a_pod_of_another_namespace_leaves_the_spread_count_alone(tmp_path):
    # o1 matches the selector but lives in another namespace: PreFilter never counted it and
    # updateWithPod ignores it. Evicting it leaves zone1 at 1 (h1), the skew at 2, so node-a is no
    # candidate and b1 on node-b is evicted. Were o1's removal counted, node-a would win with o1.
    on_node_a = [prio_pod("h1", "500m", 2000, "node-a", labels={"app": "web"}),
                 prio_pod("o1", "1500m", 0, "node-a", ns="other", labels={"app": "web"})]
    node, victims, candidates = preempt_for_spread(tmp_path, on_node_a, WEB)
    assert (node, victims) == ("node-b", ["default/b1"])
    assert candidates == {"node-b": ["default/b1"]}
