"""What would make it fit: the nearest nodes of a pod, what each lacks, and the hints.

Every expectation is worked out by hand from upstream's semantics (fit.go's fitsRequest, the
taint helpers, nodeaffinity, podtopologyspread's skew, interpodaffinity, nodeports), not read
back from kplan's output.
"""
from __future__ import annotations

import json

import numpy as np
from builders import container, node, pod

from kplan.api.objects import Pod
from kplan.api.resources import readable_amount
from kplan.planning.nearest.hints import hints
from kplan.planning.nearest.lack import (
    EXISTING_ANTI_AFFINITY, HOST_PORT, NODE_AFFINITY, NODE_SELECTOR, POD_ANTI_AFFINITY, RESOURCE, TAINT,
    TOPOLOGY_SPREAD, UNSCHEDULABLE,
)
from kplan.planning.nearest.nodes import nearest_nodes
from kplan.planning.nearest.verdicts import analyze
from kplan.planning.place import Planner
from kplan.report.nearest import nearest_entry
from kplan.sources.snapshot import Snapshot

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
CORDON_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def run(nodes, pods, incoming, limit=0):
    """Returns (verdicts, nearest nodes by name, the planner) for an incoming pod dict."""
    s = Snapshot()
    for obj in [*nodes, *pods]:
        s.add(obj, "test", 1)
    p = Planner(s.finish())
    candidate = Pod(incoming)
    fw = p.framework_for(candidate)
    v = analyze(fw, candidate, p.cluster)
    return v, nearest_nodes(fw, candidate, p.cluster, limit, verdicts=v), p


def by_node(near):
    return {n.node: n for n in near}


def kinds(near_node):
    return [(lack.plugin, lack.kind) for lack in near_node.lacks]


# -- what each kind of rejection lacks ----------------------------------------------------------------


def test_resource_shortfall_cpu_and_memory():
    # n1: 4 cpu / 8Gi, 3500m / 7Gi requested; the pod asks 800m / 2560Mi:
    #   cpu 3500m + 800m - 4000m = 300m; memory 7Gi + 2.5Gi - 8Gi = 1.5Gi = 1536Mi.
    # n2: room for cpu and memory, but its one pod slot is taken: 1 + 1 - 1 = 1 pod short.
    v, near, _ = run([node("n1", cpu="4", memory="8Gi"), node("n2", cpu="8", memory="16Gi", pods=1)],
                     [pod("a", node_name="n1", requests={"cpu": "3500m", "memory": "7Gi"}),
                      pod("b", node_name="n2", requests={"cpu": "100m"})],
                     pod("new", requests={"cpu": "800m", "memory": "2560Mi"}))
    n1 = by_node(near)["n1"]
    assert kinds(n1) == [("NodeResourcesFit", RESOURCE)]
    lack = n1.lacks[0]
    assert lack.text == "300m cpu and 1.5Gi memory short"
    assert lack.detail["shortfall"] == {"cpu": "300m", "memory": "1536Mi"}
    assert lack.detail["request"] == {"cpu": "800m", "memory": "2560Mi"}
    assert lack.detail["used"] == {"cpu": "3500m", "memory": "7Gi"}
    assert lack.detail["allocatable"] == {"cpu": "4", "memory": "8Gi"}
    n2 = by_node(near)["n2"].lacks[0]
    assert n2.detail["shortfall"] == {"pods": "1"}
    assert n2.text == "no room for another pod (1/1 pods)"
    assert v.shortfall[0, v.cluster.res_index["cpu"]] == 300


def test_request_beyond_allocatable_is_said_so():
    # 6 cpu on a 4-cpu node: no room freed there can hold it (shortfall 6 - 4 = 2 even on an empty node).
    _, near, _ = run([node("n1", cpu="4")], [], pod("new", requests={"cpu": "6"}))
    lack = near[0].lacks[0]
    assert lack.detail["shortfall"] == {"cpu": "2"} and lack.detail["beyondAllocatable"] == ["cpu"]
    assert lack.text == "cpu request 6 exceeds its allocatable 4"


def test_untolerated_taint():
    # NoSchedule and NoExecute taints need a toleration; PreferNoSchedule never rejects. The pod
    # tolerates dedicated (Exists), so only the gpu taint is left.
    taints = [GPU_TAINT, {"key": "dedicated", "value": "ml", "effect": "NoExecute"},
              {"key": "soft", "effect": "PreferNoSchedule"}]
    _, near, _ = run([node("n1", taints=taints)], [],
                     pod("new", spec={"tolerations": [{"key": "dedicated", "operator": "Exists"}]}))
    (lack,) = near[0].lacks
    assert (lack.plugin, lack.kind) == ("TaintToleration", TAINT)
    assert lack.text == "taint nvidia.com/gpu=present:NoSchedule not tolerated"
    assert lack.detail == {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}


def test_unmatched_node_selector():
    _, near, _ = run([node("hdd", labels={"disktype": "hdd"}), node("bare"), node("ssd", labels={"disktype": "ssd"})],
                     [], pod("new", spec={"nodeSelector": {"disktype": "ssd"}}))
    got = by_node(near)
    assert set(got) == {"hdd", "bare"}  # ssd fits
    assert kinds(got["hdd"]) == [("NodeAffinity", NODE_SELECTOR)]
    assert got["hdd"].lacks[0].text == "nodeSelector disktype=ssd: node has disktype=hdd"
    assert got["hdd"].lacks[0].detail == {"mismatched": [{"key": "disktype", "want": "ssd", "have": "hdd"}]}
    assert got["bare"].lacks[0].text == "nodeSelector disktype=ssd: node has no label disktype"


def test_unmatched_required_node_affinity_term():
    required = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-a", "zone-b"]}]}]}}}
    _, near, _ = run([node("c1", labels={ZONE: "zone-c"}), node("a1", labels={ZONE: "zone-a"})], [],
                     pod("new", spec={"affinity": required}))
    (c1,) = near
    assert c1.node == "c1" and kinds(c1) == [("NodeAffinity", NODE_AFFINITY)]
    lack = c1.lacks[0]
    assert lack.detail["terms"] == [{"term": 0, "requirement": f"{ZONE} in (zone-a,zone-b)", "key": ZONE,
                                     "have": "zone-c"}]
    assert lack.text == f"required node affinity: {ZONE} in (zone-a,zone-b) not met (node has {ZONE}=zone-c)"


def test_nodes_outside_the_prefilter_result_are_left_out():
    # A DaemonSet pod pinned to d1 (matchFields metadata.name In [d1]): d1 lacks only cpu (3 + 2 - 4 = 1);
    # d2 is outside NodeAffinity's PreFilterResult: rejected, but no way for the pod, so not a nearest node.
    pinned = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["d1"]}]}]}}}
    v, near, _ = run([node("d1", cpu="4"), node("d2", cpu="4")], [pod("a", node_name="d1", requests={"cpu": "3"})],
                     pod("ds", requests={"cpu": "2"}, spec={"affinity": pinned}))
    assert v.rejected[v.cluster.index["d2"]].any()
    assert [n.node for n in near] == ["d1"]
    assert kinds(near[0]) == [("NodeResourcesFit", RESOURCE)]
    assert near[0].lacks[0].detail["shortfall"] == {"cpu": "1"}
    # The hints speak of the node the pod asks for, not of the nodes it never asked for.
    assert hints(v) == ["d1 would fit with 1 more cpu free"]


def test_a_prefilter_rejecting_the_pod_is_a_lack_of_every_node_and_the_other_filters_still_run():
    # One term asking for metadata.name in [a] and in [b]: no node name can satisfy both, so
    # NodeAffinity's PreFilter answers "pod affinity terms conflict" (UnschedulableAndUnresolvable).
    conflict = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]},
                         {"key": "metadata.name", "operator": "In", "values": ["b"]}]}]}}}
    v, near, _ = run([node("a"), node("b", taints=[GPU_TAINT])], [], pod("new", spec={"affinity": conflict}))
    got = by_node(near)
    assert kinds(got["a"]) == [("NodeAffinity", NODE_AFFINITY)]
    assert got["a"].lacks[0].text == "pod affinity terms conflict"
    assert got["a"].lacks[0].detail == {"preFilter": True, "reasons": ["pod affinity terms conflict"],
                                        "code": "UnschedulableAndUnresolvable"}
    assert kinds(got["b"]) == [("NodeAffinity", NODE_AFFINITY), ("TaintToleration", TAINT)]
    assert hints(v) == ["NodeAffinity rejects the pod before any node is considered: pod affinity terms conflict"]


def test_topology_spread_skew():
    # app=web pods: zone-a 3, zone-b 1, zone-c 0; the node without a zone label holds one that does
    # not count. The incoming app=web pod matches its own selector: skew = count + 1 - min (0).
    #   a1: 3 + 1 - 0 = 4 > 1; b1: 1 + 1 - 0 = 2 > 1; c1: 0 + 1 - 0 = 1, fits; nolabel: missing label.
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    web = {"app": "web"}
    v, near, _ = run([node("a1", labels={ZONE: "zone-a"}), node("b1", labels={ZONE: "zone-b"}),
                      node("c1", labels={ZONE: "zone-c"}), node("nolabel")],
                     [pod(f"w{k}", node_name="a1", labels=web) for k in range(3)]
                     + [pod("w3", node_name="b1", labels=web), pod("w4", node_name="nolabel", labels=web)],
                     pod("new", labels=web, spec={"topologySpreadConstraints": spread}))
    got = by_node(near)
    assert set(got) == {"a1", "b1", "nolabel"}
    a1 = got["a1"].lacks[0]
    assert (a1.plugin, a1.kind) == ("PodTopologySpread", TOPOLOGY_SPREAD)
    assert a1.text == f"{ZONE}: skew 4 > maxSkew 1"
    (c,) = a1.detail["constraints"]
    assert (c["domain"], c["matching"], c["minMatching"], c["skew"], c["maxSkew"]) == ("zone-a", 3, 0, 4, 1)
    assert got["b1"].lacks[0].text == f"{ZONE}: skew 2 > maxSkew 1"
    assert got["nolabel"].lacks[0].text == f"no {ZONE} label"
    assert got["nolabel"].lacks[0].detail["constraints"][0]["missingLabel"] is True
    # maxSkew 2 lets b1 in (skew 2), not a1 (skew 4).
    assert "b1 would fit with maxSkew 2 on topology.kubernetes.io/zone (now 1)" in hints(v)


def anti_affinity(selector, key=HOST):
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": key, "labelSelector": {"matchLabels": selector}}]}}


def test_anti_affinity_names_the_conflicting_pod():
    # The term defaults to the pod's own namespace: shop/db-0 conflicts, other/db-9 does not.
    v, near, _ = run([node("n1"), node("n2"), node("n3")],
                     [pod("db-0", "shop", node_name="n1", labels={"app": "db"}),
                      pod("db-9", "other", node_name="n2", labels={"app": "db"})],
                     pod("db-1", "shop", labels={"app": "db"}, spec={"affinity": anti_affinity({"app": "db"})}))
    (n1,) = near
    assert n1.node == "n1" and kinds(n1) == [("InterPodAffinity", POD_ANTI_AFFINITY)]
    assert n1.lacks[0].text == f"anti-affinity with shop/db-0 ({HOST}=n1)"
    assert n1.lacks[0].detail["conflicts"] == [{"topologyKey": HOST, "domain": "n1", "selector": "app=db",
                                                "count": 1, "pods": ["shop/db-0"]}]


def test_existing_pods_anti_affinity_names_the_pod():
    # shop/guard on n1 keeps app=web pods of its namespace out of its zone (zone-a: n1 and n2).
    v, near, _ = run([node("n1", labels={ZONE: "zone-a"}), node("n2", labels={ZONE: "zone-a"}),
                      node("n3", labels={ZONE: "zone-b"})],
                     [pod("guard", "shop", node_name="n1", spec={"affinity": anti_affinity({"app": "web"}, ZONE)})],
                     pod("web-1", "shop", labels={"app": "web"}))
    assert [n.node for n in near] == ["n1", "n2"]
    for n in near:
        assert kinds(n) == [("InterPodAffinity", EXISTING_ANTI_AFFINITY)]
        assert n.lacks[0].text == "anti-affinity of existing pod shop/guard rejects this pod here"
        assert n.lacks[0].detail["conflicts"] == [{"pod": "shop/guard", "topologyKey": ZONE, "domain": "zone-a"}]


def test_busy_host_port_names_the_holder():
    # web-1 binds 8080/TCP on n1; 8080/UDP on n2 does not clash with a TCP port.
    def web(name, node_name="", protocol="TCP"):
        return pod(name, "shop", node_name=node_name, containers=[container(ports=[
            {"containerPort": 80, "hostPort": 8080, "protocol": protocol}])])
    v, near, _ = run([node("n1"), node("n2")], [web("web-1", "n1"), web("dns", "n2", "UDP")], web("web-2"))
    (n1,) = near
    assert kinds(n1) == [("NodePorts", HOST_PORT)]
    assert n1.lacks[0].text == "host port 8080/TCP in use by shop/web-1"
    assert n1.lacks[0].detail["ports"] == [{"port": 8080, "protocol": "TCP", "hostIP": "0.0.0.0",
                                            "boundIP": "0.0.0.0", "pod": "shop/web-1"}]
    assert hints(v) == ["n1 would fit if host port 8080/TCP were free there"]


def test_two_busy_host_ports_are_each_named():
    # The new pod binds 8080 and 9090; web-1 holds 8080 on n1 and metrics holds 9090 there: each port
    # is said with its holder, in the pod's order, one sentence after the other.
    def ports(*numbers):
        return [container(ports=[{"containerPort": p, "hostPort": p} for p in numbers])]
    v, near, _ = run([node("n1")], [pod("web-1", "shop", node_name="n1", containers=ports(8080)),
                                    pod("metrics", "mon", node_name="n1", containers=ports(9090))],
                     pod("web-2", "shop", containers=ports(8080, 9090)))
    (n1,) = near
    assert n1.lacks[0].text == "host port 8080/TCP in use by shop/web-1; host port 9090/TCP in use by mon/metrics"
    assert [p["pod"] for p in n1.lacks[0].detail["ports"]] == ["shop/web-1", "mon/metrics"]


def test_inline_disk_in_use_hint_names_the_node_and_the_pod():
    # isVolumeConflict: a GCE PD mounted read-write by db-1 on n1 cannot be mounted by another pod
    # there. n1 is rejected by VolumeRestrictions alone; n2 also lacks cpu, so it gets no disk hint.
    def db(name, node_name="", cpu="1"):
        return pod(name, "shop", node_name=node_name, containers=[container(requests={"cpu": cpu})],
                   spec={"volumes": [{"name": "data", "gcePersistentDisk": {"pdName": "disk-1"}}]})
    v, near, _ = run([node("n1", cpu="4"), node("n2", cpu="1")], [db("db-1", "n1"), db("db-2", "n2", "1")],
                     db("db-3", cpu="2"))
    assert ("VolumeRestrictions", "n1") in [(n.lacks[0].plugin, n.node) for n in near]
    disk_hints = [h for h in hints(v) if "inline disk" in h]
    assert disk_hints == ["n1 would fit if the pod's inline disk were free there (n1: volume data is mounted by "
                          "pod shop/db-1 already)"]


def test_cordoned_node():
    v, near, _ = run([node("n1", unschedulable=True), node("n2", unschedulable=True, taints=[CORDON_TAINT])], [],
                     pod("new"))
    got = by_node(near)
    assert kinds(got["n1"]) == [("NodeUnschedulable", UNSCHEDULABLE)]
    assert got["n1"].lacks[0].text == "node is cordoned"
    # kubectl cordon's taint is lifted with the cordon: n2 counts as fitting once uncordoned too.
    assert kinds(got["n2"]) == [("NodeUnschedulable", UNSCHEDULABLE), ("TaintToleration", TAINT)]
    assert hints(v) == ["2 nodes would fit if uncordoned: n1 and n2"]


def test_every_filter_is_reported_not_only_the_first():
    # Cordoned, tainted, wrong label and short of cpu: four plugins, in profile order.
    _, near, _ = run([node("n1", cpu="1", unschedulable=True, taints=[GPU_TAINT], labels={"disktype": "hdd"})], [],
                     pod("new", requests={"cpu": "2"}, spec={"nodeSelector": {"disktype": "ssd"}}))
    assert near[0].plugins == ["NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodeResourcesFit"]


# -- ranking -------------------------------------------------------------------------------------------


def test_ranking_fewest_plugins_then_smallest_shortfall_then_name():
    # The pod asks 1100m cpu and 2Gi memory.
    # big:    8 cpu, 7 used: 100m short, 100m/8 of its cpu            -> one plugin, smallest share
    # small:  4 cpu, 3 used: 100m short, 100m/4                       -> one plugin
    # small2: the same as small                                       -> tie, broken by name
    # wide:   4 cpu, 4 used: 1100m short, 1100m/4                     -> one plugin, largest share
    # far:    4 cpu free, but tainted and 1Gi memory (1Gi short)      -> two plugins: last
    nodes = [node("wide", cpu="4"), node("small2", cpu="4"), node("far", cpu="4", memory="1Gi", taints=[GPU_TAINT]),
             node("small", cpu="4"), node("big", cpu="8")]
    pods = [pod("a", node_name="wide", requests={"cpu": "4"}), pod("b", node_name="small2", requests={"cpu": "3"}),
            pod("c", node_name="small", requests={"cpu": "3"}), pod("d", node_name="big", requests={"cpu": "7"})]
    _, near, _ = run(nodes, pods, pod("new", requests={"cpu": "1100m", "memory": "2Gi"}))
    assert [n.node for n in near] == ["big", "small", "small2", "wide", "far"]
    assert [n.lacks[0].detail["shortfall"]["cpu"] for n in near[:4]] == ["100m", "100m", "100m", "1100m"]
    assert near[-1].plugins == ["TaintToleration", "NodeResourcesFit"]


def test_limit_keeps_the_nearest():
    _, near, _ = run([node("a", cpu="1"), node("b", cpu="2"), node("c", cpu="3")], [],
                     pod("new", requests={"cpu": "4"}), limit=2)
    assert [n.node for n in near] == ["c", "b"]


# -- hints ---------------------------------------------------------------------------------------------


def test_taint_hint_counts_the_nodes_the_taint_alone_keeps_out():
    # g1..g3: only the gpu taint; g4: the gpu taint and short of cpu (not counted); o1: another taint.
    nodes = [node(f"g{k}", cpu="4", taints=[GPU_TAINT]) for k in (1, 2, 3)]
    nodes += [node("g4", cpu="1", taints=[GPU_TAINT]), node("o1", taints=[{"key": "team", "value": "x",
                                                                             "effect": "NoExecute"}])]
    v, _, _ = run(nodes, [], pod("new", requests={"cpu": "2"}))
    got = hints(v)
    assert got == ["3 nodes would fit if the pod tolerated nvidia.com/gpu=present:NoSchedule",
                   "o1 would fit if the pod tolerated team=x:NoExecute"]


def test_no_node_has_the_request_only_when_it_exceeds_every_node():
    nodes = [node("m8", memory="8Gi"), node("m16", memory="16Gi")]
    v, _, _ = run(nodes, [], pod("new", requests={"memory": "32Gi"}))
    assert "no node has 32Gi allocatable memory (the largest has 16Gi): resize the request or add a node" in hints(v)
    # 12Gi fits m16's allocatable, only not beside what runs there: no such hint, but how much to free.
    v, _, _ = run(nodes, [pod("a", node_name="m16", requests={"memory": "10Gi"})],
                  pod("new", requests={"memory": "12Gi"}))
    got = hints(v)
    assert not any(h.startswith("no node has") for h in got)
    # m16: 10Gi + 12Gi - 16Gi = 6Gi; m8 cannot hold 12Gi at all, so no amount freed there helps.
    assert got == ["m16 would fit with 6Gi more memory free"]


def test_resource_hint_for_a_group_gives_the_most_and_the_nearest():
    # n1: 3800m + 500m - 4000m = 300m short; n2: 3600m + 500m - 4000m = 100m short. Both lack only cpu:
    # with 300m more free each would fit, the nearest (n2) with 100m.
    v, _, _ = run([node("n1", cpu="4"), node("n2", cpu="4")],
                  [pod("a", node_name="n1", requests={"cpu": "3800m"}),
                   pod("b", node_name="n2", requests={"cpu": "3600m"})],
                  pod("new", requests={"cpu": "500m"}))
    assert hints(v) == ["2 nodes would fit with 300m more cpu free; the nearest, n2, with 100m more cpu"]


def test_selector_hints():
    # No node carries disktype=nvme; hdd1 and hdd2 would fit with the label.
    v, _, _ = run([node("hdd1", labels={"disktype": "hdd"}), node("hdd2")], [],
                  pod("new", spec={"nodeSelector": {"disktype": "nvme"}}))
    assert hints(v) == ["no node is labelled disktype=nvme, which the pod's nodeSelector asks for",
                        "2 nodes would fit if labelled disktype=nvme"]


def test_without_any_other_hint_the_nearest_node_is_described():
    # Each 2-cpu node runs 1800m; the pod's 500m is 300m short on both, and each has a second lack
    # (a taint, a cordon): no one change makes either fit. Same count, same shortfall: n1 by name.
    v, _, _ = run([node("n1", cpu="2", taints=[GPU_TAINT]), node("n2", cpu="2", unschedulable=True)],
                  [pod("a", node_name="n1", requests={"cpu": "1800m"}),
                   pod("b", node_name="n2", requests={"cpu": "1800m"})],
                  pod("new", requests={"cpu": "500m"}))
    assert hints(v) == ["the nearest node, n1, lacks: taint nvidia.com/gpu=present:NoSchedule not tolerated "
                        "(TaintToleration); 300m cpu short (NodeResourcesFit)"]


def test_nodes_too_small_for_a_request_rank_last():
    # The pod wants a GPU. cpu1 has none (one plugin, but no room freed there can ever hold it);
    # gpu1 has 1 GPU, taken, and a taint (two plugins): gpu1 is nearer.
    v, near, _ = run([node("cpu1"), node("gpu1", taints=[GPU_TAINT], extra={"nvidia.com/gpu": "1"})],
                     [pod("a", node_name="gpu1", requests={"nvidia.com/gpu": "1"},
                          spec={"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]})],
                     pod("new", requests={"nvidia.com/gpu": "1"}))
    assert [n.node for n in near] == ["gpu1", "cpu1"]
    assert near[0].lacks[1].text == "1 nvidia.com/gpu short"
    assert near[1].lacks[0].text == "nvidia.com/gpu request 1 exceeds its allocatable 0"


# -- no side effects, report shape ---------------------------------------------------------------------


def test_nearest_nodes_does_not_change_the_node_table():
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    nodes = [node("n1", cpu="2", labels={ZONE: "a"}, taints=[GPU_TAINT]), node("n2", cpu="2", labels={ZONE: "b"},
                                                                                 unschedulable=True)]
    pods = [pod("w", "shop", node_name="n1", labels={"app": "web"}, requests={"cpu": "1"},
                containers=[container(requests={"cpu": "1"}, ports=[{"containerPort": 80, "hostPort": 80}])])]
    incoming = pod("new", "shop", labels={"app": "web"}, spec={
        "topologySpreadConstraints": spread, "nodeSelector": {"disktype": "ssd"},
        "affinity": anti_affinity({"app": "web"}),
        "containers": [container(requests={"cpu": "2"}, ports=[{"containerPort": 80, "hostPort": 80}])]})
    s = Snapshot()
    for obj in [*nodes, *pods]:
        s.add(obj, "test", 1)
    p = Planner(s.finish())
    c = p.cluster
    before = {name: getattr(c, name).copy() for name in
              ("requested", "allocatable", "non_zero_requested", "pod_count", "allocated_limits", "unschedulable")}
    pods_before = [[x.key for x in bucket] for bucket in c.pods_by_node]
    ports_before = {i: list(ports) for i, ports in c.used_ports.items()}
    candidate = Pod(incoming)
    fw = p.framework_for(candidate)
    near = nearest_nodes(fw, candidate, c, limit=0)
    assert len(near) == 2
    hints(analyze(fw, candidate, c))
    for name, array in before.items():
        assert np.array_equal(getattr(c, name), array), name
    assert [[x.key for x in bucket] for bucket in c.pods_by_node] == pods_before
    assert c.used_ports == ports_before and c.pods_total == 1


def test_report_entry_is_json():
    _, near, _ = run([node("n1", cpu="1", taints=[GPU_TAINT])], [], pod("new", requests={"cpu": "1500m"}))
    entry = nearest_entry(near[0])
    assert entry["node"] == "n1" and entry["plugins"] == ["TaintToleration", "NodeResourcesFit"]
    assert entry["plugin"] == "TaintToleration"  # the first Filter that rejects it, as kube-scheduler reports
    assert entry["shortfall"] == {"cpu": "500m"}
    assert [lack["kind"] for lack in entry["lacks"]] == [TAINT, RESOURCE]
    assert set(entry["lacks"][0]) == {"plugin", "kind", "text", "detail"}
    assert json.loads(json.dumps(entry)) == entry


def test_readable_amounts_round_up():
    assert readable_amount("memory", 1536 * 2**20) == "1.5Gi"
    assert readable_amount("memory", 300 * 2**20) == "300Mi"
    assert readable_amount("memory", 300 * 2**20 + 1) == "300.1Mi"  # never less than what is short
    assert readable_amount("memory", 512) == "512"
    assert readable_amount("cpu", 300) == "300m" and readable_amount("cpu", 2000) == "2"
    assert readable_amount("nvidia.com/gpu", 2) == "2"
