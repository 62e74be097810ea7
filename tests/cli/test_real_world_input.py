"""Dumps as public tools lay them out, through the real entry point: support-bundle folders with
files that are not objects, overlapping dumps, objects printed without apiVersion, no nodes at all."""
import json
import re
from functools import partial

import yaml

from builders import node, pod
from run_kplan import run_kplan


kplan = partial(run_kplan, columns=200)


def node_list(*nodes):
    return json.dumps({"apiVersion": "v1", "kind": "NodeList", "items": list(nodes)})


def pod_list(*pods):
    return json.dumps({"apiVersion": "v1", "kind": "PodList", "items": list(pods)})


def web(name="web-1", cpu="1", uid="u-1"):
    p = pod(name, "shop", node_name="n1", requests={"cpu": cpu, "memory": "1Gi"})
    p["metadata"]["uid"] = uid
    return p


def support_bundle(tmp_path):
    """A troubleshoot-style cluster-resources folder: a pod list per namespace, an *-errors.json map,
    a log and a README beside them."""
    root = tmp_path / "cluster-resources"
    (root / "pods").mkdir(parents=True)
    (root / "nodes.json").write_text(node_list(node("n1", cpu="4")))
    (root / "pods" / "shop.json").write_text(pod_list(web()))
    (root / "pod-disruption-budgets-errors.json").write_text(
        json.dumps({"shop": "the server could not find the requested resource"}))
    (root / "broken.yaml").write_text("kind: Pod\nmetadata: {name: [\n")
    (root / "collector.log").write_text("collected in 2s\n")
    (root / "README.md").write_text("# bundle\n")
    return root


def node_row(out, name="n1"):
    return next(n for n in json.loads(out)["nodes"] if n["name"] == name)


def test_support_bundle_folder_skips_files_that_are_not_objects(tmp_path):
    root = support_bundle(tmp_path)
    code, out, err = kplan("nodes", "-f", str(root), "-o", "json")
    assert code == 0, err
    assert node_row(out)["pods"] == 1
    assert f"kplan: warning: skipped {root / 'pod-disruption-budgets-errors.json'}: document 1: not a " \
           "Kubernetes object (no kind)" in err
    assert f"kplan: warning: skipped {root / 'broken.yaml'}: malformed YAML at line" in err
    assert "skipped 2 file(s) of the folder(s) that are not .yaml, .yml or .json (-v lists them)" in err
    _, _, verbose = kplan("nodes", "-f", str(root), "-o", "json", "-v")
    assert f"skipped {root / 'collector.log'}: not a .yaml, .yml or .json file" in verbose
    assert f"skipped {root / 'README.md'}" in verbose


def test_a_file_named_explicitly_stays_strict(tmp_path):
    root = support_bundle(tmp_path)
    code, _, err = kplan("nodes", "-f", str(root / "nodes.json"), "-f", str(root / "pod-disruption-budgets-errors.json"))
    assert code == 2 and "not a Kubernetes object (no kind)" in err and len(err.strip().splitlines()) == 1


def test_overlapping_dumps_count_a_pod_once(tmp_path):
    """all.json beside the per-namespace files it was cut from: every pod is read twice."""
    (tmp_path / "dump").mkdir()
    (tmp_path / "dump" / "nodes.json").write_text(node_list(node("n1", cpu="4")))
    (tmp_path / "dump" / "shop.json").write_text(pod_list(web()))
    items = [{"apiVersion": "v1", "kind": "Node", **{k: v for k, v in node("n1", cpu="4").items() if k != "kind"}},
             web()]
    (tmp_path / "dump" / "all.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    code, out, err = kplan("nodes", "-f", str(tmp_path / "dump"), "-f", str(tmp_path / "dump" / "shop.json"),
                           "-o", "json")
    assert code == 0, err
    row = node_row(out)
    assert row["pods"] == 1 and row["requests"]["cpu"] == "1" and row["requests"]["memory"] == "1Gi"
    assert "kplan: warning: 3 object(s) read twice, counted once: Node n1 (" in err
    assert "Pod shop/web-1 (" in err and len(err.strip().splitlines()) == 1


def test_two_different_objects_under_one_name_are_an_input_error(tmp_path):
    nodes = tmp_path / "nodes.json"
    nodes.write_text(node_list(node("n1")))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(pod_list(web(cpu="1")))
    b.write_text(pod_list(web(cpu="2")))
    code, _, err = kplan("nodes", "-f", str(nodes), "-f", str(a), "-f", str(b))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "two different objects named Pod shop/web-1" in err and str(a) in err and str(b) in err
    b.write_text(pod_list(web(uid="u-2")))
    code, _, err = kplan("nodes", "-f", str(nodes), "-f", str(a), "-f", str(b))
    assert code == 2 and "uid u-1 in" in err and "uid u-2 in" in err


def test_elastic_quota_without_api_version_is_read(tmp_path):
    """As `kubectl get eqs -o yaml` is printed in koordinator's docs: no apiVersion line."""
    (tmp_path / "nodes.json").write_text(node_list(node("n1", cpu="4", memory="88Gi")))
    (tmp_path / "eq.yaml").write_text(yaml.safe_dump({
        "kind": "ElasticQuota", "metadata": {"name": "quota-example", "namespace": "shop"},
        "spec": {"min": {"cpu": "10", "memory": "20Mi"}, "max": {"cpu": "40", "memory": "40Gi"}}}))
    code, out, err = kplan("quota", "status", "-f", str(tmp_path), "-A", "-o", "json")
    assert code == 0, err
    (q,) = json.loads(out)["quotas"]
    assert (q["namespace"], q["name"], q["min"]["cpu"]) == ("shop", "quota-example", "10")
    code, out, err = kplan("quota", "status", "-f", str(tmp_path), "-A")
    # The cluster row in readable units, one per resource over the table: 20Mi is 0.0195Gi.
    assert re.search(r"^memory +88Gi +0.02Gi +0 *$", out, re.M), out
    warnings = [line for line in out.splitlines() if "sum of min for cpu" in line]
    assert len(warnings) == 1  # each warning once


def test_skipped_objects_say_why_with_v(tmp_path):
    (tmp_path / "c.yaml").write_text(yaml.safe_dump_all([
        node("n1"),
        {"apiVersion": "quota.example.com/v1", "kind": "ElasticQuota", "metadata": {"name": "q", "namespace": "a"}},
        {"kind": "ConfigMap", "metadata": {"name": "x"}}]))
    code, _, err = kplan("nodes", "-f", str(tmp_path / "c.yaml"), "-v")
    assert code == 0
    assert ("skipped 1 ElasticQuota (quota.example.com/v1) object(s): apiVersion not one kplan reads for "
            "ElasticQuota (scheduling.x-k8s.io/v1alpha1, scheduling.sigs.k8s.io/v1alpha1)") in err
    assert "skipped 1 ConfigMap (no apiVersion) object(s): kind not used" in err


def test_a_snapshot_without_nodes_answers_as_kube_scheduler(tmp_path):
    """schedulePod's ErrNoNodesAvailable: unschedulable, the error's text as the message, no PostFilter."""
    empty = tmp_path / "empty.yaml"
    empty.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    code, out, err = kplan("place", "samples/pod-burstable.yaml", "-f", str(empty), "-o", "json")
    assert code == 1, err
    (p,) = json.loads(out)["placements"]
    assert (p["outcome"], p["node"], p["message"]) == ("Unschedulable", None, "no nodes available to schedule pods")
    code, out, err = kplan("place", "samples/pod-burstable.yaml", "-f", "samples/cluster.yaml",
                           "--remove-node", "kubernetes.io/os=linux")
    assert code == 1 and "Unschedulable: no nodes available to schedule pods" in out, err


def test_warnings_name_what_they_are_about(tmp_path):
    orphans = [pod(f"p{i}", "shop", node_name=f"gone-{i}") for i in range(5)]
    bare = node("bare")
    del bare["status"]["allocatable"]
    metric = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": "elsewhere"},
              "status": {"nodeMetric": {"nodeUsage": {"resources": {"cpu": "1", "memory": "1Gi"}}}}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump_all([node("n1"), bare, metric, *orphans]))
    code, _, err = kplan("nodes", "-f", str(tmp_path / "c.yaml"))
    assert code == 0, err
    assert ("kplan: warning: 5 pod(s) bound to a node that is not in the snapshot: shop/p0 on gone-0, "
            "shop/p1 on gone-1, shop/p2 on gone-2, … (2 more; -v lists all)") in err
    assert "kplan: warning: 1 node(s) without status.allocatable" in err and err.count(": bare") == 1
    assert "kplan: warning: 1 NodeMetric(s) for node(s) not in the snapshot (not used): elsewhere" in err
    _, _, verbose = kplan("nodes", "-f", str(tmp_path / "c.yaml"), "-v")
    assert "shop/p4 on gone-4" in verbose
