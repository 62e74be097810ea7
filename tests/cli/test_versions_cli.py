"""--kube-version and the snapshot's recorded server version, through the CLI."""
import json
from pathlib import Path

import yaml

from run_kplan import kplan, run_kplan

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "samples/versions/cluster.yaml"
POD = "samples/versions/pod.yaml"


def place(*args):
    return kplan(["place", POD, "-o", "json", *args])


def balanced_scores(out):
    report = json.loads(out)
    nodes = report["placements"][0]["nodes"]
    return report["kubeVersion"], {n["name"]: n["scores"]["NodeResourcesBalancedAllocation"] for n in nodes}


def test_balanced_allocation_differently_sized_nodes_both_releases():
    # v1.35's table (balanced_allocation_test.go): 87 and 100; v1.36's balance-change formula: 68 and 75.
    assert balanced_scores(place("-f", CLUSTER, "--kube-version", "1.35")[1]) == ("1.35", {"node1": 87, "node2": 100})
    assert balanced_scores(place("-f", CLUSTER)[1]) == ("1.36", {"node1": 68, "node2": 75})


def test_snapshot_recorded_version_is_the_default(tmp_path):
    header = {"apiVersion": "kplan/v1alpha1", "kind": "KplanSnapshot",
              "metadata": {"context": "prod", "kubeVersion": "v1.35.4"}}
    snap = tmp_path / "snap.yaml"
    snap.write_text(yaml.safe_dump(header) + "---\n" + (ROOT / CLUSTER).read_text())
    assert balanced_scores(place("-f", str(snap))[1])[0] == "1.35.4"
    assert balanced_scores(place("-f", str(snap), "--kube-version", "1.36")[1])[0] == "1.36"


def test_unsupported_version_exit_2():
    for bad in ("1.12", "banana", "1.32.9", "1.37.1"):
        code, _, err = place("-f", CLUSTER, "--kube-version", bad)
        assert code == 2 and "--kube-version" in err and "Traceback" not in err


def test_snapshot_from_a_newer_server_answers_as_the_newest_known_release_with_a_warning(tmp_path):
    header = {"apiVersion": "kplan/v1alpha1", "kind": "KplanSnapshot", "metadata": {"kubeVersion": "v1.40.1"}}
    snap = tmp_path / "snap.yaml"
    snap.write_text(yaml.safe_dump(header) + "---\n" + (ROOT / CLUSTER).read_text())
    code, out, err = place("-f", str(snap))
    assert code == 0 and balanced_scores(out)[0] == "1.36"
    assert "the snapshot's server runs v1.40.1" in err and "1.36" in err


def test_other_simulating_commands_take_the_version():
    def run(*args):
        code, _, err = kplan(args)
        return code, err

    assert run("nodes", "-f", CLUSTER, "--after", POD, "--kube-version", "1.35")[0] == 0
    code, err = run("nodes", "-f", CLUSTER, "--kube-version", "1.35")
    assert code == 2 and "--kube-version goes with --after" in err
    code, err = run("quota", "check", "-f", "samples/quota/story1/cluster.yaml",
                    "samples/quota/story1/b-3-gpus.yaml", "--kube-version", "1.12")
    assert code == 2 and "--kube-version 1.12" in err


def test_pod_level_resources_count_from_1_34():
    # PodLevelResources went beta (on by default) in v1.34: the pod-level 5 CPUs replace the containers'
    # 1 CPU (TestPodInfoCalculateResources, "pod-level requests" cases); v1.33 ignores spec.resources.
    def nodes(version):
        out = kplan(["place", "samples/versions/pod-level.yaml", "-f", CLUSTER, "--kube-version", version,
                     "-o", "json"])[1]
        p = json.loads(out)["placements"][0]
        return p["podInfo"]["requests"]["cpu"], {n["name"]: n["feasible"] for n in p["nodes"]}

    assert nodes("1.33") == ("1", {"node1": True, "node2": True})
    assert nodes("1.34") == ("5", {"node1": False, "node2": True})


# TestNodePorts, "TCP hostPort conflict from sidecar initContainer": a bound pod holds host port 8001
# and the incoming pod's sidecar asks for it. v1.34.0 (kubernetes#132040) and v1.33.6 (its cherry-pick
# kubernetes#133390) reject the node; v1.33.5 and earlier see no port on the incoming pod.
PORTS_CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: m1, labels: {kubernetes.io/hostname: m1}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: existing, namespace: default}
spec:
  nodeName: m1
  containers:
  - {name: c, image: app:1, ports: [{containerPort: 8001, hostPort: 8001, protocol: TCP}]}
status: {phase: Running}
"""
SIDECAR_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: incoming, namespace: default}
spec:
  initContainers:
  - {name: sidecar, image: proxy:1, restartPolicy: Always,
     ports: [{containerPort: 8001, hostPort: 8001, protocol: TCP}]}
  containers:
  - {name: main, image: app:1}
"""


def place_sidecar(tmp_path, *args, header=None):
    """Places the sidecar pod; returns the kubeVersion answered as and NodePorts' reasons on m1."""
    cluster_file, pod_file = tmp_path / "cluster.yaml", tmp_path / "pod.yaml"
    cluster_file.write_text((yaml.safe_dump(header) + "---\n" if header else "") + PORTS_CLUSTER)
    pod_file.write_text(SIDECAR_POD)
    report = json.loads(kplan(["place", str(pod_file), "-f", str(cluster_file), "-o", "json", *args])[1])
    (m1,) = report["placements"][0]["nodes"]
    return report["kubeVersion"], m1["reasons"] if m1.get("plugin") == "NodePorts" else []


PORTS_TAKEN = ["node(s) didn't have free ports for the requested pod ports"]


def test_sidecar_host_ports_by_1_33_patch_release(tmp_path):
    assert place_sidecar(tmp_path, "--kube-version", "1.33.5") == ("1.33.5", [])
    assert place_sidecar(tmp_path, "--kube-version", "v1.33.6") == ("1.33.6", PORTS_TAKEN)
    assert place_sidecar(tmp_path, "--kube-version", "1.34.0") == ("1.34.0", PORTS_TAKEN)
    # A minor alone answers as its first release, 1.33.0, which has no backports.
    assert place_sidecar(tmp_path, "--kube-version", "1.33") == ("1.33", [])


def test_snapshot_recorded_patch_release_is_answered_as(tmp_path):
    def header(version):
        return {"apiVersion": "kplan/v1alpha1", "kind": "KplanSnapshot", "metadata": {"kubeVersion": version}}

    assert place_sidecar(tmp_path, header=header("v1.33.6")) == ("1.33.6", PORTS_TAKEN)
    assert place_sidecar(tmp_path, header=header("v1.33.5")) == ("1.33.5", [])
    assert place_sidecar(tmp_path, "--kube-version", "1.33.5", header=header("v1.33.6")) == ("1.33.5", [])


def test_taint_reason_by_1_34_patch_release():
    # TestTaintTolerationFilter's untolerated-taint case on release-1.34: v1.34.1 names the taint,
    # v1.34.2 (kubernetes#135023, the cherry-pick of kubernetes#134740) gives the generic reason.
    def run(version, output):
        return kplan(["place", "samples/pod-gpu-no-toleration.yaml", "-f", "samples/cluster.yaml",
                      "--kube-version", version, "-o", output])[1]

    def taint_reasons(version):
        report = json.loads(run(version, "json"))
        nodes = report["placements"][0]["nodes"]
        return report["kubeVersion"], [n["reasons"] for n in nodes if n.get("plugin") == "TaintToleration"]

    named = "node(s) had untolerated taint {nvidia.com/gpu: present}"
    assert taint_reasons("1.34.1") == ("1.34.1", [[named]])
    assert taint_reasons("1.34.2") == ("1.34.2", [["node(s) had untolerated taint(s)"]])
    assert "Answered as kube-scheduler 1.34.2 would." in run("1.34.2", "table")


def test_nodes_count_existing_pods_as_the_snapshots_release(tmp_path):
    """`kplan nodes` shows a node's requests as the snapshot's server counts its pods: a bound pod
    with pod-level resources holds the containers' 1 CPU on v1.33 and the pod's 5 CPUs on v1.34."""
    bound = yaml.safe_load((ROOT / "samples/versions/pod-level.yaml").read_text())
    bound["spec"]["nodeName"] = "node2"
    bound["status"] = {"phase": "Running"}

    def node2_cpu(version):
        header = {"apiVersion": "kplan/v1alpha1", "kind": "KplanSnapshot", "metadata": {"kubeVersion": version}}
        snap = tmp_path / f"snap-{version}.yaml"
        snap.write_text(yaml.safe_dump(header) + "---\n" + (ROOT / CLUSTER).read_text() + "\n---\n"
                        + yaml.safe_dump(bound))
        out = kplan(["nodes", "-f", str(snap), "-o", "json"])[1]
        return {n["name"]: n["requests"]["cpu"] for n in json.loads(out)["nodes"]}["node2"]

    assert node2_cpu("v1.33.4") == "1"
    assert node2_cpu("v1.34.1") == "5"


# A `kubectl get -o json` dump records no server version: kplan answers as the newest kubelet's release
# (kubelets never lead the control plane), vendor suffix dropped, and says so.
NODE_NAMES = ("node-a1", "node-b1", "node-c1", "node-c2", "gpu-a1", "node-b2")


def kubectl_dump(tmp_path, kubelets, header=None, base="samples/cluster.yaml", name="dump.json"):
    """Writes `base` as `kubectl get -o json` would (a kind: List), each node named in `kubelets`
    reporting that status.nodeInfo.kubeletVersion; a KplanSnapshot header first when given."""
    items = [doc for doc in yaml.safe_load_all((ROOT / base).read_text()) if doc]
    for item in items:
        if item["kind"] == "Node" and item["metadata"]["name"] in kubelets:
            item.setdefault("status", {})["nodeInfo"] = {"kubeletVersion": kubelets[item["metadata"]["name"]],
                                                         "containerRuntimeVersion": "containerd://2.0.0"}
    if header:
        items.insert(0, {"apiVersion": "kplan/v1alpha1", "kind": "KplanSnapshot", "metadata": header})
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def release_of(out):
    report = json.loads(out)
    return report["kubeVersion"], report["kubeVersionSource"], report.get("kubeletVersion")


MIXED = {"node-a1": "v1.33.4", "node-b1": "v1.34.2-eks-xyz", "node-c1": "v1.33.4", "node-c2": "v1.34.1",
         "gpu-a1": "v1.33.4", "node-b2": "v1.34.2-eks-xyz"}
PLACE_GPU = ("place", "samples/pod-gpu-no-toleration.yaml", "-f")


def test_dump_without_server_version_answers_as_the_newest_kubelet(tmp_path):
    dump = kubectl_dump(tmp_path, MIXED)
    code, out, err = run_kplan(*PLACE_GPU, dump, "-o", "json")
    assert code == 1 and release_of(out) == ("1.34.2", "kubelet", "v1.34.2-eks-xyz")
    assert "warning" not in err
    _, table, _ = run_kplan(*PLACE_GPU, dump)
    assert ("Answered as kube-scheduler 1.34.2 would, inferred from kubelet versions (newest v1.34.2-eks-xyz; "
            "the snapshot records no server version); --kube-version overrides.") in table


def test_recorded_server_version_wins_over_kubelets(tmp_path):
    dump = kubectl_dump(tmp_path, MIXED, header={"kubeVersion": "v1.35.4"})
    code, out, _ = run_kplan(*PLACE_GPU, dump, "-o", "json")
    assert release_of(out) == ("1.35.4", "snapshot", None)
    assert "Answered as kube-scheduler 1.35.4 would." in run_kplan(*PLACE_GPU, dump)[1]


def test_kube_version_flag_overrides_recorded_and_inferred(tmp_path):
    inferred = kubectl_dump(tmp_path, MIXED)
    recorded = kubectl_dump(tmp_path, MIXED, header={"kubeVersion": "v1.35.4"}, name="recorded.json")
    for dump in (inferred, recorded):
        assert release_of(run_kplan(*PLACE_GPU, dump, "-o", "json", "--kube-version", "1.33.5")[1]) == \
            ("1.33.5", "flag", None)


def test_dump_without_kubelet_versions_answers_as_the_newest_release_as_before():
    code, out, err = run_kplan(*PLACE_GPU, "samples/cluster.yaml", "-o", "json")
    assert release_of(out) == ("1.36", "default", None) and "warning" not in err
    assert run_kplan(*PLACE_GPU, "samples/cluster.yaml")[1].rstrip().endswith("Answered as kube-scheduler 1.36 would.")


def test_inferred_release_changes_the_taint_reason(tmp_path):
    # TaintToleration names the taint up to v1.34.1 and gives the generic reason from v1.34.2
    # (kubernetes#135023): a cluster whose newest kubelet is v1.34.1 gets the old reason, one with a
    # v1.34.2 kubelet the new one, where the default (1.36) would give the new one to both.
    def gpu_reasons(kubelets, *args):
        out = run_kplan(*PLACE_GPU, kubectl_dump(tmp_path, kubelets, name=f"d{len(args)}.json"), "-o", "json",
                        *args)[1]
        report = json.loads(out)
        (gpu,) = [n for n in report["placements"][0]["nodes"] if n["name"] == "gpu-a1"]
        return report["kubeVersion"], gpu["plugin"], gpu["reasons"]

    old = {name: "v1.34.1+k3s1" for name in NODE_NAMES}
    named = ["node(s) had untolerated taint {nvidia.com/gpu: present}"]
    assert gpu_reasons(old) == ("1.34.1", "TaintToleration", named)
    assert gpu_reasons(MIXED) == ("1.34.2", "TaintToleration", ["node(s) had untolerated taint(s)"])
    assert gpu_reasons(old, "--kube-version", "1.35") == ("1.35", "TaintToleration",
                                                          ["node(s) had untolerated taint(s)"])


def test_kubelets_outside_the_known_releases_answer_as_the_nearest_with_a_warning(tmp_path):
    # As for a recorded server version: the nearest minor kplan knows, its first release, with a warning.
    for kubelet, nearest in (("v1.29.4-gke.1000", "1.33"), ("v1.38.1", "1.36")):
        dump = kubectl_dump(tmp_path, {"node-a1": "v1.28.9", "node-b1": kubelet})
        code, out, err = run_kplan(*PLACE_GPU, dump, "-o", "json")
        assert release_of(out) == (nearest, "kubelet", kubelet)
        assert (f"the snapshot records no server version and its newest kubelet runs {kubelet}; kplan answers as "
                f"kube-scheduler {nearest}, the nearest release it knows (--kube-version overrides)") in err
        assert (f"Answered as kube-scheduler {nearest} would, the nearest release kplan knows to the kubelet "
                f"versions (newest {kubelet}; ") in run_kplan(*PLACE_GPU, dump)[1]


def test_nodes_without_a_usable_kubelet_version_are_left_out_and_counted(tmp_path):
    dump = kubectl_dump(tmp_path, {"node-a1": "v1.34.1", "node-b1": "banana", "node-c1": ""})
    code, out, err = run_kplan(*PLACE_GPU, dump, "-o", "json")
    assert release_of(out) == ("1.34.1", "kubelet", "v1.34.1")
    # node-b1's and node-c1's unusable versions and the three nodes reporting none.
    assert "kplan: warning: 5 node(s) report no kubelet version" in err
    # With a recorded server version the kubelets are not read, so nothing is said about them.
    dump = kubectl_dump(tmp_path, {"node-a1": "v1.34.1", "node-b1": "banana"}, header={"kubeVersion": "v1.35.0"},
                        name="recorded.json")
    assert "kubelet" not in run_kplan(*PLACE_GPU, dump, "-o", "json")[2]


def test_check_and_capacity_answer_as_the_inferred_release_and_say_so(tmp_path):
    dump = kubectl_dump(tmp_path, MIXED)
    code, out, _ = run_kplan("check", "samples/pod-gpu-no-toleration.yaml", "-f", dump, "-o", "json")
    assert code == 1 and release_of(out) == ("1.34.2", "kubelet", "v1.34.2-eks-xyz")
    assert "inferred from kubelet versions" in run_kplan("check", "samples/pod-gpu-no-toleration.yaml", "-f", dump)[1]
    code, out, _ = run_kplan("capacity", "samples/pod-burstable.yaml", "-f", dump, "-o", "json", "--max", "1")
    assert release_of(out) == ("1.34.2", "kubelet", "v1.34.2-eks-xyz")
    assert "inferred from kubelet versions" in run_kplan("capacity", "samples/pod-burstable.yaml", "-f", dump,
                                                         "--max", "1")[1]
    code, out, _ = run_kplan("check", "samples/pod-gpu-no-toleration.yaml", "-f", "samples/cluster.yaml", "-o", "json")
    assert release_of(out) == ("1.36", "default", None)


def test_nodes_count_existing_pods_as_the_inferred_release(tmp_path):
    """As test_nodes_count_existing_pods_as_the_snapshots_release, with the release read from the kubelets."""
    bound = yaml.safe_load((ROOT / "samples/versions/pod-level.yaml").read_text())
    bound["spec"]["nodeName"] = "node2"
    bound["status"] = {"phase": "Running"}
    base = tmp_path / "base.yaml"
    base.write_text((ROOT / CLUSTER).read_text() + "\n---\n" + yaml.safe_dump(bound))

    def node2_cpu(kubelet):
        dump = kubectl_dump(tmp_path, {"node1": kubelet, "node2": kubelet}, base=str(base), name=f"{kubelet}.json")
        out = run_kplan("nodes", "-f", dump, "-o", "json")[1]
        return {n["name"]: n["requests"]["cpu"] for n in json.loads(out)["nodes"]}["node2"]

    assert node2_cpu("v1.33.4-eks-abc") == "1"
    assert node2_cpu("v1.34.1") == "5"
