"""`--drain` asks the PodDisruptionBudgets, as `kubectl drain` does through the eviction API, on `check`,
`nodes --after` and `compare` variants; `--force-drain` does not. Answers computed by hand below."""
import json
from functools import partial

import yaml

from builders import node, pdb, pod, ready
from run_kplan import run_kplan

kplan = partial(run_kplan, columns=200)
REFUSAL = ("Cannot evict pod as it would violate the pod's disruption budget. The disruption budget web needs 2 "
           "healthy pods and has 3 currently")


def files(tmp_path):
    """n1 (4 CPUs) runs web-1 (priority 100) and web-2 (priority 1), n2 (8 CPUs) web-3; all Ready, 1 CPU each.
    The PDB (minAvailable 2, no status) allows 3 - 2 = 1 disruption: draining n1 evicts web-1 first, which
    spends it, and web-2's eviction is refused. The incoming pod (1 CPU) goes to n2 either way."""
    pods = [ready(pod(name, "shop", node_name=host, requests={"cpu": "1"}, labels={"app": "web"},
                      owner_kind="ReplicaSet", spec={"priority": prio}))
            for name, host, prio in (("web-1", "n1", 100), ("web-2", "n1", 1), ("web-3", "n2", 0))]
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([node("n1", cpu="4"), node("n2", cpu="8"), *pods,
                                           pdb("web", "shop", match_labels={"app": "web"}, min_available=2)]))
    incoming = tmp_path / "pod.yaml"
    incoming.write_text(yaml.safe_dump(pod("incoming", "shop", requests={"cpu": "1"})))
    return str(cluster), str(incoming)


def test_check_drain_reports_the_refused_eviction_and_exits_1(tmp_path):
    cluster, incoming = files(tmp_path)
    code, out, err = kplan("check", incoming, "-f", cluster, "--drain", "n1", "-o", "json")
    assert code == 1, err
    changes = json.loads(out)["nodeChanges"]
    assert changes["evicted"] == [{"pod": "shop/web-1", "from": "n1", "node": "n2", "reason": None}]
    assert changes["blocked"] == [{"pod": "shop/web-2", "node": "n1", "pdb": "shop/web", "reason": REFUSAL}]
    assert "n1: 1 pod(s) evicted, 1 re-placed on 1 node(s), 1 eviction(s) refused: shop/web-2 (-v says why)" in err
    _, _, err = kplan("check", incoming, "-f", cluster, "--drain", "n1", "-o", "json", "-v")
    assert f"shop/web-2: stays on n1, eviction refused: {REFUSAL}" in err


def test_force_drain_evicts_without_asking(tmp_path):
    cluster, incoming = files(tmp_path)
    code, out, err = kplan("check", incoming, "-f", cluster, "--drain", "n1", "--force-drain", "-o", "json")
    assert code == 0, err
    changes = json.loads(out)["nodeChanges"]
    assert changes["blocked"] == [] and [e["node"] for e in changes["evicted"]] == ["n2", "n2"]


def test_nodes_after_drain_keeps_the_refused_pod_on_its_node(tmp_path):
    cluster, incoming = files(tmp_path)
    code, out, err = kplan("nodes", "-f", cluster, "--after", incoming, "--drain", "n1", "-o", "json")
    assert code == 1, err
    # web-2 stays on n1; n2 holds web-3 and web-1, then the incoming pod.
    pods = {n["name"]: (n["pods"], n["podsAfter"]) for n in json.loads(out)["nodes"]}
    assert pods == {"n1": (1, 1), "n2": (2, 3)}
    code, out, _ = kplan("nodes", "-f", cluster, "--after", incoming, "--drain", "n1", "--force-drain", "-o", "json")
    pods = {n["name"]: (n["pods"], n["podsAfter"]) for n in json.loads(out)["nodes"]}
    assert code == 0 and pods == {"n1": (0, 0), "n2": (3, 4)}


def test_compare_variant_with_and_without_force_drain(tmp_path):
    cluster, incoming = files(tmp_path)
    code, out, err = kplan("compare", incoming, "-f", cluster, "--variant", "strict=--drain n1",
                           "--variant", "forced=--drain n1 --force-drain", "-o", "json")
    assert code == 1, err  # the strict variant's drain leaves web-2 behind
    strict, forced = json.loads(out)["variants"]
    assert [b["pod"] for b in strict["nodeChanges"]["blocked"]] == ["shop/web-2"]
    assert forced["nodeChanges"]["blocked"] == [] and forced["flags"] == "--drain n1 --force-drain"
    assert "what-if (strict)" in err


def test_force_drain_needs_drain(tmp_path):
    cluster, incoming = files(tmp_path)
    for args in (["check", incoming, "-f", cluster, "--force-drain"],
                 ["compare", incoming, "-f", cluster, "--variant", "a=--force-drain", "--variant", "b="]):
        code, _, err = kplan(*args)
        assert code == 2 and "--force-drain goes with --drain" in err and len(err.strip().splitlines()) == 1


def test_auto_node_count_says_no_added_node_lifts_a_refused_eviction(tmp_path):
    cluster, incoming = files(tmp_path)
    template = tmp_path / "node.yaml"
    template.write_text(yaml.safe_dump(node("big", cpu="16")))
    code, out, err = kplan("check", incoming, "-f", cluster, "--drain", "n1", "--add-node", f"{template}:auto",
                           "-o", "json")
    assert code == 1, err
    report = json.loads(out)
    assert report["nodesNeeded"] is None and report["nodeCountsTried"] == [0]
    assert report["nodesNeededSummary"] == f"no copy of big helps: drained pod shop/web-2: eviction refused: {REFUSAL}"
