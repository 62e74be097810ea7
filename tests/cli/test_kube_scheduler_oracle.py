"""Whole clusters answered by the real kube-scheduler v1.34.1 and v1.33.0 (tests/oracle: cases;
storage, whose clusters add claims, volumes, classes, CSI nodes and drivers; and devices, whose
clusters add DeviceClasses, ResourceSlices, ResourceClaims and their templates).

Each scenario's pods are placed in order through `kplan place … -o json --top 0` at the
scenario's release, and every answer is held against kube-scheduler's own: the outcome, the
node (any node of the tie), the FailedScheduling message, the PostFilter status (plugin and
code), the victims, and per node its feasibility, the rejecting plugin and reasons, and every
plugin's normalized score. Scenarios are read as they are: none is skipped or special-cased.
"""
import json

import pytest
from typer.testing import CliRunner

from kplan.cli.app import app
from oracle_scenarios import scenario_names, unpack

FOLDERS = ("cases", "storage", "devices")


def scenarios() -> list[str]:
    return [f"{folder}/{name}" for folder in FOLDERS for name in scenario_names(folder)]


@pytest.fixture(scope="session")
def unpacked(tmp_path_factory):
    """The folder holding every folder of FOLDERS, unpacked."""
    root = tmp_path_factory.mktemp("oracle")
    for folder in FOLDERS:
        unpack(folder, root)
    return root


def node_view(node: dict) -> dict:
    if node.get("feasible"):
        return {"feasible": True, "totalScore": node["totalScore"], "scores": node.get("scores") or {}}
    return {"feasible": False, "plugin": node.get("plugin") or "", "reasons": sorted(node.get("reasons") or [])}


def differences(want: dict, got: dict) -> list[str]:
    """What differs between kube-scheduler's answer for one pod and kplan's."""
    diffs = []
    if want["outcome"] != got["outcome"]:
        return [f"outcome {want['outcome']} != {got['outcome']}"]
    allowed = set(want.get("tie") or []) | ({want["node"]} if want.get("node") else set())
    if (want.get("node") or got.get("node")) and got.get("node") not in allowed:
        diffs.append(f"node {want.get('node')} (tie {sorted(allowed)}) != {got.get('node')}")
    if (want.get("message") or "") != (got.get("message") or ""):
        diffs.append(f"message\n  want {want.get('message')!r}\n  got  {got.get('message')!r}")
    want_pf, got_pf = want.get("postFilter"), got.get("postFilter")
    if want_pf and (not got_pf or (want_pf["plugin"], want_pf["code"]) != (got_pf["plugin"], got_pf["code"])):
        diffs.append(f"postFilter {want_pf} != {got_pf}")
    victims = [sorted((p.get("preemption") or {}).get("victims") or []) for p in (want, got)]
    if victims[0] != victims[1]:
        diffs.append(f"victims {victims[0]} != {victims[1]}")
    mine = {n["name"]: node_view(n) for n in got.get("nodes") or []}
    for node in want.get("nodes") or []:
        if node_view(node) != mine.get(node["name"]):
            diffs.append(f"node {node['name']}: {node_view(node)} != {mine.get(node['name'])}")
    return diffs


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_scenarios_are_there(folder):
    assert scenario_names(folder)


@pytest.mark.parametrize("case", scenarios())
def test_kplan_answers_as_kube_scheduler(unpacked, case):
    folder = unpacked / case
    meta = json.loads((folder / "meta.json").read_text())
    args = ["place", *(str(folder / p) for p in meta["pods"]), "-f", str(folder / "cluster.json"),
            "--kube-version", meta["kubeVersion"], "-o", "json", "--top", "0"]
    if (folder / "config.yaml").exists():
        args += ["--config", str(folder / "config.yaml")]
    run = CliRunner().invoke(app, args)
    assert run.exit_code in (0, 1), run.output
    placements = json.loads(run.stdout)["placements"]
    oracle = [json.loads(line) for line in (folder / "oracle.jsonl").read_text().splitlines() if line.strip()]
    assert len(placements) == len(oracle)
    for want, got in zip(oracle, placements):
        diffs = differences(want, got)
        # Later pods see the earlier placements: the first pod that differs is the cause.
        assert not diffs, f"{want['pod']}: " + "\n".join(diffs)
