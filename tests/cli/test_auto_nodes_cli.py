"""`--add-node FILE:auto` on `kplan check` and `kplan capacity --replicas N`, through the real entry point.

The cluster: two nodes of 4 CPUs (node-1, node-2). The template `big` has 4 CPUs, so pods of 1 CPU
fill a node at 4; the template `small` has 2 CPUs.
"""
import json
from functools import partial

import pytest

from run_kplan import run_kplan


kplan = partial(run_kplan, columns=200)


def node(name, cpu):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                  "topology.kubernetes.io/zone": "zone-a"}},
            "status": {"allocatable": {"cpu": str(cpu), "memory": "16Gi", "pods": "110"}}}


def deployment(name, replicas, cpu="1", anti_affinity=False, node_selector=None):
    spec = {"containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}]}
    if anti_affinity:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": name}}, "topologyKey": "kubernetes.io/hostname"}]}}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


@pytest.fixture
def files(tmp_path):
    def write(name, obj):
        path = tmp_path / name
        path.write_text(json.dumps(obj))
        return str(path)
    return {
        "cluster": write("cluster.json", {"apiVersion": "v1", "kind": "List",
                                          "items": [node("node-1", 4), node("node-2", 4)]}),
        "big": write("big.json", node("big", 4)),
        "small": write("small.json", node("small", 2)),
        "write": write,
    }


def check_json(files, manifest, *args):
    code, out, err = kplan("check", manifest, "-f", files["cluster"], "-o", "json", *args)
    return code, json.loads(out) if out else None, err


@pytest.mark.parametrize("replicas, needed, added", [
    (2, 0, []),                                  # 2 CPUs on 8 free: nothing to add
    (10, 1, ["big"]),                            # 8 fit, 2 CPUs short: one node of 4, named as in the file
    (20, 3, ["big-1", "big-2", "big-3"]),        # 8 fit, 12 CPUs short: exactly three nodes of 4
])
def test_check_finds_the_fewest_nodes(files, replicas, needed, added):
    manifest = files["write"]("web.json", deployment("web", replicas))
    code, report, _ = check_json(files, manifest, "--add-node", f"{files['big']}:auto")
    assert code == 0
    assert report["nodesNeeded"] == {"big": needed}
    assert report["summary"]["scheduled"] == replicas and report["summary"]["failed"] == 0
    assert sorted(n for n in report["workloads"][0]["nodes"] if n.startswith("big")) == added
    assert (report.get("nodeChanges") or {}).get("added", []) == added


def test_check_table_says_how_many(files):
    manifest = files["write"]("web.json", deployment("web", 20))
    code, out, _ = kplan("check", manifest, "-f", files["cluster"], "--add-node", f"{files['big']}:auto")
    assert code == 0
    assert "needs 3 × big" in out


def test_hostname_anti_affinity_needs_more_than_resources_say(files):
    # 4 replicas of 100m that must not share a node: 2 fit on node-1 and node-2; the other 2 ask for 200m,
    # which one node of the template holds (the resource bound, 1), but each needs a node of its own: 2.
    manifest = files["write"]("spread.json", deployment("spread", 4, cpu="100m", anti_affinity=True))
    code, report, _ = check_json(files, manifest, "--add-node", f"{files['big']}:auto")
    assert code == 0
    assert report["nodesNeeded"] == {"big": 2}
    assert report["nodeCountsTried"][:2] == [0, 1]
    assert sorted(report["workloads"][0]["nodes"]) == ["big-1", "big-2", "node-1", "node-2"]


def test_no_count_fits_a_node_selector_the_template_lacks(files):
    # The template lacks disk=ssd too: no count of copies can help, which the search says after its
    # first run instead of counting to --max-nodes; the report is the run without copies.
    manifest = files["write"]("ssd.json", deployment("ssd", 1, node_selector={"disk": "ssd"}))
    code, report, _ = check_json(files, manifest, "--add-node", f"{files['big']}:auto", "--max-nodes", "2")
    assert code == 1
    assert report["nodesNeeded"] is None and report["nodeCountsTried"] == [0]
    message = report["workloads"][0]["firstFailure"]["message"]
    assert message.startswith("0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.")
    summary = report["nodesNeededSummary"]
    assert summary.startswith("no copy of big can hold pod default/ssd-") and "nodeSelector disk=ssd" in summary
    assert summary.endswith("(NodeAffinity)")
    code, out, _ = kplan("check", manifest, "-f", files["cluster"], "--add-node", f"{files['big']}:auto",
                         "--max-nodes", "2")
    assert code == 1 and "no copy of big can hold pod default/ssd-" in out


def test_templates_grow_in_the_order_given(files):
    # 12 CPUs short: small (2 CPUs) up to --max-nodes 1 first, then big: 2 + 3 × 4 = 14 >= 12.
    manifest = files["write"]("web.json", deployment("web", 20))
    code, report, _ = check_json(files, manifest, "--add-node", f"{files['small']}:auto",
                                 "--add-node", f"{files['big']}:auto", "--max-nodes", "1")
    assert code == 1  # at most one copy of each: 8 + 2 + 4 CPUs are not enough
    assert report["nodesNeeded"] is None
    code, report, _ = check_json(files, manifest, "--add-node", f"{files['small']}:auto",
                                 "--add-node", f"{files['big']}:auto", "--max-nodes", "3")
    assert code == 0
    assert report["nodesNeeded"] == {"small": 3, "big": 2}  # 8 + 3 × 2 + 2 × 4 = 22 >= 20; 8 + 6 + 4 < 20


def test_capacity_replicas_with_auto(files):
    pod = files["write"]("web.json", deployment("web", 1))
    code, out, _ = kplan("capacity", pod, "-f", files["cluster"], "--replicas", "12",
                         "--add-node", f"{files['big']}:auto", "-o", "json")
    assert code == 0
    report = json.loads(out)
    assert report["replicas"] == 12 and report["wanted"] == 12 and report["nodesNeeded"] == {"big": 1}
    assert report["perNode"].get("big") == 4
    # 10 asked: 8 fit, one big node is needed, and the 12 places leave 2 empty: the 10 replicas asked
    # are placed, no more (as --max would stop), spread by LeastAllocated over three 4-CPU nodes.
    code, out, _ = kplan("capacity", pod, "-f", files["cluster"], "--replicas", "10",
                         "--add-node", f"{files['big']}:auto", "-o", "json")
    report = json.loads(out)
    assert code == 0 and report["nodesNeeded"] == {"big": 1}
    assert report["replicas"] == 10 and sorted(report["perNode"].values()) == [3, 3, 4]


def test_capacity_replicas_without_auto_exits_1_when_fewer_fit(files):
    pod = files["write"]("web.json", deployment("web", 1))
    code, out, _ = kplan("capacity", pod, "-f", files["cluster"], "--replicas", "12", "-o", "json")
    assert code == 1 and json.loads(out)["replicas"] == 8
    code, out, _ = kplan("capacity", pod, "-f", files["cluster"], "--replicas", "8", "-o", "json")
    assert code == 0 and json.loads(out)["replicas"] == 8


@pytest.mark.parametrize("args", [
    ["check", "{web}", "--add-node", "missing.yaml:auto"],
    ["check", "{web}", "--add-node", "{big}:auto", "--max-nodes", "0"],
    ["check", "{web}", "--max-nodes", "3"],
    ["check", "{web}", "--add-node", ":auto"],
    ["capacity", "{web}", "--add-node", "{big}:auto"],
    ["capacity", "{web}", "--replicas", "3", "--max", "3"],
    ["place", "{web}", "--add-node", "{big}:auto"],
])
def test_bad_auto_input_is_one_line_exit_2(files, args):
    web = files["write"]("web.json", deployment("web", 1))
    args = [a.format(web=web, big=files["big"]) for a in args]
    code, out, err = kplan(*args, "-f", files["cluster"])
    assert code == 2
    assert out == "" and len(err.strip().splitlines()) == 1 and err.startswith("kplan: error:")
