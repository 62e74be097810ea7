"""`kplan check` and `kplan capacity` through the real entry point: exit codes, JSON, JUnit, GitHub output."""
import json
import xml.etree.ElementTree as ET
from functools import partial

import pytest

from run_kplan import ROOT, run_kplan

CLUSTER = "samples/cluster.yaml"
APPS = "samples/check/apps.yaml"
TOO_BIG = "samples/check/too-big.yaml"
NODE = "samples/check/node-c-large.yaml"


kplan = partial(run_kplan, columns=200)
# The repository as GitHub's workspace, as a workflow runs kplan: files are named from it wherever the
# repository is copied (without .git, or as mutation testing's mutants/ folder);
# test_junit_file_is_a_path_ci_can_link covers a checkout's root without the variable.
WORKSPACE = str(ROOT)
ON_GITHUB = {"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": WORKSPACE}


def test_passing_manifests_exit_0_with_json_report():
    code, out, _ = kplan("check", APPS, "-f", CLUSTER, "-o", "json")
    assert code == 0
    report = json.loads(out)
    assert report["kind"] == "CheckReport" and report["apiVersion"] == "kplan/v1alpha1"
    keys = [f"{w['kind']}/{w['namespace']}/{w['name']}" for w in report["workloads"]]
    assert keys == ["Deployment/shop/api", "StatefulSet/shop/cache", "DaemonSet/kube-system/log-agent"]
    assert [(w["placed"], w["wanted"]) for w in report["workloads"]] == [(3, 3), (2, 2), (5, 5)]
    assert all(w["passed"] and w["firstFailure"] is None for w in report["workloads"])
    assert sum(report["workloads"][0]["nodes"].values()) == 3
    assert report["summary"] == {"workloads": 3, "pods": 10, "scheduled": 10, "needsPreemption": 0,
                                 "unschedulable": 0, "failed": 0}
    assert [p["pod"] for p in report["placements"]][3:5] == ["shop/cache-0", "shop/cache-1"]


def test_unschedulable_workload_exits_1_and_junit_parses_back(tmp_path):
    junit = tmp_path / "kplan.xml"
    code, out, _ = kplan("check", APPS, "--manifest", TOO_BIG, "-f", CLUSTER, "--junit", str(junit),
                         env={"GITHUB_WORKSPACE": WORKSPACE})
    assert code == 1
    assert "Job/analytics/train" in out and "0/2" in out
    root = ET.parse(junit).getroot()
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "kplan" and suite.get("tests") == "4" and suite.get("failures") == "1"
    cases = suite.findall("testcase")
    # The file CI links (no "(document N)" in it); the document's index in the test's name.
    assert [c.get("name") for c in cases] == ["Deployment/shop/api", "StatefulSet/shop/cache (document 2)",
                                              "DaemonSet/kube-system/log-agent (document 3)", "Job/analytics/train"]
    assert [c.get("file") for c in cases] == [APPS, APPS, APPS, TOO_BIG]
    assert {c.get("classname") for c in cases} == {"kplan.check"}
    assert all(c.find("failure") is None for c in cases[:3])
    failure = cases[3].find("failure")
    assert failure.get("message").startswith("0/6 nodes are available: ")
    assert "Insufficient cpu" in failure.get("message")


def test_github_annotations_and_step_summary(tmp_path):
    summary = tmp_path / "summary.md"
    code, out, _ = kplan("check", TOO_BIG, "-f", CLUSTER, env={**ON_GITHUB, "GITHUB_STEP_SUMMARY": str(summary)})
    assert code == 1
    (line,) = [ln for ln in out.splitlines() if ln.startswith("::error")]
    assert line.startswith(f"::error file={TOO_BIG},title=kplan NodeResourcesFit::Job/analytics/train: 0/2 replicas")
    assert "\n" not in line and "0/6 nodes are available" in line
    text = summary.read_text()
    assert text.startswith("### kplan check: 1 workload(s) failed") and "| Job/analytics/train | 0/2 |" in text


STORAGE = "samples/storage/cluster.yaml"
CACHE = "samples/storage/cache.yaml"
# samples/storage: cache-2's claim is bound to a volume in zone-a, whose two nodes are 500m cpu short
# (README, "Volumes"); node-b1 is in zone-b, outside the volume's node affinity.
NEAREST_LINES = [
    "nearest: node-a1: 500m cpu short (NodeResourcesFit)",
    "nearest: node-a2: 500m cpu short (NodeResourcesFit)",
]
HINT = ("hint: claim data-cache-2 is bound to volume pvc-0004 in zone-a: every node it can use is rejected "
        "(node-a1: 500m cpu short; node-a2: 500m cpu short)")


def test_failing_check_shows_nearest_nodes_and_hints_in_table_and_json():
    code, out, _ = kplan("check", CACHE, "-f", STORAGE)
    assert code == 1
    lines = out.splitlines()
    start = lines.index("StatefulSet/shop/cache, pod shop/cache-2:")
    assert [line.strip() for line in lines[start + 2:start + 4]] == NEAREST_LINES  # after the claim's line
    assert lines[start + 4].startswith("  nearest: node-b1: claim data-cache-2 is bound to volume pvc-0004")
    assert "  " + HINT in lines
    code, out, _ = kplan("check", CACHE, "-f", STORAGE, "-o", "json")
    (w,) = json.loads(out)["workloads"]
    failure = w["firstFailure"]
    assert [n["node"] for n in failure["nearest"]] == ["node-a1", "node-a2", "node-b1"]
    assert failure["nearest"][0]["shortfall"] == {"cpu": "500m"}
    assert failure["nearest"][2]["plugins"] == ["VolumeBinding", "VolumeZone"]
    assert "hint: " + failure["hints"][0] == HINT


def test_failing_check_hints_in_junit_annotations_and_step_summary(tmp_path):
    junit, summary = tmp_path / "kplan.xml", tmp_path / "summary.md"
    code, out, _ = kplan("check", CACHE, "-f", STORAGE, "--junit", str(junit),
                         env={**ON_GITHUB, "GITHUB_STEP_SUMMARY": str(summary)})
    assert code == 1
    failure = ET.parse(junit).getroot().find("testsuite/testcase/failure")
    body = failure.text.splitlines()
    assert body[0].startswith("2/3 replicas placed; first failure: pod shop/cache-2 (Unschedulable, VolumeBinding)")
    assert body[2:4] == NEAREST_LINES and HINT in body
    (line,) = [ln for ln in out.splitlines() if ln.startswith("::error")]
    assert line.startswith(f"::error file={CACHE},title=kplan VolumeBinding::")
    message = line.split("::", 2)[2].split("%0A")
    assert message[2:4] == NEAREST_LINES and HINT in message
    text = summary.read_text()
    assert "**StatefulSet/shop/cache**, pod `shop/cache-2`:" in text
    assert "- " + NEAREST_LINES[0] in text.splitlines()


def test_junit_file_is_a_path_ci_can_link(tmp_path):
    # The issue's layout: the manifests in w/ of a checkout, kplan run from another folder of it as
    # `kplan check ../w/apps.yaml`. CI links files from the checkout's root: w/apps.yaml.
    import shutil
    from run_kplan import kplan as kplan_in
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "w").mkdir()
    (repo / "ci").mkdir()
    shutil.copy(ROOT / APPS, repo / "w" / "apps.yaml")
    shutil.copy(ROOT / TOO_BIG, repo / "w" / "too-big.yaml")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}

    def files(*extra_env):
        junit = tmp_path / "kplan.xml"
        code, _, err = kplan_in(["check", "../w/apps.yaml", "../w/too-big.yaml", "-f", str(ROOT / CLUSTER),
                                 "--junit", str(junit)], cwd=repo / "ci", env={**env, **dict(extra_env)})
        assert code == 1, err
        return [(c.get("file"), c.get("name")) for c in ET.parse(junit).getroot().findall("testsuite/testcase")]
    assert files() == [("w/apps.yaml", "Deployment/shop/api"), ("w/apps.yaml", "StatefulSet/shop/cache (document 2)"),
                       ("w/apps.yaml", "DaemonSet/kube-system/log-agent (document 3)"),
                       ("w/too-big.yaml", "Job/analytics/train")]
    # $GITHUB_WORKSPACE, when it holds the file, is what GitHub links against.
    assert files(("GITHUB_WORKSPACE", str(repo / "w")))[0][0] == "apps.yaml"
    # Outside any checkout: the path as given, normalized.
    shutil.rmtree(repo / ".git")
    assert files()[0][0] == "../w/apps.yaml"


def test_github_escaping(monkeypatch):
    from kplan.report.ci import github_annotations
    monkeypatch.setenv("GITHUB_WORKSPACE", WORKSPACE)
    report = {"workloads": [{"passed": False, "kind": "Job", "namespace": "n", "name": "j", "placed": 0,
                             "wanted": 1, "manifest": "a:b,c.yaml",
                             "firstFailure": {"plugin": "P", "pod": "n/j", "outcome": "Unschedulable",
                                              "message": "100% full\nnext"}}]}
    (line,) = github_annotations(report)
    assert line == ("::error file=a%3Ab%2Cc.yaml,title=kplan P::Job/n/j: 0/1 replicas placed; "
                    "n/j Unschedulable: 100%25 full%0Anext")


def test_no_github_annotations_with_json_output():
    code, out, _ = kplan("check", TOO_BIG, "-f", CLUSTER, "-o", "json", env={"GITHUB_ACTIONS": "true"})
    assert code == 1 and "::error" not in out and json.loads(out)["summary"]["failed"] == 1


def test_add_node_makes_it_fit():
    code, out, err = kplan("check", TOO_BIG, "-f", CLUSTER, "--add-node", f"{NODE}:2", "-o", "json")
    assert code == 0 and "added node(s): node-c-large-1, node-c-large-2" in err
    (w,) = json.loads(out)["workloads"]
    assert w["nodes"] == {"node-c-large-1": 1, "node-c-large-2": 1}


@pytest.mark.parametrize("args, message", [
    (["check", "-f", CLUSTER], "no manifests given"),
    (["check", NODE, "-f", CLUSTER], "no Pod or workload in it"),
    (["check", APPS, "-f", CLUSTER, "--drain", "pool=nope"], "--drain 'pool=nope'"),
    (["capacity", APPS, "-f", CLUSTER], "expected one Pod or workload, found 3"),
], ids=["none", "no-workload", "bad-drain", "capacity-many"])
def test_input_errors_exit_2(args, message):
    code, _, err = kplan(*args)
    assert code == 2 and message in err and "Traceback" not in err


def test_drain_that_cannot_be_re_placed_exits_1():
    # Draining the general nodes (node-a1, node-b1, node-c1 and the cordoned node-b2) leaves their pods
    # node-c2, with 3810m cpu free, and the GPU node, whose taint none tolerates. The two api pods
    # (priority 100000) go first: 1500m each leaves 810m; neither web pod (1 cpu) fits then, cache-0
    # (500m) does. The DaemonSet's node-agent pods stay.
    code, out, err = kplan("check", APPS, "-f", CLUSTER, "--drain", "pool=general", "-o", "json")
    assert code == 1
    assert "5 pod(s) evicted, 3 re-placed, 2 could not be placed" in err
    report = json.loads(out)
    changes = report["nodeChanges"]
    assert changes["drained"] == ["node-a1", "node-b1", "node-c1", "node-b2"]
    assert {e["pod"]: (e["from"], e["node"]) for e in changes["evicted"]} == {
        "shop/api-55c1-1": ("node-a1", "node-c2"), "shop/api-55c1-2": ("node-c1", "node-c2"),
        "shop/cache-0": ("node-b1", "node-c2"),
        "shop/web-7d9f-1": ("node-a1", None), "shop/web-7d9f-2": ("node-b1", None)}
    web = next(e for e in changes["evicted"] if e["pod"] == "shop/web-7d9f-1")
    assert web["reason"].startswith("0/6 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated "
                                    "taint(s), 4 node(s) were unschedulable.")
    # Then the manifests, on the 310m left: one api replica (250m), no cache replica (200m on the 60m
    # left), and the log-agent DaemonSet (50m) on every node but the GPU node, cordoned ones included.
    assert {w["name"]: (w["placed"], w["nodes"]) for w in report["workloads"]} == {
        "api": (1, {"node-c2": 1}), "cache": (0, {}),
        "log-agent": (5, {"node-a1": 1, "node-b1": 1, "node-b2": 1, "node-c1": 1, "node-c2": 1})}
    # stderr sums up per drained node; -v adds a line per pod.
    lines = [line for line in err.splitlines() if line.startswith("kplan: what-if:")]
    assert len(lines) == 1 + len(changes["drained"])
    _, _, err = kplan("check", APPS, "-f", CLUSTER, "--drain", "pool=general", "-o", "json", "-v")
    pods = [line for line in err.splitlines() if line.startswith("kplan: what-if:     ")]
    assert len(pods) == len(changes["evicted"])


def test_capacity_json_contract():
    code, out, _ = kplan("capacity", "samples/pod-burstable.yaml", "-f", CLUSTER, "-o", "json")
    assert code == 0
    report = json.loads(out)
    assert report["apiVersion"] == "kplan/v1alpha1" and report["kind"] == "CapacityReport"
    # By hand, 500m and 1Gi a replica: cpu is short first on every general node. Free cpu: node-a1 1320m (2),
    # node-b1 and node-c1 2320m (4 each), node-c2 3810m (7); gpu-a1 is tainted and node-b2 cordoned.
    assert report["replicas"] == 17
    assert report["perNode"] == {"node-a1": 2, "node-b1": 4, "node-c1": 4, "node-c2": 7}
    assert report["perZone"] == {"zone-a": 2, "zone-b": 4, "zone-c": 11}
    assert report["stopReason"].startswith("0/6 nodes are available: 1 node(s) had untolerated taint(s), "
                                           "1 node(s) were unschedulable, 4 Insufficient cpu.")
    code, out, _ = kplan("capacity", "samples/pod-burstable.yaml", "-f", CLUSTER, "-o", "json", "--max", "2",
                         "--cordon", "node-c2")
    assert code == 0 and json.loads(out)["replicas"] == 2 and "node-c2" not in json.loads(out)["perNode"]


def test_no_progress_bar_off_a_terminal():
    from kplan.cli.what_if import progress_bar
    with progress_bar(100000, "kplan check") as advance:  # pytest captures stderr: not a terminal
        assert advance is None


def test_preemption_fails_unless_allowed(tmp_path):
    import yaml
    from builders import container, node, pod
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([node("n1", cpu="2"), pod("low", node_name="n1", requests={"cpu": "2"})]))
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "urgent", "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "urgent"}},
                 "template": {"metadata": {"labels": {"app": "urgent"}}, "spec": {
            "priority": 1000, "containers": [container(requests={"cpu": "1"})]}}}}))
    code, out, _ = kplan("check", str(manifest), "-f", str(cluster), "-o", "json")
    (w,) = json.loads(out)["workloads"]
    assert code == 1 and w["needsPreemption"] == 1 and w["firstFailure"]["outcome"] == "NeedsPreemption"
    code, out, _ = kplan("check", str(manifest), "-f", str(cluster), "-o", "json", "--allow-preemption")
    (w,) = json.loads(out)["workloads"]
    assert code == 0 and w["passed"] and w["nodes"] == {"n1": 1}
