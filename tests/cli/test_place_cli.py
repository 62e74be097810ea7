"""`kplan place` through the real entry point: exit codes, the JSON contract, bad input."""
import json
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
import yaml

from run_kplan import run_kplan

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
CLUSTER = str(SAMPLES / "cluster.yaml")


kplan = partial(run_kplan, columns=120)


def test_burstable_pod_json_contract():
    code, out, _ = kplan("place", "samples/pod-burstable.yaml", "-f", CLUSTER, "-o", "json")
    assert code == 0
    report = json.loads(out)
    assert report["apiVersion"] == "kplan/v1alpha1" and report["kind"] == "PlacementReport"
    assert report["summary"] == {"pods": 1, "scheduled": 1, "needsPreemption": 0, "unschedulable": 0}
    (p,) = report["placements"]
    assert p["pod"] == "shop/web-new" and p["outcome"] == "Scheduled" and p["message"] == ""
    assert p["weights"] == {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "VolumeBinding": 1,
                            "PodTopologySpread": 2, "InterPodAffinity": 2,
                            "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1}
    feasible = [n for n in p["nodes"] if n["feasible"]]
    assert [n["rank"] for n in feasible] == list(range(1, len(feasible) + 1))
    assert p["node"] == feasible[0]["name"]
    for n in feasible:
        assert n["totalScore"] == sum(p["weights"][k] * v for k, v in n["scores"].items())
        assert all(0 <= v <= 100 for v in n["scores"].values())
    # By hand, v1.36 defaults (weights above; TaintToleration 100 on every untainted node, ImageLocality 0
    # as web:1.4's 120 MiB spread over 1 of 6 nodes is below the 23 MiB floor):
    #   NodeResourcesFit, LeastAllocated: mean over cpu and memory of (allocatable - requested) * 100 / allocatable,
    #     with the pod (500m, 1Gi): node-c1 (2100m of 3920m, 4224Mi of 15Gi) -> (46 + 72) / 2 = 59;
    #     node-b1 (2100m, 9344Mi) -> (46 + 39) / 2 = 42; node-c2 (4600m of 7910m, 42112Mi of 62Gi) -> (41 + 33) / 2
    #     = 37; node-a1 (3100m, 6272Mi) -> (20 + 59) / 2 = 39.
    #   NodeResourcesBalancedAllocation, the change of balance: 50 + (50 + balance after - balance before) / 2 with
    #     balance = trunc(100 * (1 - |cpu share - memory share| / 2)): node-c1 50 + (50 + 86 - 90) / 2 = 73,
    #     node-b1 50 + (50 + 96 - 93) / 2 = 76, node-c2 50 + (50 + 95 - 93) / 2 = 76,
    #     node-a1 50 + (50 + 80 - 83) / 2 = 73.
    assert [(n["name"], n["totalScore"]) for n in feasible] == [
        ("node-c1", 300 + 59 + 73), ("node-b1", 300 + 42 + 76), ("node-c2", 300 + 37 + 76), ("node-a1", 300 + 39 + 73)]
    rejected = {n["name"]: (n["plugin"], n["reasons"]) for n in p["nodes"] if not n["feasible"]}
    assert rejected == {"node-b2": ("NodeUnschedulable", ["node(s) were unschedulable"]),
                        "gpu-a1": ("TaintToleration", ["node(s) had untolerated taint(s)"])}
    assert p["preemption"] is None and p["candidates"] == []


def test_unschedulable_pod_gives_kube_scheduler_message_and_exit_1():
    code, out, _ = kplan("place", "samples/pod-too-big.yaml", "-f", CLUSTER, "-o", "json")
    assert code == 1
    (p,) = json.loads(out)["placements"]
    assert p["outcome"] == "Unschedulable" and p["node"] is None
    # Every rejection is UnschedulableAndUnresolvable (the requests exceed each node's whole
    # allocatable), so DefaultPreemption finds no candidate and says so after the filter histogram,
    # behind DynamicResources' answer for a pod without claims (it runs first since v1.34).
    assert p["message"] == ("0/6 nodes are available: 1 node(s) had untolerated taint(s), "
                            "1 node(s) were unschedulable, 4 Insufficient cpu, 4 Insufficient memory. "
                            "no new claims to deallocate, "
                            "preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling.")
    assert p["postFilter"]["plugin"] == "DynamicResources" and p["postFilter"]["code"] == "Unschedulable"


def test_gpu_pod_without_toleration_is_rejected_by_the_taint():
    code, out, _ = kplan("place", "samples/pod-gpu-no-toleration.yaml", "-f", CLUSTER, "-o", "json")
    assert code == 1
    nodes = {n["name"]: n for n in json.loads(out)["placements"][0]["nodes"]}
    assert nodes["gpu-a1"]["plugin"] == "TaintToleration"


def test_unschedulable_pod_gets_the_nearest_nodes_and_hints_as_pending_gives_them(tmp_path):
    # train-1 asks cpu 2, memory 8Gi and a GPU, without the GPU node's toleration. gpu-a1 lacks only
    # the toleration; node-a1 has 3920m - 2600m = 1320m cpu free (680m short), node-b1 15Gi - 8320Mi
    # memory free (1152Mi short: 1.2Gi rounded up), and neither has a GPU.
    code, out, _ = kplan("place", "samples/pod-gpu-no-toleration.yaml", "samples/pod-burstable.yaml", "-f", CLUSTER,
                         "-o", "json")
    assert code == 1
    train, web = json.loads(out)["placements"]
    assert [n["node"] for n in train["nearest"]] == ["gpu-a1", "node-a1", "node-b1"]
    assert [lack["text"] for lack in train["nearest"][0]["lacks"]] == [
        "taint nvidia.com/gpu=present:NoSchedule not tolerated"]
    assert train["nearest"][1]["lacks"][0]["text"] == ("680m cpu short; nvidia.com/gpu request 1 exceeds its "
                                                       "allocatable 0")
    assert train["nearest"][2]["shortfall"] == {"memory": "1152Mi", "nvidia.com/gpu": "1"}
    assert train["hints"] == ["gpu-a1 would fit if the pod tolerated nvidia.com/gpu=present:NoSchedule"]
    assert "nearest" not in web and "hints" not in web  # scheduled: nothing to explain
    code, out, _ = kplan("place", "samples/pod-gpu-no-toleration.yaml", "-f", CLUSTER)
    lines = out.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("NEAREST NODE"))
    assert lines[start].split()[:5] == ["NEAREST", "NODE", "PLUGIN", "WHAT", "IT"]
    assert lines[start + 1].split()[:3] == ["gpu-a1", "TaintToleration", "taint"]
    assert "  hint: gpu-a1 would fit if the pod tolerated nvidia.com/gpu=present:NoSchedule" in lines
    # The same analysis as `kplan pending`: the pod pending in the cluster gets the same answer.
    pending = yaml.safe_load((SAMPLES / "pod-gpu-no-toleration.yaml").read_text())
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text((SAMPLES / "cluster.yaml").read_text() + "\n---\n" + yaml.safe_dump(pending))
    code, out, _ = kplan("pending", "-f", str(snapshot), "-n", "analytics", "-o", "json")
    (entry,) = json.loads(out)["pods"]
    assert (entry["nearest"], entry["hints"]) == (train["nearest"], train["hints"])


def test_pods_are_placed_in_sequence_each_seeing_the_previous(tmp_path):
    # Two GPU pods fit on the 2-GPU node that already runs one GPU pod: only the first lands.
    second = yaml.safe_load((SAMPLES / "pod-gpu.yaml").read_text())
    second["metadata"]["name"] = "train-3"
    (tmp_path / "second.yaml").write_text(yaml.safe_dump(second))
    code, out, _ = kplan("place", "samples/pod-gpu.yaml", str(tmp_path / "second.yaml"), "-f", CLUSTER, "-o", "json")
    assert code == 1
    first, then = json.loads(out)["placements"]
    assert first["node"] == "gpu-a1" and then["outcome"] == "Unschedulable"
    # The four general nodes have no GPU, gpu-a1 has none left; node-a1 is also short of cpu (2600m + 2 of
    # 3920m) and node-b1 of memory (8320Mi + 8Gi of 15Gi); node-b2 is cordoned. Only gpu-a1 is worth a
    # preemption, and it runs nothing of lower priority than the pod's 0.
    assert then["message"] == (
        "0/6 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 node(s) were unschedulable, "
        "5 Insufficient nvidia.com/gpu. no new claims to deallocate, preemption: 0/6 nodes are available: "
        "1 No preemption victims found for incoming pod, 5 Preemption is not helpful for scheduling.")


def test_yaml_output_and_table_output():
    code, out, _ = kplan("place", "samples/pod-burstable.yaml", "-f", CLUSTER, "-o", "yaml")
    assert code == 0 and yaml.safe_load(out)["kind"] == "PlacementReport"
    code, out, _ = kplan("place", "samples/pod-too-big.yaml", "-f", CLUSTER)
    assert code == 1
    assert "Unschedulable: 0/6 nodes are available" in out
    assert "NodeResourcesFit" in out and "Insufficient cpu; Insufficient memory" in out


def test_explain_node():
    code, out, _ = kplan("place", "samples/pod-burstable.yaml", "-f", CLUSTER, "-o", "json", "--explain", "gpu-a1")
    explained = json.loads(out)["placements"][0]["explain"][0]
    assert explained["feasible"] is False and explained["plugin"] == "TaintToleration"


def test_same_input_same_bytes():
    runs = {kplan("place", "samples/pod-burstable.yaml", "-f", CLUSTER, "-o", "json")[1] for _ in range(2)}
    assert len(runs) == 1


@pytest.mark.parametrize("args,message", [
    (["place", "samples/pod-burstable.yaml", "-f", "missing.yaml"], "missing.yaml: no such file or directory"),
    (["place", "samples/pod-burstable.yaml"], "no cluster state given"),
    (["place", "samples/cluster.yaml", "-f", CLUSTER, "--explain", "nope"], "no node named 'nope'"),
    (["place", "samples/pod-burstable.yaml", "-f", CLUSTER, "--profile", "nope"], "--profile 'nope'"),
    (["place", "samples/pod-burstable.yaml", "-f", CLUSTER, "-o", "xml"], "xml"),
])
def test_usage_and_input_errors_exit_2_without_traceback(args, message):
    code, out, err = kplan(*args)
    assert code == 2
    assert message in err and "Traceback" not in err


def test_pod_file_without_pod(tmp_path):
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    code, _, err = kplan("place", str(tmp_path / "cm.yaml"), "-f", CLUSTER)
    assert code == 2 and "cm.yaml: no Pod or workload in it" in err


def test_unknown_plugin_in_config(tmp_path):
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "default-scheduler",
                         "plugins": {"score": {"enabled": [{"name": "Magic"}]}}}]}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    code, _, err = kplan("place", "samples/pod-burstable.yaml", "-f", CLUSTER, "--config", str(tmp_path / "cfg.yaml"))
    assert code == 2 and "plugin 'Magic' does not exist" in err and len(err.strip().splitlines()) == 1


def test_malformed_yaml_one_line(tmp_path):
    (tmp_path / "bad.yaml").write_text("kind: Pod\nspec: [\n")
    code, _, err = kplan("place", str(tmp_path / "bad.yaml"), "-f", CLUSTER)
    assert code == 2 and "bad.yaml: malformed YAML at line" in err and len(err.strip().splitlines()) == 1


def test_stdin_snapshot():
    code, out, _ = kplan("place", "samples/pod-burstable.yaml", "-f", "-", "-o", "json",
                         stdin=(SAMPLES / "cluster.yaml").read_text())
    assert code == 0 and json.loads(out)["placements"][0]["outcome"] == "Scheduled"


def test_kubectl_plugin_name_in_usage():
    proc = subprocess.run([sys.executable, "-c", "import sys; sys.argv[0] = 'kubectl-kplan'; "
                                                 "from kplan.cli.app import main; main()", "--help"],
                          capture_output=True, text=True, env={"COLUMNS": "120", "PATH": "/usr/bin:/bin"}, cwd=ROOT)
    assert proc.returncode == 0 and "kubectl kplan" in proc.stdout


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_goes_before_or_after_the_command(where):
    # A global flag, as kubectl takes them: `kplan --debug place ...` and `kplan place ... --debug`.
    args = ["place", "samples/missing.yaml", "-f", CLUSTER]
    args = ["--debug", *args] if where == "before" else [*args, "--debug"]
    code, _, err = kplan(*args)
    assert "No such option" not in err
    assert "Traceback" in err and "InputError: samples/missing.yaml: no such file or directory" in err
    code, _, err = kplan("place", "samples/missing.yaml", "-f", CLUSTER)
    assert code == 2 and "Traceback" not in err


def test_global_flags_are_taken_before_a_double_dash():
    from kplan.cli.app import global_flags
    assert global_flags(["place", "p.yaml", "--debug", "-f", "c.yaml"]) == (["place", "p.yaml", "-f", "c.yaml"], True)
    assert global_flags(["place", "--", "--debug"]) == (["place", "--", "--debug"], False)
