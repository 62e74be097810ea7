"""What-if node changes (kplan.planning.node_changes): add, remove, cordon, drain."""
import pytest
import yaml

from builders import node, pdb, pod, ready
from kplan.errors import InputError
from kplan.planning.node_changes import NodeChanges, apply_node_changes, select_nodes, what_if
from kplan.report.node_changes import change_lines, node_changes_entry
from kplan.sources.snapshot import Snapshot


def snapshot(nodes, pods=()):
    s = Snapshot()
    for k, obj in enumerate([*nodes, *pods]):
        s.add(obj, "test", 1)
    return s.finish()


def base():
    nodes = [node("n1", cpu="4", labels={"pool": "general"}), node("n2", cpu="4", labels={"pool": "general"}),
             node("g1", cpu="4", labels={"pool": "gpu"})]
    pods = [pod("a", node_name="n1", requests={"cpu": "1"}), pod("b", node_name="n1", requests={"cpu": "1"}),
            pod("ds", node_name="n1", requests={"cpu": "100m"}, owner_kind="DaemonSet"),
            pod("static", node_name="n1", annotations={"kubernetes.io/config.mirror": "x"}),
            pod("g", node_name="g1", requests={"cpu": "1"})]
    return nodes, pods


def test_add_copies_of_a_node_template(tmp_path):
    path = tmp_path / "node.yaml"
    path.write_text(yaml.safe_dump(node("big", cpu="16", labels={"pool": "big"})))
    snap = snapshot(*base())
    new, report = apply_node_changes(snap, NodeChanges(add=[f"{path}:3", str(path)]))
    assert report.added == ["big-1", "big-2", "big-3", "big"]
    added = {n.name: n for n in new.nodes[3:]}
    assert added["big-2"].labels["kubernetes.io/hostname"] == "big-2" and added["big-2"].allocatable["cpu"] == 16000
    assert len(snap.nodes) == 3  # the input snapshot is unchanged


def test_add_a_taken_name_is_an_input_error(tmp_path):
    path = tmp_path / "node.yaml"
    path.write_text(yaml.safe_dump(node("n1")))
    with pytest.raises(InputError, match="already exists"):
        apply_node_changes(snapshot(*base()), NodeChanges(add=[str(path)]))


def test_remove_by_selector_drops_its_pods():
    new, report = apply_node_changes(snapshot(*base()), NodeChanges(remove=["pool=gpu"]))
    assert report.removed == ["g1"] and report.dropped_pods == ["default/g"]
    assert node_changes_entry(report)["droppedPods"] == ["default/g"]  # the JSON contract's name (README)
    assert [n.name for n in new.nodes] == ["n1", "n2"] and all(p.name != "g" for p in new.pods)


def test_copies_are_their_own_hosts(tmp_path):
    # cluster-autoscaler's sanitizeNode sets a copy's kubernetes.io/hostname label to the copy's name,
    # whatever the template's was (on EKS it is often not the node's name), and adds none.
    named, unlabelled = tmp_path / "named.yaml", tmp_path / "unlabelled.yaml"
    template = node("ip-10-0-1-7.eu-west-1.compute.internal")
    template["metadata"]["labels"]["kubernetes.io/hostname"] = "ip-10-0-1-7"
    named.write_text(yaml.safe_dump(template))
    bare = node("bare")
    del bare["metadata"]["labels"]["kubernetes.io/hostname"]
    unlabelled.write_text(yaml.safe_dump(bare))
    new, report = apply_node_changes(snapshot(*base()), NodeChanges(add=[f"{named}:2", str(unlabelled)]))
    added = {n.name: n.labels.get("kubernetes.io/hostname") for n in new.nodes[3:]}
    assert added == {"ip-10-0-1-7.eu-west-1.compute.internal-1": "ip-10-0-1-7.eu-west-1.compute.internal-1",
                     "ip-10-0-1-7.eu-west-1.compute.internal-2": "ip-10-0-1-7.eu-west-1.compute.internal-2",
                     "bare": None}


def test_cordon_sets_unschedulable_and_the_taint():
    new, report = apply_node_changes(snapshot(*base()), NodeChanges(cordon=["n2"]))
    n2 = next(n for n in new.nodes if n.name == "n2")
    assert report.cordoned == ["n2"] and n2.unschedulable
    assert [(t.key, t.effect) for t in n2.taints] == [("node.kubernetes.io/unschedulable", "NoSchedule")]


def test_cordon_keeps_the_node_s_own_taints():
    # `kubectl cordon` sets spec.unschedulable alone; the node lifecycle controller then adds the
    # node.kubernetes.io/unschedulable:NoSchedule taint after the node's taints, which stay. A node
    # that already has it (cordoned before) keeps one.
    gpu = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    evicting = {"key": "dedicated", "value": "batch", "effect": "NoExecute"}
    cordoned_taint = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    nodes = [node("g1", taints=[gpu, evicting]), node("c1", taints=[cordoned_taint, gpu], unschedulable=True)]
    original = snapshot(nodes)
    new, report = apply_node_changes(original, NodeChanges(cordon=["g1", "c1"]))
    assert report.cordoned == ["g1", "c1"]
    taints = {n.name: [(t.key, t.value, t.effect) for t in n.taints] for n in new.nodes}
    assert taints == {"g1": [("nvidia.com/gpu", "present", "NoSchedule"), ("dedicated", "batch", "NoExecute"),
                             ("node.kubernetes.io/unschedulable", "", "NoSchedule")],
                      "c1": [("node.kubernetes.io/unschedulable", "", "NoSchedule"),
                             ("nvidia.com/gpu", "present", "NoSchedule")]}
    # The snapshot given is left as it was.
    assert [(t.key, t.effect) for t in original.nodes[0].taints] == [("nvidia.com/gpu", "NoSchedule"),
                                                                     ("dedicated", "NoExecute")]


def test_greater_and_less_than_selectors_pass_over_nodes_without_the_label():
    # labels.Requirement.Matches: Gt and Lt need the label, holding an integer.
    nodes = snapshot([node("n1", labels={"gen": "5"}), node("n2", labels={"gen": "2"}), node("n3"),
                      node("n4", labels={"gen": "new"})]).nodes
    assert select_nodes(nodes, "gen>3", "--cordon") == ["n1"]
    assert select_nodes(nodes, "gen<3", "--cordon") == ["n2"]
    assert select_nodes(nodes, "!gen", "--cordon") == ["n3"]


@pytest.mark.parametrize("arg", ["nope", "pool=none", "a b"], ids=["name", "selector", "malformed"])
def test_unknown_node_is_an_input_error(arg):
    with pytest.raises(InputError, match="--cordon"):
        apply_node_changes(snapshot(*base()), NodeChanges(cordon=[arg]))


def test_drain_whose_pods_fit_elsewhere():
    # n1 runs a (1 CPU), b (1 CPU), a DaemonSet pod and a static pod; n2 has 4 free CPUs, g1 3.
    # a and b are evicted and re-placed (n2 is the least allocated), the DaemonSet and static pods stay.
    new, report = what_if(snapshot(*base()), NodeChanges(drain=["n1"]))
    assert report.drained == ["n1"]
    assert [p.key for p in report.evicted] == ["default/a", "default/b"]
    assert report.unplaced == {} and not report.failed
    assert set(report.replaced) == {"default/a", "default/b"} and "n1" not in report.replaced.values()
    bound = {p.name: p.node_name for p in new.pods}
    assert bound["ds"] == "n1" and bound["static"] == "n1"
    assert bound["a"] == report.replaced["default/a"] and bound["b"] == report.replaced["default/b"]
    # Bound again, they run there: a later rollout counts them as available.
    assert {p.name: p.phase for p in new.pods if p.name in ("a", "b")} == {"a": "Running", "b": "Running"}
    assert next(n for n in new.nodes if n.name == "n1").unschedulable


def test_drain_whose_pods_do_not_fit():
    # Two 4-CPU nodes, each with a 3-CPU pod: draining n1 leaves its pod 1 CPU free on n2 -> unplaced.
    nodes = [node("n1", cpu="4"), node("n2", cpu="4")]
    pods = [pod("big", node_name="n1", requests={"cpu": "3"}), pod("other", node_name="n2", requests={"cpu": "3"})]
    new, report = what_if(snapshot(nodes, pods), NodeChanges(drain=["n1"]))
    assert report.failed and list(report.unplaced) == ["default/big"]
    assert "Insufficient cpu" in report.unplaced["default/big"]
    assert report.unplaced["default/big"].startswith("0/2 nodes are available")
    assert [p.name for p in new.pods] == ["other"]
    assert node_changes_entry(report)["evicted"] == [{"pod": "default/big", "from": "n1", "node": None,
                                            "reason": report.unplaced["default/big"]}]


def test_drain_re_places_in_priority_order():
    # Only one of the two evicted pods fits on n2: the higher-priority one goes first and wins.
    nodes = [node("n1", cpu="4"), node("n2", cpu="2")]
    pods = [pod("low", node_name="n1", requests={"cpu": "2"}, spec={"priority": 1}),
            pod("high", node_name="n1", requests={"cpu": "2"}, spec={"priority": 100})]
    _, report = what_if(snapshot(nodes, pods), NodeChanges(drain=["n1"]))
    assert [p.name for p in report.evicted] == ["high", "low"]
    assert report.replaced == {"default/high": "n2"} and list(report.unplaced) == ["default/low"]


def budgeted():
    # n1 runs two pods of shop/web (priority 100 and 1); their PDB (minAvailable 2 of 3 Ready pods,
    # the third on n2) allows one disruption. n2 has room for both.
    nodes = [node("n1", cpu="4"), node("n2", cpu="8")]
    pods = [ready(pod(name, "shop", node_name=host, requests={"cpu": "1"}, labels={"app": "web"},
                      owner_kind="ReplicaSet", spec={"priority": prio}))
            for name, host, prio in (("web-1", "n1", 100), ("web-2", "n1", 1), ("web-3", "n2", 0))]
    return snapshot(nodes, [*pods, pdb("web", "shop", match_labels={"app": "web"}, min_available=2)])


def test_drain_respects_pod_disruption_budgets():
    # The eviction API lets the first eviction (the higher priority, web-1) spend the one disruption
    # and refuses the second: web-2 stays on the cordoned n1.
    new, report = what_if(budgeted(), NodeChanges(drain=["n1"]))
    assert [p.name for p in report.evicted] == ["web-1"] and report.replaced == {"shop/web-1": "n2"}
    assert list(report.blocked) == ["shop/web-2"] and report.failed
    entry = report.blocked["shop/web-2"]
    assert entry["node"] == "n1" and entry["pdb"] == "shop/web"
    assert entry["reason"] == ("Cannot evict pod as it would violate the pod's disruption budget. "
                               "The disruption budget web needs 2 healthy pods and has 3 currently")
    assert {p.name: p.node_name for p in new.pods} == {"web-1": "n2", "web-2": "n1", "web-3": "n2"}
    assert node_changes_entry(report)["blocked"] == [{"pod": "shop/web-2", **entry}]
    assert change_lines(report)[1] == "  n1: 1 pod(s) evicted, 1 re-placed on 1 node(s), 1 eviction(s) refused: shop/web-2 (-v says why)"
    assert "    shop/web-2: stays on n1, eviction refused: Cannot evict pod" in "\n".join(change_lines(report, verbose=True))


def test_force_drain_ignores_the_budgets():
    new, report = what_if(budgeted(), NodeChanges(drain=["n1"], force_drain=True))
    assert report.blocked == {} and not report.failed
    assert set(report.replaced) == {"shop/web-1", "shop/web-2"}
    assert all(p.node_name == "n2" for p in new.pods)


def test_drain_lines_sum_up_per_node_and_list_pods_only_when_verbose():
    # Two drained nodes of four pods each (1 CPU); two 4-CPU nodes take six; two stay out.
    nodes = [node("d1", cpu="8", labels={"pool": "old"}), node("d2", cpu="8", labels={"pool": "old"}),
             node("n1", cpu="3"), node("n2", cpu="3")]
    pods = [pod(f"{n}-{k}", node_name=n, requests={"cpu": "1"}, spec={"priority": 10 - k})
            for n in ("d1", "d2") for k in range(4)]
    _, report = what_if(snapshot(nodes, pods), NodeChanges(drain=["pool=old"]))
    short = change_lines(report)
    assert short[0] == "drained 2 node(s): 8 pod(s) evicted, 6 re-placed, 2 could not be placed"
    assert len(short) == 3  # a line per drained node, no line per pod
    # Priority order across both nodes (d1-0, d2-0, d1-1, d2-1, ...): each pod goes to the less allocated
    # of n1 and n2, ties to n1, so d1's pods land on n1 and d2's on n2; the two priority-7 pods find no room.
    assert short[1] == ("  d1: 4 pod(s) evicted, 3 re-placed on 1 node(s), 1 not placed: default/d1-3 "
                        "(-v says why)")
    assert short[2] == ("  d2: 4 pod(s) evicted, 3 re-placed on 1 node(s), 1 not placed: default/d2-3 "
                        "(-v says why)")
    full = change_lines(report, verbose=True)
    assert len(full) == 1 + 2 + 8
    assert full[1] == "  d1: 4 pod(s) evicted, 3 re-placed on 1 node(s), 1 not placed: default/d1-3"
    assert full[2:5] == [f"    default/d1-{k} -> n1" for k in range(3)]
    assert full[5].startswith("    default/d1-3 -> not placed: 0/4 nodes are available")


def test_many_names_are_counted_not_listed():
    nodes = [node(f"n{k}", cpu="4") for k in range(6)]
    pods = [pod(f"p{k}", node_name=f"n{k}", requests={"cpu": "1"}) for k in range(6)]
    _, report = what_if(snapshot(nodes, pods), NodeChanges(remove=["n0", "n1", "n2", "n3", "n4"]))
    assert change_lines(report) == ["removed node(s): n0, n1, n2, … (2 more; -v lists all); their 5 pod(s) dropped: "
                              "default/p0, default/p1, default/p2, … (2 more; -v lists all)"]
    assert change_lines(report, verbose=True) == ["removed node(s): n0, n1, n2, n3, n4; their 5 pod(s) dropped: "
                                          "default/p0, default/p1, default/p2, default/p3, default/p4"]
