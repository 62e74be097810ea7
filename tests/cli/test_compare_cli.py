"""`kplan compare` through the real entry point, on small clusters whose answers are computed by hand."""
import json
from functools import partial

from run_kplan import run_kplan

LEAST = "samples/compare/least-allocated.yaml"
MOST = "samples/compare/most-allocated.yaml"


kplan = partial(run_kplan, columns=200)


def node(name, cpu, memory, zone="zone-a"):
    return (f"apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{kubernetes.io/hostname: {name}, "
            f"topology.kubernetes.io/zone: {zone}}}\nstatus:\n  allocatable: {{cpu: {cpu}, memory: \"{memory}\", "
            f"pods: \"110\"}}\n")


def pod(name, cpu, memory, node_name=None):
    bound = f"  nodeName: {node_name}\n" if node_name else ""
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n{bound}"
            f"  containers:\n  - name: c\n    image: app\n    resources:\n      requests: {{cpu: {cpu}, "
            f"memory: \"{memory}\"}}\n" + ("status: {phase: Running}\n" if node_name else ""))


def write(tmp_path, name, *docs):
    path = tmp_path / name
    path.write_text("---\n".join(docs))
    return str(path)


def two_nodes(tmp_path):
    """node1 (zone-a) empty, node2 (zone-b) with 2 CPUs and 2Gi requested; both 4 CPUs, 4Gi."""
    cluster = write(tmp_path, "cluster.yaml", node("node1", "4", "4Gi"), node("node2", "4", "4Gi", "zone-b"),
                    pod("running", "2", "2Gi", "node2"))
    return cluster, write(tmp_path, "pod.yaml", pod("incoming", "1", "1Gi"))


def test_least_and_most_allocated_place_the_pod_apart_and_name_the_plugin(tmp_path):
    cluster, incoming = two_nodes(tmp_path)
    code, out, err = kplan("compare", incoming, "-f", cluster, "--config", LEAST, "--config", MOST, "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["apiVersion"] == "kplan/v1alpha1" and report["kind"] == "ComparisonReport"
    names = ["least-allocated.yaml", "most-allocated.yaml"]
    assert [v["name"] for v in report["variants"]] == names
    assert report["variants"][0]["flags"] == f"--config {LEAST}"
    (entry,) = report["pods"]
    assert entry["pod"] == "default/incoming" and entry["workload"] == "Pod/default/incoming"
    assert entry["placements"] == {names[0]: {"outcome": "Scheduled", "node": "node1"},
                                   names[1]: {"outcome": "Scheduled", "node": "node2"}}
    # NodeResourcesFit (cpu and memory alike): LeastAllocated node1 75, node2 25; MostAllocated the reverse.
    # BalancedAllocation gives both nodes 75 (no change of balance). Margin of node2 over node1: -50, +50.
    (why,) = entry["explanations"]
    assert why["decidedBy"] == "NodeResourcesFit" and why["nodes"] == ["node1", "node2"]
    assert why["margins"][names[0]]["NodeResourcesFit"] == -50
    assert why["margins"][names[1]]["NodeResourcesFit"] == 50
    assert why["margins"][names[1]]["NodeResourcesBalancedAllocation"] == 0


def test_metrics_by_hand(tmp_path):
    cluster, incoming = two_nodes(tmp_path)
    code, out, _ = kplan("compare", incoming, "-f", cluster, "--config", LEAST, "--config", MOST, "-o", "json")
    least, most = (v["metrics"] for v in json.loads(out)["variants"])
    # LeastAllocated: node1 1/4, node2 2/4 of cpu and of memory.
    assert least["nodesUsed"] == 2 and least["nodesEmpty"] == 0 and least["nodesUsedByRun"] == 1
    assert least["requestedRatio"]["cpu"] == {"mean": 0.375, "stddev": 0.125, "max": 0.5}
    assert least["requestedRatio"]["memory"] == {"mean": 0.375, "stddev": 0.125, "max": 0.5}
    assert least["largestFree"] == {"cpu": "3", "memory": "3Gi"}
    assert least["zones"] == {"zone-a": 1, "zone-b": 0} and least["zoneSkew"] == {"Pod/default/incoming": 1}
    # MostAllocated: node1 empty, node2 3/4.
    assert most["nodesUsed"] == 1 and most["nodesEmpty"] == 1
    assert most["requestedRatio"]["cpu"] == {"mean": 0.375, "stddev": 0.375, "max": 0.75}
    assert most["largestFree"] == {"cpu": "4", "memory": "4Gi"}
    assert most["zones"] == {"zone-a": 0, "zone-b": 1}


def test_table_shows_differing_pods_and_figures(tmp_path):
    cluster, incoming = two_nodes(tmp_path)
    code, out, _ = kplan("compare", incoming, "-f", cluster, "--config", LEAST, "--config", MOST)
    assert code == 0
    assert "default/incoming" in out and "most-allocated.yaml: NodeResourcesFit" in out
    assert "1 of 1 pod(s) placed differently" in out
    assert "Nodes used / empty" in out and "2 / 0" in out and "1 / 1" in out


def test_releases_differ_in_balanced_allocation(tmp_path):
    """node1 4 CPUs and 4000 bytes, empty; node2 4 CPUs and 8000 bytes with 2000 bytes requested. The pod asks
    1 CPU and 1000 bytes. Only BalancedAllocation scores. v1.35 (balance after placement): node1 100,
    node2 (1 - |0.25 - 0.375| / 2) * 100 = 93. v1.36 (change of balance): node1 50 + (50 + 100 - 100) / 2
    = 75, node2 50 + (50 + 93 - 87) / 2 = 78."""
    cluster = write(tmp_path, "cluster.yaml", node("node1", "4", "4000"), node("node2", "4", "8000"),
                    pod("running", "0", "2000", "node2"))
    incoming = write(tmp_path, "pod.yaml", pod("incoming", "1", "1000"))
    config = write(tmp_path, "balanced.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\n"
                   "kind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: default-scheduler\n"
                   "  plugins:\n    score:\n      disabled:\n      - name: NodeResourcesFit\n")
    code, out, err = kplan("compare", incoming, "-f", cluster, "--config", config,
                           "--kube-version", "1.35", "--kube-version", "1.36", "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    assert [(v["name"], v["kubeVersion"]) for v in report["variants"]] == [("1.35", "1.35"), ("1.36", "1.36")]
    (entry,) = report["pods"]
    assert entry["placements"]["1.35"]["node"] == "node1" and entry["placements"]["1.36"]["node"] == "node2"
    (why,) = entry["explanations"]
    assert why["decidedBy"] == "NodeResourcesBalancedAllocation"
    assert why["margins"]["1.35"]["NodeResourcesBalancedAllocation"] == 93 - 100
    assert why["margins"]["1.36"]["NodeResourcesBalancedAllocation"] == 78 - 75


def drain_cluster(tmp_path):
    """n1, n2, n3 with 4 CPUs and 4Gi; `old` (1 CPU, 1Gi) runs on n2."""
    return write(tmp_path, "cluster.yaml", node("n1", "4", "4Gi"), node("n2", "4", "4Gi"), node("n3", "4", "4Gi"),
                 pod("old", "1", "1Gi", "n2"))


def test_drain_variant(tmp_path):
    """As it is, the pod goes to n1 (n1 and n3 tie at the top, n1 first by name). Draining n2 puts `old` on n1
    (the same tie), so the pod goes to n3: NodeResourcesFit 75 against n1's 50 (with n2 cordoned)."""
    cluster = drain_cluster(tmp_path)
    incoming = write(tmp_path, "pod.yaml", pod("incoming", "1", "1Gi"))
    code, out, err = kplan("compare", incoming, "-f", cluster, "--variant", "as-is=",
                           "--variant", "drained=--drain n2", "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    asis, drained = report["variants"]
    assert drained["flags"] == "--drain n2" and "nodeChanges" in drained and "nodeChanges" not in asis
    (entry,) = report["pods"]
    assert entry["placements"] == {"as-is": {"outcome": "Scheduled", "node": "n1"},
                                   "drained": {"outcome": "Scheduled", "node": "n3"}}
    assert entry["explanations"][0]["decidedBy"] == "NodeResourcesFit"
    assert drained["metrics"]["nodesEmpty"] == 1 and asis["metrics"]["nodesEmpty"] == 1
    assert "what-if (drained)" in err


def test_a_variant_that_leaves_a_pod_out_exits_1(tmp_path):
    cluster = drain_cluster(tmp_path)
    incoming = write(tmp_path, "pod.yaml", pod("incoming", "1", "1Gi"))
    code, out, _ = kplan("compare", incoming, "-f", cluster, "--variant", "as-is=",
                         "--variant", "gone=--remove-node n1 --remove-node n3 --cordon=n2", "-o", "json")
    assert code == 1
    (entry,) = json.loads(out)["pods"]
    assert entry["placements"]["gone"]["outcome"] == "Unschedulable"
    assert entry["placements"]["gone"]["plugin"] == "NodeUnschedulable"
    # n2 is the one node left, cordoned: kube-scheduler's FitError message, the PostFilter plugins'
    # (DynamicResources, DefaultPreemption) messages after it.
    assert entry["placements"]["gone"]["message"] == (
        "0/1 nodes are available: 1 node(s) were unschedulable. no new claims to deallocate, preemption: "
        "0/1 nodes are available: 1 Preemption is not helpful for scheduling.")


def test_bad_variants_exit_2_with_one_line(tmp_path):
    cluster, incoming = two_nodes(tmp_path)
    cases = [(["--variant", "a=--snapshot other.yaml", "--variant", "b="], "'--snapshot' is not a variant flag"),
             (["--variant", "no-equals-sign", "--variant", "b="], "expected NAME=FLAGS"),
             (["--variant", "a=--config", "--variant", "b="], "--config needs a value"),
             (["--variant", "a='unclosed", "--variant", "b="], "cannot split"),
             (["--variant", "a=--profile x --profile y", "--variant", "b="], "--profile given twice"),
             (["--variant", "a=", "--variant", "a="], "two variants are named 'a'"),
             (["--config", LEAST], "nothing to compare"),
             (["--variant", "a="], "nothing to compare: give two or more variants"),
             (["--variant", "a=", "--variant", "b=", "--config", LEAST, "--config", LEAST],
              "--variant excludes several --config or --kube-version: put them in the variants")]
    for args, message in cases:
        code, out, err = kplan("compare", incoming, "-f", cluster, *args)
        assert code == 2, (args, err)
        assert len(err.strip().splitlines()) == 1 and message in err, (args, err)
        assert "Traceback" not in err
    # The whole line, for one of them.
    code, _, err = kplan("compare", incoming, "-f", cluster, "--variant", "a=")
    assert err == "kplan: error: nothing to compare: give two or more variants\n"


def test_each_variant_places_as_kplan_check_does():
    """The variants share the snapshot (and, without node changes, a copy of one node table): each must
    still place every pod where `kplan check` with that variant's flags places it."""
    manifests = ["samples/check/apps.yaml", "samples/compare/web.yaml"]
    variants = {"least": ["--config", LEAST], "most": ["--config", MOST],
                "old": ["--config", MOST, "--kube-version", "1.35"], "drained": ["--drain", "node-a1"]}
    args = [a for name, flags in variants.items() for a in ("--variant", f"{name}={' '.join(flags)}")]
    code, out, err = kplan("compare", *manifests, "-f", "samples/cluster.yaml", *args, "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    for name, flags in variants.items():
        code, out, err = kplan("check", *manifests, "-f", "samples/cluster.yaml", *flags, "-o", "json")
        assert code == 0, err
        expected = [(p["pod"], p["outcome"], p["node"]) for p in json.loads(out)["placements"]]
        got = [(p["pod"], p["placements"][name]["outcome"], p["placements"][name]["node"]) for p in report["pods"]]
        assert got == expected, name


def test_daemonset_pods_match_by_node(tmp_path):
    """A DaemonSet has a pod per node: removing n3 leaves its pod uncreated, the others stay put."""
    cluster = drain_cluster(tmp_path)
    ds = write(tmp_path, "ds.yaml", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: "
               "default}\nspec:\n  selector: {matchLabels: {app: agent}}\n  template:\n    metadata: {labels: "
               "{app: agent}}\n    spec:\n      containers: [{name: a, image: a}]\n")
    code, out, err = kplan("compare", ds, "-f", cluster, "--variant", "all=", "--variant", "less=--remove-node n3",
                           "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    rows = [(p["placements"]["all"]["node"], p["placements"]["less"]) for p in report["pods"]]
    assert rows == [("n1", {"outcome": "Scheduled", "node": "n1"}), ("n2", {"outcome": "Scheduled", "node": "n2"}),
                    ("n3", {"outcome": "NotCreated", "node": None})]
    assert report["differing"] == 1 and [v["summary"]["pods"] for v in report["variants"]] == [3, 2]
