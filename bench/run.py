#!/usr/bin/env python3
"""kplan's benchmark harness: load time, end-to-end time, pipeline latency, start-up, memory, replicas/s.

    python bench/run.py                           # reference size: 5,000 nodes, 150,000 pods
    python bench/run.py --nodes 500 --pods 15000 --repeat 50 --json
    python bench/run.py --cprofile 15             # also profile (b) and (d) and list hot spots

Inputs come from ../shared/bench/gen_cluster.py (relative to the repo root) and are cached
under bench/out/, keyed by size and by a hash of the generator. This is not a test: it prints
each measurement next to its target and exits 0 unless a step crashed (--strict: 1 when a
target fails). Progress goes to stderr, the table (or with --json one JSON object) to stdout.
"""
from __future__ import annotations

import argparse
import copy
import cProfile
import gc
import hashlib
import io
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
GEN = ROOT / ".." / "shared" / "bench" / "gen_cluster.py"
OUT = ROOT / "bench" / "out"

# Targets (DESIGN.md, "Performance design").
E2E_MAX_RATIO = 2.0  # end-to-end `kplan place` within 2x a gc-off json.loads of the dump in a fresh process
E2E_MAX_MIB = 1024.0  # and its peak memory within 1 GiB (issue 25)
OVERFULL_MAX_RATIO = 3.0  # `kplan check` of the overfull 2,000-replica Deployment of (k) within 3x one place
PREEMPT_SPREAD_MAX_RATIO = 2.0  # a preemption dry run with a spread and a zone anti-affinity within 2x place
PIPELINE_MAX_MS = 30.0  # median latency of one pod through the default profile
POD_TO_POD_MAX_MS = 100.0  # the same for a pod with a zone spread and a hostname anti-affinity term
HELP_MAX_S = 0.3  # `kplan --help`, best of HELP_RUNS
HELP_RUNS = 5
PREEMPTING_REPLICAS = 1000  # (s): replicas placed past the free room, preempting
CAPACITY_MIN_PODS_S = 6800  # `kplan capacity` replicas per second after load (issue 7)
PENDING_MAX_RATIO = 2.0  # `kplan pending -A` over the cluster's pending pods within 2x `kplan place` of one pod
AUTO_MAX_RATIO = 5.0  # `kplan check --add-node NODE:auto` within 5x `kplan check` of the same manifest
STORAGE_MAX_RATIO = 1.1  # `kplan place` of a pod with a claim, on the dump with volumes, within 1.1x (issue 21)
STORAGE_EVERY = 5  # one bound zonal volume and claim for every fifth running pod
CONSOLIDATE_MAX_RATIO = 5.0  # `kplan consolidate --max-nodes 50` within 5x one `kplan place` (issue 26)
CONSOLIDATE_NODES = 50
ROLLOUT_MAX_RATIO = 2.0  # `kplan check` updating a running 1,000-replica Deployment within 2x creating it (issue 27)
ROLLOUT_REPLICAS = 1000


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


# -- inputs -------------------------------------------------------------------------------------


def generator_hash() -> str:
    return hashlib.sha256(GEN.read_bytes()).hexdigest()[:10]


def generate(path: Path, *gen_args: str) -> Path:
    """Runs gen_cluster.py into path unless it is cached; writes atomically so a crash leaves no stub."""
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    log(f"generating {path.name} ({' '.join(gen_args)}) ...")
    subprocess.run([sys.executable, str(GEN), *gen_args, "-o", str(tmp)], check=True)
    os.replace(tmp, path)
    return path


def inputs(nodes: int, pods: int) -> tuple[Path, Path]:
    if not GEN.is_file():
        sys.exit(f"bench: generator not found: {GEN} (expected ../shared/bench/gen_cluster.py next to the repo)")
    h = generator_hash()
    cluster = generate(OUT / f"cluster-{nodes}n-{pods}p-{h}.json",
                       "--nodes", str(nodes), "--pods", str(pods), "--format", "json")
    pod = generate(OUT / f"pod-{h}.yaml", "--pod-only")
    return cluster, pod


def pending_input(nodes: int, pods: int, pending: int) -> Path:
    """The same cluster with `pending` pods waiting for a node (gen_cluster.py --pending)."""
    return generate(OUT / f"cluster-{nodes}n-{pods}p-{pending}pending-{generator_hash()}.json",
                    "--nodes", str(nodes), "--pods", str(pods), "--pending", str(pending), "--format", "json")


def storage_input(cluster: Path) -> tuple[Path, Path]:
    """The reference dump with volumes: a bound claim and a zonal CSI volume (node affinity on the
    zone of the pod's node) for every fifth running pod, a WaitForFirstConsumer class, CSINodes
    allowing 39 volumes per node; and a pod that mounts a new claim of that class."""
    out = OUT / f"{cluster.stem}-storage{STORAGE_EVERY}.json"
    pod = OUT / "pod-claim.json"
    pod.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bench-claim", "namespace": "team-00"},
        "spec": {"containers": [{"name": "main", "image": "registry.example/app:1",
                                 "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "bench-data"}}]}}))
    if out.exists():
        return out, pod
    log(f"adding volumes to {cluster.name} ...")
    dump = json.loads(cluster.read_text())
    items = dump["items"]
    zones = {o["metadata"]["name"]: o["metadata"].get("labels", {}).get("topology.kubernetes.io/zone", "")
             for o in items if o.get("kind") == "Node"}
    driver = "ebs.csi.aws.com"
    extra: list[dict] = [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "gp3"},
         "provisioner": driver, "volumeBindingMode": "WaitForFirstConsumer"},
        claim_object("team-00", "bench-data", "gp3", "10Gi", None)]
    extra += [{"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
               "spec": {"drivers": [{"name": driver, "nodeID": name, "allocatable": {"count": 39}}]}} for name in zones]
    bound = [o for o in items if o.get("kind") == "Pod" and o["spec"].get("nodeName")]
    for k, pod_obj in enumerate(bound[::STORAGE_EVERY]):
        ns, name = pod_obj["metadata"].get("namespace", "default"), f"data-{k:06d}"
        zone = zones.get(pod_obj["spec"]["nodeName"], "")
        pod_obj["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": name}}]
        extra.append(claim_object(ns, name, "gp3", "10Gi", f"pv-{k:06d}"))
        extra.append({"apiVersion": "v1", "kind": "PersistentVolume",
                      "metadata": {"name": f"pv-{k:06d}", "labels": {"topology.kubernetes.io/zone": zone}},
                      "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                               "storageClassName": "gp3", "csi": {"driver": driver, "volumeHandle": f"vol-{k:06d}"},
                               "claimRef": {"namespace": ns, "name": name},
                               "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                                   {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]}}},
                      "status": {"phase": "Bound"}})
    dump["items"] = items + extra
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(dump))
    os.replace(tmp, out)
    return out, pod


def claim_object(namespace: str, name: str, cls: str, size: str, volume: str | None) -> dict:
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}, "storageClassName": cls}
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if volume:
        spec["volumeName"] = volume
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec,
            "status": {"phase": "Bound" if volume else "Pending"}}


def kplan_command() -> list[str]:
    """The installed console script next to this interpreter (no pyenv/asdf shim in the timing),
    else `kplan` on PATH, else `python -m kplan`."""
    script = Path(sys.executable).parent / ("kplan.exe" if os.name == "nt" else "kplan")
    if script.is_file():
        return [str(script)]
    found = shutil.which("kplan")
    return [found] if found else [sys.executable, "-m", "kplan"]


def byte_compile_kplan() -> None:
    """Byte-compiles kplan's modules, as installing a wheel does: an editable install under
    PYTHONDONTWRITEBYTECODE never writes them, and every timed command would compile them anew."""
    import compileall
    import kplan
    compileall.compile_dir(Path(kplan.__file__).parent, quiet=1)


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("_KPLAN_", "_TYPER_", "COMP_"))}


# -- measurements -------------------------------------------------------------------------------


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def best_of(runs: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    """Returns the fastest of `runs` timings and the value of the last run."""
    best, value = float("inf"), None
    for _ in range(runs):
        value = None  # drop the previous run's objects before the next one
        seconds, value = timed(fn)
        best = min(best, seconds)
    return best, value


def measure_json_load(cluster: Path, runs: int) -> float:
    def load() -> None:
        with open(cluster, "rb") as f:
            json.load(f)
    return best_of(runs, load)[0]


PARSE_FLOOR = """
import gc, json, sys, time
gc.disable()
start = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    json.loads(f.read())
print(time.perf_counter() - start)
"""


def measure_parse_floor(cluster: Path) -> float:
    """The standard library's json.loads of the dump's bytes with the collector off, in a fresh
    process (the file read included): what (c) is measured against."""
    out = subprocess.run([sys.executable, "-c", PARSE_FLOOR, str(cluster)], capture_output=True, text=True,
                         check=True, env=clean_env())
    return float(out.stdout)


def measure_kplan_load(cluster: Path, runs: int):
    """load_snapshot, then the node table and the pod index as Planner builds them."""
    from kplan.cluster.pod_index import PodIndex
    from kplan.cluster.state import ClusterState
    from kplan.sources.snapshot import bulk_allocation, load_snapshot

    best = (float("inf"), float("inf"), float("inf"))
    snapshot = state = None
    for _ in range(runs):
        snapshot = state = None
        s, snapshot = timed(lambda: load_snapshot([str(cluster)]))
        with bulk_allocation():
            t, state = timed(lambda: ClusterState(snapshot.nodes, snapshot.pods))
            i, _ = timed(lambda: PodIndex.of(state))
        if s + t + i < sum(best):
            best = (s, t, i)
    return (*best, snapshot, state)


def run_child(cmd: list[str], cwd: Path, stdout: Path | None) -> tuple[float, int, float]:
    """Runs cmd; returns (wall seconds, exit code, this child's peak RSS in MiB) via wait4."""
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.DEVNULL, env=clean_env())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if stdout:
            out.close()
    # ru_maxrss is KiB on Linux, bytes on macOS.
    rss = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    return wall, proc.returncode, rss


COMPARE_MAX_RATIO = 1.3  # `kplan compare` of two variants within 1.3x `kplan check` of the same workload
COMPARE_REPLICAS = 1000


def compare_inputs(replicas: int) -> tuple[Path, Path, Path]:
    """A Deployment of `replicas` pods of 1 CPU / 2Gi and the two configurations of samples/compare
    (NodeResourcesFit LeastAllocated and MostAllocated), written to bench/out."""
    deploy = OUT / f"compare-deploy-{replicas}.json"
    deploy.write_text(json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "compare", "namespace": "team-00"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "compare"}},
                 "template": {"metadata": {"labels": {"app": "compare"}}, "spec": {"containers": [
                     {"name": "main", "image": "registry.example/app:1",
                      "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]}}}}))
    return deploy, ROOT / "samples" / "compare" / "least-allocated.yaml", ROOT / "samples" / "compare" / "most-allocated.yaml"


def measure_compare(cluster: Path, replicas: int, runs: int) -> dict[str, Any]:
    """`kplan compare DEPLOY --config least --config most` against `kplan check DEPLOY --config least` on the
    same dump, wall times as subprocesses (best of `runs` each)."""
    deploy, least, most = compare_inputs(replicas)
    report = OUT / "compare-report.json"
    timings = {}
    for name, args in (("check", ["check", "--config", str(least)]),
                       ("compare", ["compare", "--config", str(least), "--config", str(most)])):
        timings[name] = best_answer_wall([*kplan_command(), *args, deploy.name, "-f", cluster.name, "-o", "json"],
                                         report, runs)
    variants = json.loads(report.read_text())["variants"]
    ratio = timings["compare"] / timings["check"]
    return {"check_s": timings["check"], "compare_s": timings["compare"], "ratio": ratio, "replicas": replicas,
            "nodes_used_by_run": {v["name"]: v["metrics"]["nodesUsedByRun"] for v in variants},
            "pass": ratio <= COMPARE_MAX_RATIO}


def best_answer_wall(cmd: list[str], report: Path, runs: int) -> float:
    """The fastest of `runs` runs of a kplan command in bench/out, its output in `report`; a run that
    is not a complete answer (exit other than 0 or 1) stops the bench."""
    walls = []
    for _ in range(runs):
        wall, code, _ = run_child(cmd, OUT, report)
        if code not in (0, 1):
            raise SystemExit(f"bench: `{' '.join(cmd)}` exited {code}")
        walls.append(wall)
    return min(walls)


E2E_MIN_RUNS = 3  # (c) and its floor: at least this many interleaved runs, the best of each


def measure_end_to_end(cluster: Path, pod: Path, runs: int) -> dict[str, Any]:
    """`kplan place` end to end, and the parse floor it is measured against, runs interleaved so both
    meet the same machine load (a shared machine's speed drifts over a bench run), best of each."""
    cmd = [*kplan_command(), "place", pod.name, "-f", cluster.name, "-o", "json"]
    report = OUT / "e2e-report.json"
    measure_parse_floor(cluster)  # one untimed run of each first: the timed ones meet warm caches
    run_child(cmd, OUT, report)
    walls, floors, rss = [], [], 0.0
    for _ in range(max(runs, E2E_MIN_RUNS)):
        floors.append(measure_parse_floor(cluster))
        wall, code, peak = run_child(cmd, OUT, report)
        if code not in (0, 1):  # 1: the pod did not fit, still a complete run
            raise SystemExit(f"bench: `{' '.join(cmd)}` exited {code}")
        walls.append(wall)
        rss = max(rss, peak)
    placed = json.loads(report.read_text())["placements"][0]
    return {"seconds": min(walls), "floor_s": min(floors), "runs_s": walls, "floor_runs_s": floors,
            "peak_rss_mib": rss, "exit_code": code,
            "outcome": placed["outcome"], "node": placed["node"],
            "command": " ".join(["kplan", *cmd[len(kplan_command()):]])}


def measure_pending(cluster: Path, pod: Path, runs: int) -> dict[str, Any]:
    """`kplan pending -A` over every pending pod of the dump, against `kplan place` of one pod on the
    same dump (both load it whole); runs interleaved so both meet the same machine load, best of
    `runs` each."""
    report = OUT / "pending-report.json"
    place, pending = [], []
    for _ in range(runs):
        place.append(best_answer_wall([*kplan_command(), "place", pod.name, "-f", cluster.name, "-o", "json"],
                                      report, 1))
        pending.append(best_answer_wall([*kplan_command(), "pending", "-A", "-f", cluster.name, "-o", "json"],
                                        report, 1))
    summary = json.loads(report.read_text())["summary"]
    ratio = min(pending) / min(place)
    return {"place_s": min(place), "pending_s": min(pending), "ratio": ratio,
            "pass": ratio <= PENDING_MAX_RATIO, "summary": summary}


def measure_storage(cluster: Path, pod: Path, runs: int) -> dict[str, Any]:
    """`kplan place` of a pod with a claim on the dump with volumes, against `kplan place` of the plain
    pod on the dump without them; runs interleaved, best of `runs` each."""
    storage, claim_pod = storage_input(cluster)
    report = OUT / "storage-report.json"
    plain, with_claim = [], []
    for _ in range(runs):
        plain.append(best_answer_wall([*kplan_command(), "place", pod.name, "-f", cluster.name, "-o", "json"],
                                      report, 1))
        with_claim.append(best_answer_wall([*kplan_command(), "place", claim_pod.name, "-f", storage.name, "-o",
                                            "json"], report, 1))
    placed = json.loads(report.read_text())["placements"][0]
    ratio = min(with_claim) / min(plain)
    return {"plain_s": min(plain), "claim_s": min(with_claim), "ratio": ratio, "outcome": placed["outcome"],
            "node": placed["node"], "storage_mib": storage.stat().st_size / 2**20,
            "pass": ratio <= STORAGE_MAX_RATIO}


def preempt_spread_input() -> Path:
    """A pod of the high PriorityClass asking for 28 CPUs (more than any node has free), with a
    DoNotSchedule zone spread over its app and a required zone anti-affinity term: it fits only by
    preemption, and its dry run updates both plugins' PreFilter state per victim."""
    pod = OUT / "pod-preempt-spread.json"
    selector = {"matchLabels": {"app": "web"}}
    pod.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "big-web", "namespace": "team-00", "labels": {"app": "web"}},
        "spec": {"priorityClassName": "high",
                 "containers": [{"name": "main", "image": "registry.example/app:13",
                                 "resources": {"requests": {"cpu": "28", "memory": "8Gi"}}}],
                 "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}],
                 "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                     {"topologyKey": "topology.kubernetes.io/zone",
                      "labelSelector": {"matchLabels": {"app": "web-canary"}}}]}}}}))
    return pod


def measure_preempt_spread(cluster: Path, pod: Path, runs: int) -> dict[str, Any]:
    """`kplan place` of the pod of preempt_spread_input against `kplan place POD`, runs interleaved,
    best of `runs` each."""
    big = preempt_spread_input()
    report = OUT / "preempt-report.json"
    plain, preempting = [], []
    for _ in range(runs):
        plain.append(best_answer_wall([*kplan_command(), "place", pod.name, "-f", cluster.name, "-o", "json"],
                                      report, 1))
        preempting.append(best_answer_wall([*kplan_command(), "place", big.name, "-f", cluster.name, "-o", "json"],
                                           report, 1))
    placed = json.loads(report.read_text())["placements"][0]
    ratio = min(preempting) / min(plain)
    return {"place_s": min(plain), "preempt_s": min(preempting), "ratio": ratio, "outcome": placed["outcome"],
            "node": placed["node"], "victims": len((placed.get("preemption") or {}).get("victims") or ()),
            "pass": ratio <= PREEMPT_SPREAD_MAX_RATIO}


def measure_consolidate(cluster: Path, pod: Path, max_nodes: int, runs: int) -> dict[str, Any]:
    """`kplan consolidate -f DUMP --max-nodes N` against `kplan place POD` on the same dump (both load it
    whole), runs interleaved so both meet the same machine load, best of `runs` each; the plan's summary."""
    report = OUT / "consolidate-report.json"
    place, plan = [], []
    for _ in range(runs):
        place.append(best_answer_wall([*kplan_command(), "place", pod.name, "-f", cluster.name, "-o", "json"],
                                      OUT / "consolidate-place-report.json", 1))
        plan.append(best_answer_wall([*kplan_command(), "consolidate", "-f", cluster.name, "--max-nodes",
                                      str(max_nodes), "-o", "json"], report, 1))
    ratio = min(plan) / min(place)
    return {"place_s": min(place), "consolidate_s": min(plan), "ratio": ratio, "max_nodes": max_nodes,
            "summary": json.loads(report.read_text())["summary"], "pass": ratio <= CONSOLIDATE_MAX_RATIO}


def rollout_inputs(replicas: int, nodes: int) -> tuple[Path, Path]:
    """A Deployment `team-00/rollout` of `replicas` pods of 1 CPU / 2Gi (the default 25%/25% rolling
    update) and a dump of it running: the Deployment, its ReplicaSet and `replicas` ready pods of the
    old template (`registry.example/app:1`), one on every (nodes // replicas)-th node."""
    labels = {"app": "rollout"}
    deploy = OUT / f"rollout-deploy-{replicas}.json"
    deploy.write_text(json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "rollout", "namespace": "team-00"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                     {"name": "main", "image": "registry.example/app:2",
                      "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]}}}}))
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rollout-old", "uid": "rs-rollout-old",
             "controller": True}
    step = max(nodes // replicas, 1)
    items = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "rollout", "namespace": "team-00"},
              "spec": {"replicas": replicas, "selector": {"matchLabels": labels}}},
             {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": "rollout-old", "namespace": "team-00", "uid": "rs-rollout-old"},
              "spec": {"selector": {"matchLabels": {**labels, "pod-template-hash": "old"}}}}]
    items += [{"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"rollout-old-{k:05d}", "namespace": "team-00", "uid": f"rollout-old-{k}",
                            "labels": {**labels, "pod-template-hash": "old"}, "ownerReferences": [owner],
                            "creationTimestamp": "2026-11-01T09:00:00Z"},
               "spec": {"nodeName": f"node-{(k * step) % nodes:05d}", "containers": [
                   {"name": "main", "image": "registry.example/app:1",
                    "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]},
               "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
              for k in range(replicas)]
    running = OUT / f"rollout-running-{replicas}.json"
    running.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return deploy, running


def measure_rollout(cluster: Path, replicas: int, nodes: int, runs: int) -> dict[str, Any]:
    """`kplan check DEPLOY -f DUMP -f RUNNING` (the update of the running Deployment, rolled out) against
    `kplan check DEPLOY -f DUMP` (the same Deployment created fresh), runs interleaved, best of `runs` each."""
    deploy, running = rollout_inputs(replicas, nodes)
    report = OUT / "rollout-report.json"
    walls: dict[str, list[float]] = {"fresh": [], "update": []}
    for _ in range(runs):
        for name, extra in (("fresh", []), ("update", ["-f", running.name])):
            cmd = [*kplan_command(), "check", deploy.name, "-f", cluster.name, *extra, "-o", "json"]
            walls[name].append(best_answer_wall(cmd, report, 1))
    (entry,) = json.loads(report.read_text())["workloads"]
    rollout = entry["rollout"]
    ratio = min(walls["update"]) / min(walls["fresh"])
    return {"fresh_s": min(walls["fresh"]), "update_s": min(walls["update"]), "ratio": ratio, "replicas": replicas,
            "steps": len(rollout["steps"]), "done": rollout["done"], "placed": entry["placed"],
            "pass": ratio <= ROLLOUT_MAX_RATIO}


HTML_MAX_RATIO = 1.2  # a run with --html within 1.2x the same run without it (issue 17)
HTML_MAX_MIB = 10.0  # and its page under 10 MB


def html_cases(cluster: Path, pod: Path, pending: Path | None, deploy: Path) -> list[tuple[str, list[str]]]:
    """The commands (l) times with and without --html, on the reference dump."""
    cases = [("place", ["place", pod.name, "-f", cluster.name]),
             ("nodes", ["nodes", "-f", cluster.name]),
             ("check", ["check", deploy.name, "-f", cluster.name]),
             ("capacity", ["capacity", pod.name, "-f", cluster.name, "--max", "1000"])]
    if pending is not None:
        cases.append(("pending", ["pending", "-A", "-f", pending.name]))
    return cases


def measure_html(cases: list[tuple[str, list[str]]], runs: int) -> dict[str, Any]:
    """Each command with and without --html FILE, runs interleaved so both meet the same machine load;
    the best of `runs` each, and the page's size."""
    out = {}
    report = OUT / "html-bench-report.json"
    for name, args in cases:
        page = OUT / f"report-{name}.html"
        cmd = [*kplan_command(), *args, "-o", "json"]
        plain, with_page = [], []
        for _ in range(runs):
            plain.append(best_answer_wall(cmd, report, 1))
            with_page.append(best_answer_wall([*cmd, "--html", page.name], report, 1))
        ratio = min(with_page) / min(plain)
        mib = page.stat().st_size / 2**20
        out[name] = {"plain_s": min(plain), "html_s": min(with_page), "ratio": ratio, "page_mib": mib,
                     "pass": ratio <= HTML_MAX_RATIO and mib < HTML_MAX_MIB}
    return out


VALIDATION_MAX_SHARE = 0.05  # strict field validation of a 50-document manifest set within 5% of its `kplan check`
VALIDATION_DOCS = 50


def _app_template(name: str) -> dict[str, Any]:
    """A pod template as deployment manifests write them: probes, env, volumes, security context, affinity."""
    return {"metadata": {"labels": {"app": name, "tier": "web"}, "annotations": {"team": "shop"}},
            "spec": {"serviceAccountName": name, "terminationGracePeriodSeconds": 30,
                     "securityContext": {"runAsNonRoot": True, "fsGroup": 2000,
                                         "seccompProfile": {"type": "RuntimeDefault"}},
                     "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                         {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                             "labelSelector": {"matchLabels": {"app": name}}}}]}},
                     "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}],
                     "containers": [{
                         "name": "main", "image": f"registry.example/{name}:1.4.2", "imagePullPolicy": "IfNotPresent",
                         "args": ["--port=8080", "--log-level=info"],
                         "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                         "env": [{"name": "MODE", "value": "prod"},
                                 {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                                 {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": name, "key": "token"}}}],
                         "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                                       "limits": {"cpu": "500m", "memory": "256Mi"}},
                         "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5},
                         "livenessProbe": {"httpGet": {"path": "/live", "port": 8080}, "initialDelaySeconds": 10},
                         "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                             "capabilities": {"drop": ["ALL"]}},
                         "volumeMounts": [{"name": "config", "mountPath": "/etc/app"},
                                          {"name": "tmp", "mountPath": "/tmp"}]}],
                     "volumes": [{"name": "config", "configMap": {"name": name}}, {"name": "tmp", "emptyDir": {}}]}}


def validation_input(docs: int) -> Path:
    """A manifest set of `docs` documents as a repository holds them: Deployments with their Services and
    ConfigMaps, StatefulSets, Jobs, written to bench/out as multi-document YAML."""
    import yaml
    out = []
    for k in range(docs):
        name, kind = f"app-{k:02d}", ("Deployment", "Service", "ConfigMap", "StatefulSet", "Job")[k % 5]
        meta = {"name": name, "namespace": f"team-{k % 7:02d}", "labels": {"app": name}}
        if kind == "Service":
            out.append({"apiVersion": "v1", "kind": kind, "metadata": meta, "spec": {
                "selector": {"app": name}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}})
        elif kind == "ConfigMap":
            out.append({"apiVersion": "v1", "kind": kind, "metadata": meta, "data": {"app.yaml": "mode: prod\n"}})
        elif kind == "Job":
            template = _app_template(name)
            template["spec"]["restartPolicy"] = "Never"
            out.append({"apiVersion": "batch/v1", "kind": kind, "metadata": meta,
                        "spec": {"backoffLimit": 2, "parallelism": 1, "template": template}})
        else:
            spec = {"replicas": 3, "selector": {"matchLabels": {"app": name}}, "template": _app_template(name)}
            if kind == "StatefulSet":
                spec["serviceName"] = name
            else:
                spec["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}
            out.append({"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec})
    path = OUT / f"validation-{docs}docs.yaml"
    path.write_text(yaml.safe_dump_all(out, sort_keys=False))
    return path


def measure_validation(cluster: Path, docs: int, runs: int) -> dict[str, Any]:
    """`kplan check SET -f DUMP -o json` of a `docs`-document manifest set (wall, as a subprocess, best of
    `runs`), and what strict field validation adds to it, timed in this process (median of 200): reading
    the set keeping track of repeated keys instead of plainly, and checking every object's fields."""
    from kplan.api.field_validation import field_errors
    from kplan.sources.files import iter_documents
    manifests = validation_input(docs)
    report = OUT / "validation-report.json"
    check_s = best_answer_wall([*kplan_command(), "check", manifests.name, "-f", cluster.name, "-o", "json"],
                               report, runs)
    summary = json.loads(report.read_text())["summary"]

    def plain() -> None:
        list(iter_documents(str(manifests)))

    def strict() -> None:
        for _, _, obj in iter_documents(str(manifests), manifests=True):
            field_errors(obj)

    runs_of: dict[str, list[float]] = {"plain": [], "strict": []}
    for _ in range(200):  # interleaved, so both meet the same machine
        for name, fn in (("plain", plain), ("strict", strict)):
            runs_of[name].append(timed(fn)[0])
    medians = {name: statistics.median(seconds) for name, seconds in runs_of.items()}
    cost = medians["strict"] - medians["plain"]
    return {"docs": docs, "check_s": check_s, "read_s": medians["plain"], "strict_s": medians["strict"],
            "cost_s": cost, "share": cost / check_s, "summary": summary,
            "pass": cost / check_s <= VALIDATION_MAX_SHARE}


AUTO_REPLICAS = 2000


def auto_inputs(replicas: int) -> tuple[Path, Path]:
    """A Deployment of `replicas` pods of 8 CPUs / 16Gi, more than the cluster's free room holds, and the
    template of the nodes to add (64 CPUs / 256Gi), written to bench/out."""
    deploy = OUT / f"auto-deploy-{replicas}.json"
    template = OUT / "auto-node.json"
    deploy.write_text(json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "burst", "namespace": "team-00"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "burst"}},
                 "template": {"metadata": {"labels": {"app": "burst"}}, "spec": {"containers": [
                     {"name": "main", "image": "registry.example/app:1",
                      "resources": {"requests": {"cpu": "8", "memory": "16Gi"}}}]}}}}))
    template.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "burst", "labels": {"kubernetes.io/hostname": "burst", "kubernetes.io/os": "linux",
                                                 "topology.kubernetes.io/zone": "zone-a"}},
        "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}}}))
    return deploy, template


def measure_auto(cluster: Path, replicas: int, runs: int, place_s: float) -> dict[str, Any]:
    """`kplan check DEPLOY --add-node NODE:auto` against `kplan check DEPLOY` on the same dump and against
    `kplan check DEPLOY --add-node NODE:N` at the count N found (where every pod fits, so no cycle runs
    preemption: the stricter reference), wall times as subprocesses (best of `runs` each); and `kplan check
    DEPLOY` (overfull: most replicas do not fit) against `place_s`, one `kplan place` of (c)."""
    deploy, template = auto_inputs(replicas)
    report = OUT / "auto-report.json"
    timings = {}
    for name, extra in (("check", []), ("auto", ["--add-node", f"{template.name}:auto", "--max-nodes", "500"])):
        cmd = [*kplan_command(), "check", deploy.name, "-f", cluster.name, "-o", "json", *extra]
        timings[name] = best_answer_wall(cmd, report, runs)
        if name == "check":
            placed = json.loads(report.read_text())["summary"]["scheduled"]
    auto = json.loads(report.read_text())
    needed = (auto.get("nodesNeeded") or {}).get("burst")
    timings["at_count"] = timings["check"]
    if needed:
        cmd = [*kplan_command(), "check", deploy.name, "-f", cluster.name, "-o", "json",
               "--add-node", f"{template.name}:{needed}"]
        timings["at_count"] = min(run_child(cmd, OUT, report)[0] for _ in range(runs))
    ratio = timings["auto"] / min(timings["check"], timings["at_count"])
    overfull = timings["check"] / place_s
    return {"check_s": timings["check"], "auto_s": timings["auto"], "at_count_s": timings["at_count"],
            "ratio": ratio, "replicas": replicas, "place_s": place_s, "overfull_ratio": overfull,
            "overfull_pass": overfull <= OVERFULL_MAX_RATIO,
            "placed_without": placed, "nodes_needed": auto.get("nodesNeeded"),
            "tried": auto.get("nodeCountsTried"), "pass": ratio <= AUTO_MAX_RATIO}


def incoming_pods(pod_path: Path, snapshot, count: int) -> list:
    """`count` copies of the incoming pod, each with its own name, priorities resolved."""
    from kplan.api.objects import build
    from kplan.sources.files import iter_documents

    source, _, raw = next((s, n, o) for s, n, o in iter_documents(str(pod_path)) if o.get("kind") == "Pod")
    pods = []
    for k in range(count):
        obj = copy.deepcopy(raw)
        if count > 1:
            obj["metadata"]["name"] = f"{raw['metadata']['name']}-{k:04d}"
        pods.append(build("Pod", obj, source))
        snapshot.resolve_priority(pods[-1])
    return pods


def with_replica_sets(snapshot, pod_path: Path):
    """The dump as `kubectl get ...,replicasets` gives it: the generator writes pods owned by
    ReplicaSets but not the ReplicaSets, whose selectors (app=<app>) PodTopologySpread's default
    constraints read (without them, the generator's pods would get no default spreading)."""
    from kplan.api.objects import Controller

    owners: dict[tuple[str, str], Controller] = {}
    for pod in [*snapshot.pods, *incoming_pods(pod_path, snapshot, 1)]:
        for ref in pod.owner_references:
            key = (pod.namespace, ref.get("name"))
            if ref.get("controller") and ref.get("kind") == "ReplicaSet" and key not in owners:
                owners[key] = Controller("ReplicaSet", pod.namespace, ref["name"], ref.get("uid", ""),
                                         {"matchLabels": {"app": pod.labels.get("app", "")}})
    return snapshot.with_objects(controllers=owners.values())


def framework(snapshot):
    from kplan.framework.config import default_profile
    from kplan.framework.interfaces import Handle
    from kplan.framework.runtime import Framework
    from kplan.plugins.registry import REGISTRY

    return Framework(default_profile(), REGISTRY, Handle(snapshot=snapshot))


def pod_to_pod_variant(pod):
    """The incoming pod with a DoNotSchedule zone spread and a required hostname anti-affinity term
    (issue 3's measurement): the costliest pod-to-pod case per cycle."""
    from kplan.api.objects import build

    raw = copy.deepcopy(pod.raw)
    selector = {"matchLabels": dict(raw["metadata"].get("labels") or {"app": "web"})}
    raw["spec"]["topologySpreadConstraints"] = [{
        "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": selector}]
    raw["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": selector}]}}
    variant = build("Pod", raw, pod.source)
    variant.priority = pod.priority
    return variant


def measure_pipeline(fw, pod, state, repeat: int) -> dict[str, Any]:
    start = time.perf_counter()
    result = fw.schedule(pod, state, assume=False)  # warm-up: label columns, image index, caches
    first_ms = (time.perf_counter() - start) * 1000
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fw.schedule(pod, state, assume=False)
        samples.append((time.perf_counter() - start) * 1000)
    p90 = statistics.quantiles(samples, n=10, method="inclusive")[-1] if len(samples) > 1 else samples[0]
    return {"median_ms": statistics.median(samples), "p90_ms": p90, "runs": repeat, "first_ms": first_ms,
            "outcome": result.outcome, "feasible": result.feasible_count}


def measure_capacity(pod_path: Path, snapshot, limit: int | None, keep_spread: bool | None,
                     runs: int) -> dict[str, Any]:
    """`kplan capacity` after load: Planner (the node table and pod index, timed apart as load),
    then run_capacity placing replicas until one does not fit (or `limit`), the last cycle and
    its preemption dry run included; with the pod's topologySpreadConstraints or without, or
    (None) a plain 1-CPU pod. The fastest of `runs` runs, each on a Planner of its own."""
    from kplan.framework.config import default_profile
    from kplan.planning.check import run_capacity
    from kplan.planning.place import Planner

    template = incoming_pods(pod_path, snapshot, 1)[0]
    if keep_spread is None:  # a plain 1-CPU pod: no owner, no spread, no affinity
        from kplan.api.objects import build
        raw = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "one-cpu", "namespace": "team-00"},
               "spec": {"containers": [{"name": "main", "image": "registry.example/app:1",
                                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}
        template = build("Pod", raw, "one-cpu")
    elif not keep_spread:
        from kplan.api.objects import build
        raw = copy.deepcopy(template.raw)
        raw["spec"].pop("topologySpreadConstraints", None)
        template = build("Pod", raw, template.source)
    best = None
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        planner = Planner(snapshot, [default_profile()])
        load_s = time.perf_counter() - start
        gc.collect()
        start = time.perf_counter()
        run = run_capacity(planner, template, limit)
        timing = (time.perf_counter() - start, load_s, run)
        best = timing if best is None or timing[0] < best[0] else best
        planner = run = None
    seconds, load_s, run = best
    placed = run.replicas
    return {"replicas": placed, "seconds": seconds, "load_s": load_s, "pods_per_s": placed / seconds,
            "stop": run.stop_outcome, "spread": keep_spread, "pass": placed / seconds >= CAPACITY_MIN_PODS_S}


def measure_capacity_preemption(pod_path: Path, snapshot, g: dict[str, Any], preempting: int) -> dict[str, Any]:
    """`kplan capacity --allow-preemption` after load: the generator's pod (priority 10, with its zone spread)
    placed up to `preempting` replicas past the free room (g), each of which preempts or lands in room an
    eviction freed; the time per replica past the free room takes (g)'s time for the free ones off."""
    from kplan.framework.config import default_profile
    from kplan.planning.check import run_capacity
    from kplan.planning.place import Planner

    template = incoming_pods(pod_path, snapshot, 1)[0]
    planner = Planner(snapshot, [default_profile()])
    gc.collect()
    start = time.perf_counter()
    run = run_capacity(planner, template, g["replicas"] + preempting, allow_preemption=True)
    seconds = time.perf_counter() - start
    by_preemption = run.replicas - run.free
    return {"replicas": run.replicas, "free": run.free, "by_preemption": by_preemption,
            "preempting": run.preempting, "evicted": len(run.evicted or ()), "seconds": seconds,
            "ms_per_replica": (seconds - g["seconds"]) * 1000 / max(by_preemption, 1), "stop": run.stop_outcome}


def capacity_run(g: dict[str, Any]) -> str:
    return f"{g['replicas']} replicas in {g['seconds']:.2f} s, then {g['stop'] or 'stopped'}"


def best_wall(cmd: list[str], runs: int = HELP_RUNS) -> float:
    walls = []
    for _ in range(runs):
        wall, code, _ = run_child(cmd, ROOT, None)
        if code != 0:
            raise SystemExit(f"bench: `{' '.join(cmd)}` exited {code}")
        walls.append(wall)
    return min(walls)


def measure_help() -> tuple[float, float]:
    """`kplan --help`, and a bare `python -c pass` for reference (interpreter and site start-up)."""
    return best_wall([*kplan_command(), "--help"]), best_wall([sys.executable, "-c", "pass"])


def command_paths() -> list[list[str]]:
    """Every command path of the CLI (`place`, `quota status`...), groups included, from the Click tree."""
    import typer.main

    from kplan.cli.app import app

    paths: list[list[str]] = []

    def walk(command: Any, path: list[str], ctx: Any) -> None:
        for name in command.list_commands(ctx) if hasattr(command, "list_commands") else ():
            sub = command.get_command(ctx, name)
            paths.append([*path, name])
            walk(sub, [*path, name], sub.make_context(name, [], parent=ctx, resilient_parsing=True))

    root = typer.main.get_command(app)
    walk(root, [], root.make_context("kplan", [], resilient_parsing=True))
    return paths


def measure_command_help() -> dict[str, float]:
    """`kplan COMMAND -h` for every command path, best of HELP_RUNS each."""
    return {" ".join(path): best_wall([*kplan_command(), *path, "-h"]) for path in command_paths()}


def kubernetes_imported() -> bool:
    """Whether importing kplan.cli.app pulls in the kubernetes client, in a fresh interpreter."""
    probe = ("import sys, kplan.cli.app; "
             "print(any(m == 'kubernetes' or m.startswith('kubernetes.') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env=clean_env()).stdout.strip()
    return out == "True"


def hot_spots(fn: Callable[[], Any], name: str, top: int) -> dict[str, list[dict[str, Any]]]:
    """Profiles fn; writes bench/out/profile-<name>.prof; returns the top entries by cumulative and own time."""
    prof = cProfile.Profile()
    prof.runcall(fn)
    prof.dump_stats(OUT / f"profile-{name}.prof")
    stats = pstats.Stats(prof, stream=io.StringIO())
    rows = []
    for (file, line, func), (_, calls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        if Path(file).resolve() == Path(__file__).resolve():
            continue  # the harness's own wrappers
        where = func if file == "~" else f"{_short(file)}:{line}({func})"
        rows.append({"function": where, "calls": calls, "own_s": tottime, "cumulative_s": cumtime})
    return {"cumulative": sorted(rows, key=lambda r: -r["cumulative_s"])[:top],
            "own": sorted(rows, key=lambda r: -r["own_s"])[:top]}


def _short(file: str) -> str:
    p = Path(file)
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        parts = p.parts
        return str(Path(*parts[parts.index("site-packages") + 1:])) if "site-packages" in parts else p.name


# -- report -------------------------------------------------------------------------------------


DEVICES_MAX_RATIO = 1.2  # `kplan place` of a pod with a ResourceClaim within 1.2x of the same pod without
GPU_NODES, GPUS_PER_NODE = 500, 8


def device_inputs(pod_path: Path, nodes: int, per_node: int) -> tuple[Path, Path]:
    """The DRA part of (o), written to bench/out: `nodes` GPU nodes (16 CPUs / 128Gi) over the three zones,
    each with a ResourceSlice of `per_node` GPUs of the driver gpu.example.com, half of them held by a
    running job's claim; a DeviceClass and a claim template of one GPU; and the generator's pod asking
    for a GPU through that template."""
    dump = OUT / f"dra-{nodes}x{per_node}.json"
    items: list[dict[str, Any]] = [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
         "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "one-gpu", "namespace": "team-00"},
         "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
             "deviceClassName": "gpu.example.com", "count": 1}}]}}}}]
    for k in range(nodes):
        name = f"dra-gpu-{k:04d}"
        items.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": f"zone-{'abc'[k % 3]}"}},
            "status": {"allocatable": {"cpu": "16", "memory": "128Gi", "pods": "110"}}})
        items.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                      "metadata": {"name": f"{name}-gpu.example.com"},
                      "spec": {"driver": "gpu.example.com", "nodeName": name,
                               "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                               "devices": [{"name": f"gpu-{d}", "attributes": {
                                   "model": {"string": "h100" if k % 2 else "a100"}, "index": {"int": d},
                                   "uuid": {"string": f"GPU-{k:04d}-{d}"}},
                                   "capacity": {"memory": {"value": "80Gi"}}} for d in range(per_node)]}})
        half = [f"gpu-{d}" for d in range(per_node // 2)]
        items.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                      "metadata": {"name": f"job-{k:04d}-gpus", "namespace": "team-01"},
                      "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                          "deviceClassName": "gpu.example.com", "count": len(half)}}]}},
                      "status": {"allocation": {"devices": {"results": [
                          {"request": "gpu", "driver": "gpu.example.com", "pool": name, "device": d} for d in half]},
                          "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                              {"key": "metadata.name", "operator": "In", "values": [name]}]}]}}}})
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    import yaml
    pod = yaml.safe_load(pod_path.read_text())
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    claimed = OUT / "pod-gpu-claim.json"
    claimed.write_text(json.dumps(pod))
    return dump, claimed


def measure_devices(cluster: Path, pod: Path, runs: int) -> dict[str, Any]:
    """`kplan place` of the generator's pod on the reference dump plus the GPU nodes of device_inputs,
    with and without a claim of one GPU, runs interleaved; best of `runs` each."""
    dump, claimed = device_inputs(pod, GPU_NODES, GPUS_PER_NODE)
    report = OUT / "devices-report.json"
    walls: dict[str, list[float]] = {"plain": [], "claim": []}
    outcome = {}
    for _ in range(runs):
        for name, path in (("plain", pod), ("claim", claimed)):
            cmd = [*kplan_command(), "place", path.name, "-f", cluster.name, "-f", dump.name, "-o", "json"]
            walls[name].append(best_answer_wall(cmd, report, 1))
            placed = json.loads(report.read_text())["placements"][0]
            outcome[name] = f"{placed['outcome']} on {placed['node']}"
    ratio = min(walls["claim"]) / min(walls["plain"])
    return {"plain_s": min(walls["plain"]), "claim_s": min(walls["claim"]), "ratio": ratio,
            "gpu_nodes": GPU_NODES, "gpus_per_node": GPUS_PER_NODE, "outcome": outcome,
            "pass": ratio <= DEVICES_MAX_RATIO}


def verdict(ok: bool | None) -> str:
    return "" if ok is None else ("PASS" if ok else "FAIL")


def table(res: dict[str, Any]) -> str:
    p, r = res["params"], res["results"]
    a, b, c, d, d2, e, f, g0, g, g2 = (r[k] for k in ("a", "b", "c", "d", "d2", "e", "f", "g0", "g", "g2"))
    rows = [
        ("(a) json.load of the dump", f"{a['seconds']:.2f} s", "", None),
        ("    json.loads, collector off, fresh process (baseline of (c))", f"{a['parse_floor_s']:.2f} s", "", None),
        ("(b) load_snapshot", f"{b['load_snapshot_s']:.2f} s", "", None),
        ("    ClusterState construction", f"{b['cluster_state_s']:.2f} s", "", None),
        ("    pod index", f"{b['pod_index_s']:.2f} s", "", None),
        ("    kplan load, total", f"{b['total_s']:.2f} s", "", None),
        ("    ratio to (a)", f"{b['ratio']:.2f}x", "", None),
        ("(c) kplan place POD -f DUMP -o json, wall", f"{c['seconds']:.2f} s", "", None),
        ("    ratio to the baseline of (a)", f"{c['ratio']:.2f}x", f"<= {E2E_MAX_RATIO:g}x", c["pass"]),
        (f"(d) Framework.schedule over {p['nodes']} nodes, median of {d['runs']}",
         f"{d['median_ms']:.1f} ms", f"< {PIPELINE_MAX_MS:g} ms", d["pass"]),
        ("    p90", f"{d['p90_ms']:.1f} ms", "", None),
        ("    first cycle (builds label columns and caches)", f"{d['first_ms']:.0f} ms", "", None),
        ("(d2) zone spread + hostname anti-affinity pod, median", f"{d2['median_ms']:.1f} ms",
         f"< {POD_TO_POD_MAX_MS:g} ms", d2["pass"]),
        ("    first cycle of that pod", f"{d2['first_ms']:.1f} ms", "", None),
        (f"(e) kplan --help, best of {HELP_RUNS}", f"{e['seconds']:.3f} s", f"< {HELP_MAX_S:g} s",
         e["seconds"] < HELP_MAX_S),
        *((f"    kplan {path} -h", f"{seconds:.3f} s", f"< {HELP_MAX_S:g} s", seconds < HELP_MAX_S)
          for path, seconds in e["commands"].items()),
        (f"    python -c pass, best of {HELP_RUNS} (reference)", f"{e['python_startup_s']:.3f} s", "", None),
        ("    kubernetes imported by kplan.cli.app", "yes" if e["kubernetes_imported"] else "no", "no",
         not e["kubernetes_imported"]),
        ("(f) peak RSS of (c)", f"{f['peak_rss_mib']:.0f} MiB", f"<= {E2E_MAX_MIB:g} MiB", f["pass"]),
        (f"(g) kplan capacity after load, plain 1-CPU pod ({capacity_run(g0)})",
         f"{g0['pods_per_s']:.1f} pods/s", f">= {CAPACITY_MIN_PODS_S} pods/s", g0["pass"]),
        (f"    the generator's pod, with its zone spread ({capacity_run(g)})",
         f"{g['pods_per_s']:.1f} pods/s", f">= {CAPACITY_MIN_PODS_S} pods/s", g["pass"]),
        (f"    without the pod's topology spread ({capacity_run(g2)})",
         f"{g2['pods_per_s']:.1f} pods/s", f">= {CAPACITY_MIN_PODS_S} pods/s", g2["pass"]),
        ("    load before it (Planner: node table and pod index)", f"{g['load_s']:.2f} s", "", None),
    ]
    pre = r.get("s")
    if pre:
        rows += [
            (f"(s) kplan capacity --allow-preemption after load, the generator's pod: {pre['free']} free + "
             f"{pre['by_preemption']} by preemption ({pre['preempting']} preempting, {pre['evicted']} pods "
             f"evicted), then {pre['stop']}", f"{pre['seconds']:.2f} s", "", None),
            ("    per replica past the free room ((g)'s time for the free ones taken off)",
             f"{pre['ms_per_replica']:.1f} ms", "", None),
        ]
    h = r.get("h")
    if h:
        s = h["summary"]
        rows += [
            (f"(h) kplan pending -A, {s['pending']} pending pods, wall", f"{h['pending_s']:.2f} s", "", None),
            ("    kplan place POD on the same dump, wall", f"{h['place_s']:.2f} s", "", None),
            ("    ratio", f"{h['ratio']:.2f}x", f"<= {PENDING_MAX_RATIO:g}x", h["pass"]),
        ]
    j = r.get("j")
    if j:
        used = ", ".join(f"{k} {n}" for k, n in j["nodes_used_by_run"].items())
        rows += [
            (f"(j) kplan compare, 2 variants, {j['replicas']} replicas, wall", f"{j['compare_s']:.2f} s", "", None),
            ("    kplan check of the same Deployment, wall", f"{j['check_s']:.2f} s", "", None),
            ("    ratio", f"{j['ratio']:.2f}x", f"<= {COMPARE_MAX_RATIO:g}x", j["pass"]),
            (f"    nodes the run used ({used})", "", "", None),
        ]
    k = r.get("k")
    if k:
        rows += [
            (f"(k) kplan check, {k['replicas']} replicas ({k['placed_without']} fit), wall", f"{k['check_s']:.2f} s",
             "", None),
            ("    the same with --add-node NODE:COUNT at the count found, wall", f"{k['at_count_s']:.2f} s", "", None),
            (f"    the same with --add-node NODE:auto (needs {k['nodes_needed']}, tried {k['tried']}), wall",
             f"{k['auto_s']:.2f} s", "", None),
            ("    ratio of :auto to the faster of the two checks", f"{k['ratio']:.2f}x", f"<= {AUTO_MAX_RATIO:g}x",
             k["pass"]),
            ("    ratio of the check without added nodes to one place of (c)", f"{k['overfull_ratio']:.2f}x",
             f"<= {OVERFULL_MAX_RATIO:g}x", k["overfull_pass"]),
        ]
    q = r.get("q")
    if q:
        rows += [
            (f"(q) kplan place of a pod preempting {q['victims']} pods, zone spread + zone anti-affinity, wall",
             f"{q['preempt_s']:.2f} s", "", None),
            ("    kplan place POD on the same dump, wall", f"{q['place_s']:.2f} s", "", None),
            ("    ratio", f"{q['ratio']:.2f}x", f"<= {PREEMPT_SPREAD_MAX_RATIO:g}x", q["pass"]),
        ]
    m = r.get("m")
    if m:
        rows += [
            (f"(m) kplan place POD-WITH-CLAIM on the dump with volumes ({m['storage_mib']:.0f} MiB), wall",
             f"{m['claim_s']:.2f} s", "", None),
            ("    kplan place POD on the dump without them, wall", f"{m['plain_s']:.2f} s", "", None),
            ("    ratio", f"{m['ratio']:.2f}x", f"<= {STORAGE_MAX_RATIO:g}x", m["pass"]),
        ]
    n = r.get("n")
    if n:
        s = n["summary"]
        rows += [
            (f"(n) kplan consolidate --max-nodes {n['max_nodes']} ({s['removable']} removable, {s['blocked']} "
             f"blocked, {s['podsMoved']} pods moved), wall", f"{n['consolidate_s']:.2f} s", "", None),
            ("    kplan place POD on the same dump, wall", f"{n['place_s']:.2f} s", "", None),
            ("    ratio", f"{n['ratio']:.2f}x", f"<= {CONSOLIDATE_MAX_RATIO:g}x", n["pass"]),
        ]
    for name, m in (r.get("l") or {}).items():
        rows += [
            (f"(l) kplan {name} with --html, wall (without: {m['plain_s']:.2f} s)", f"{m['html_s']:.2f} s", "", None),
            (f"    ratio, page {m['page_mib']:.1f} MiB", f"{m['ratio']:.2f}x",
             f"<= {HTML_MAX_RATIO:g}x, < {HTML_MAX_MIB:g} MiB", m["pass"]),
        ]
    ro = r.get("p")
    if ro:
        rows += [
            (f"(p) kplan check updating a running {ro['replicas']}-replica Deployment ({ro['steps']} rollout steps, "
             f"{'done' if ro['done'] else 'stuck'}), wall", f"{ro['update_s']:.2f} s", "", None),
            ("    kplan check of the same Deployment created fresh, wall", f"{ro['fresh_s']:.2f} s", "", None),
            ("    ratio", f"{ro['ratio']:.2f}x", f"<= {ROLLOUT_MAX_RATIO:g}x", ro["pass"]),
        ]
    o = r.get("o")
    if o:
        rows += [
            (f"(o) kplan place POD with a GPU claim, +{o['gpu_nodes']} GPU nodes x {o['gpus_per_node']} devices, "
             f"wall", f"{o['claim_s']:.2f} s", "", None),
            ("    the same pod without the claim, wall", f"{o['plain_s']:.2f} s", "", None),
            ("    ratio", f"{o['ratio']:.2f}x", f"<= {DEVICES_MAX_RATIO:g}x", o["pass"]),
        ]
    valid = r.get("r")
    if valid:
        rows += [
            (f"(r) kplan check of a {valid['docs']}-document manifest set ({valid['summary']['pods']} pods), wall",
             f"{valid['check_s']:.2f} s", "", None),
            ("    reading the set, plainly", f"{valid['read_s'] * 1000:.1f} ms", "", None),
            ("    reading it with strict field validation", f"{valid['strict_s'] * 1000:.1f} ms", "", None),
            ("    what strict validation adds, share of the check",
             f"{valid['cost_s'] * 1000:.1f} ms, {valid['share']:.1%}", f"<= {VALIDATION_MAX_SHARE:.0%}", valid["pass"]),
        ]
    head = ("MEASUREMENT", "VALUE", "TARGET", "RESULT")
    widths = [max(len(row[k]) for row in [head, *rows]) for k in range(3)]
    lines = [f"kplan bench: {p['nodes']} nodes, {p['pods']} pods ({p['cluster']}, {p['cluster_mib']:.0f} MiB); "
             f"python {p['python']}; load average {p['loadavg']:.1f} on {p['cpus']} CPUs",
             ""]
    for name, value, target, ok in [(*head[:3], head[3]), *rows]:
        result = ok if isinstance(ok, str) else verdict(ok)
        lines.append(f"{name:<{widths[0]}}   {value:>{widths[1]}}   {target:<{widths[2]}}   {result}".rstrip())
    lines.append("")
    lines.append(f"(c) ran `{c['command']}` in bench/out: {c['outcome']} on {c['node']}")
    lines.append(f"(d) {d['outcome']}, {d['feasible']} feasible nodes; (d) passes on the median")
    if p["loadavg"] > p["cpus"]:
        lines.append(f"warning: the machine was busy (load average {p['loadavg']:.1f} > {p['cpus']} CPUs); "
                     "timings are inflated")
    return "\n".join(lines)


def hot_spot_text(name: str, spots: dict[str, list[dict[str, Any]]]) -> str:
    lines = []
    for key, label in (("cumulative", "cumulative"), ("own", "own time")):
        lines.append(f"\nhot spots of {name}, by {label} (cProfile, so slower than above):")
        for row in spots[key]:
            lines.append(f"  {row['cumulative_s']:8.3f} s cum  {row['own_s']:8.3f} s own  "
                         f"{row['calls']:>9}  {row['function']}")
    return "\n".join(lines)


# -- main ---------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=150000, help="running pods in the cluster")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs of (d), after one warm-up")
    ap.add_argument("--load-repeat", type=int, default=1, help="runs of (a), (b), (c); the best counts")
    ap.add_argument("--replicas", type=int, default=0,
                    help="stop (g) after this many replicas (default 0: until one does not fit, as kplan capacity)")
    ap.add_argument("--preempting", type=int, default=PREEMPTING_REPLICAS,
                    help="replicas (s) places past the free room with --allow-preemption (0: skip (s))")
    ap.add_argument("--pending", type=int, default=2000,
                    help="pending pods in the dump of (h) (0: skip (h))")
    ap.add_argument("--compare", type=int, default=COMPARE_REPLICAS,
                    help="replicas of the Deployment of (j) (0: skip (j))")
    ap.add_argument("--auto-replicas", type=int, default=AUTO_REPLICAS,
                    help="replicas of the Deployment of (k), which need added nodes (0: skip (k))")
    ap.add_argument("--consolidate", type=int, default=CONSOLIDATE_NODES,
                    help="--max-nodes of the consolidation plan of (n) (0: skip (n))")
    ap.add_argument("--rollout", type=int, default=ROLLOUT_REPLICAS,
                    help="replicas of the running Deployment (p) updates (0: skip (p))")
    ap.add_argument("--validation", type=int, default=VALIDATION_DOCS,
                    help="documents of the manifest set of (r) (0: skip (r))")
    ap.add_argument("--html", action=argparse.BooleanOptionalAction, default=True,
                    help="(l): place, nodes, check, capacity and pending with and without --html")
    ap.add_argument("--storage", action=argparse.BooleanOptionalAction, default=True,
                    help="(m): kplan place of a pod with a claim on the dump with volumes")
    ap.add_argument("--devices", action=argparse.BooleanOptionalAction, default=True,
                    help=f"(o): place a pod with and without a GPU claim, the dump plus {GPU_NODES} GPU nodes "
                         f"of {GPUS_PER_NODE} devices in ResourceSlices")
    ap.add_argument("--preempt-spread", action=argparse.BooleanOptionalAction, default=True,
                    help="(q): place a pod that preempts, with a zone spread and a zone anti-affinity")
    ap.add_argument("--cprofile", type=int, metavar="N", default=0,
                    help="also profile (b) and (d) and list the top N functions")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args()
    if args.repeat < 1 or args.load_repeat < 1 or args.replicas < 0:
        ap.error("--repeat and --load-repeat must be at least 1, --replicas at least 0")

    cluster, pod_path = inputs(args.nodes, args.pods)
    byte_compile_kplan()
    load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    from kplan import __version__

    params = {"nodes": args.nodes, "pods": args.pods, "repeat": args.repeat, "load_repeat": args.load_repeat,
              "replicas": args.replicas, "cluster": str(cluster.relative_to(ROOT)),
              "cluster_mib": cluster.stat().st_size / 2**20, "kplan": __version__,
              "python": platform.python_version(), "cpus": os.cpu_count() or 1, "loadavg": load1}
    r: dict[str, Any] = {}

    # (c) first, then every other step that times kplan commands; the in-process steps last (see there).
    log("(c)+(f) end-to-end kplan place ...")
    c = measure_end_to_end(cluster, pod_path, args.load_repeat)
    floor_s = c.pop("floor_s")
    r["c"] = {**{k: v for k, v in c.items() if k != "peak_rss_mib"}, "ratio": c["seconds"] / floor_s,
              "pass": c["seconds"] / floor_s <= E2E_MAX_RATIO}
    r["f"] = {"peak_rss_mib": c["peak_rss_mib"], "pass": c["peak_rss_mib"] <= E2E_MAX_MIB}

    if args.pending:
        log(f"(h) kplan pending over {args.pending} pending pods ...")
        r["h"] = measure_pending(pending_input(args.nodes, args.pods, args.pending), pod_path, args.load_repeat)

    if args.auto_replicas:
        log(f"(k) kplan check --add-node NODE:auto, {args.auto_replicas} replicas ...")
        r["k"] = measure_auto(cluster, args.auto_replicas, args.load_repeat, c["seconds"])

    if args.preempt_spread:
        log("(q) kplan place of a pod that preempts, with a zone spread and a zone anti-affinity ...")
        r["q"] = measure_preempt_spread(cluster, pod_path, args.load_repeat)

    if args.storage:
        log(f"(m) kplan place of a pod with a claim, a volume for every {STORAGE_EVERY}th pod ...")
        r["m"] = measure_storage(cluster, pod_path, args.load_repeat)

    if args.consolidate:
        log(f"(n) kplan consolidate --max-nodes {args.consolidate} ...")
        r["n"] = measure_consolidate(cluster, pod_path, args.consolidate, args.load_repeat)

    if args.rollout:
        log(f"(p) kplan check updating a running {args.rollout}-replica Deployment ...")
        r["p"] = measure_rollout(cluster, args.rollout, args.nodes, args.load_repeat)

    if args.validation:
        log(f"(r) strict field validation of a {args.validation}-document manifest set ...")
        r["r"] = measure_validation(cluster, args.validation, args.load_repeat)

    if args.html:
        log("(l) --html against the same runs without it ...")
        pending = pending_input(args.nodes, args.pods, args.pending) if args.pending else None
        deploy, _, _ = compare_inputs(args.compare or COMPARE_REPLICAS)
        r["l"] = measure_html(html_cases(cluster, pod_path, pending, deploy), args.load_repeat)

    if args.devices:
        log(f"(o) a pod with a GPU claim, {GPU_NODES} GPU nodes of {GPUS_PER_NODE} devices ...")
        r["o"] = measure_devices(cluster, pod_path, max(args.load_repeat, 3))

    log("(e) start-up ...")
    help_s, python_s = measure_help()
    commands = measure_command_help()
    imported = kubernetes_imported()
    r["e"] = {"seconds": help_s, "commands": commands, "python_startup_s": python_s,
              "pass": max([help_s, *commands.values()]) < HELP_MAX_S, "kubernetes_imported": imported}

    if args.compare:
        log(f"(j) kplan compare of two configurations, {args.compare} replicas ...")
        r["j"] = measure_compare(cluster, args.compare, args.load_repeat)

    # The steps that build the cluster in this process come last: a harness process holding (or having
    # held) several GB slowed the kplan commands it timed afterwards, those that build most the most
    # (place on the dump with volumes: 3.2 s from a fresh harness, 4.0 s next to two loaded snapshots).
    log("(a) json.load ...")
    a_s = measure_json_load(cluster, args.load_repeat)
    r["a"] = {"seconds": a_s, "parse_floor_s": floor_s}  # the parse floor is measured with (c), runs interleaved

    log("(b) load_snapshot, ClusterState, pod index ...")
    snap_s, state_s, index_s, snapshot, state = measure_kplan_load(cluster, args.load_repeat)
    r["b"] = {"load_snapshot_s": snap_s, "cluster_state_s": state_s, "pod_index_s": index_s,
              "total_s": snap_s + state_s + index_s,
              "ratio": (snap_s + state_s + index_s) / a_s}
    snapshot = with_replica_sets(snapshot, pod_path)

    log("(d) pipeline latency ...")
    fw = framework(snapshot)
    pod = incoming_pods(pod_path, snapshot, 1)[0]
    d = measure_pipeline(fw, pod, state, args.repeat)
    r["d"] = {**d, "pass": d["median_ms"] < PIPELINE_MAX_MS}
    d2 = measure_pipeline(fw, pod_to_pod_variant(pod), state, args.repeat)
    r["d2"] = {**d2, "pass": d2["median_ms"] < POD_TO_POD_MAX_MS}

    log("(g) kplan capacity ...")
    limit = args.replicas or None
    r["g0"] = measure_capacity(pod_path, snapshot, limit, keep_spread=None, runs=args.load_repeat)
    r["g"] = measure_capacity(pod_path, snapshot, limit, keep_spread=True, runs=args.load_repeat)
    r["g2"] = measure_capacity(pod_path, snapshot, limit, keep_spread=False, runs=args.load_repeat)
    if args.preempting and r["g"]["stop"] == "NeedsPreemption":
        log(f"(s) kplan capacity --allow-preemption, {args.preempting} replicas past the free room ...")
        r["s"] = measure_capacity_preemption(pod_path, snapshot, r["g"], args.preempting)

    hot: dict[str, Any] = {}
    if args.cprofile:
        pod = incoming_pods(pod_path, snapshot, 1)[0]
        snapshot = state = fw = None
        gc.collect()
        log("profiling (b) ...")
        from kplan.cluster.state import ClusterState
        from kplan.sources.snapshot import load_snapshot
        holder: dict[str, Any] = {}

        def load() -> None:
            holder["snapshot"] = load_snapshot([str(cluster)])
            holder["state"] = ClusterState(holder["snapshot"].nodes, holder["snapshot"].pods)
        hot["b"] = hot_spots(load, "load", args.cprofile)
        log("profiling (d) ...")
        fw = framework(holder["snapshot"])
        fw.schedule(pod, holder["state"], assume=False)
        hot["d"] = hot_spots(lambda: [fw.schedule(pod, holder["state"], assume=False)
                                      for _ in range(args.repeat)], "pipeline", args.cprofile)
        holder.clear()

    res = {"params": params, "targets": {"e2e_max_ratio": E2E_MAX_RATIO, "e2e_max_mib": E2E_MAX_MIB,
                                         "pipeline_max_ms": PIPELINE_MAX_MS,
                                         "help_max_s": HELP_MAX_S, "kubernetes_imported": False},
           "results": {k: r[k] for k in sorted(r)}}
    if hot:
        res["hot_spots"] = hot
    failed = [k for k, v in r.items() if v.get("pass") is False or v.get("overfull_pass") is False] + \
        (["e (kubernetes)"] if imported else [])
    res["failed"] = failed
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(table(res))
        for key, name in (("b", "(b) load"), ("d", f"(d) {args.repeat} pipeline runs")):
            if key in hot:
                print(hot_spot_text(name, hot[key]))
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())
