"""Every command's JSON on the shipped samples, byte for byte against a stored answer.

The JSON is kplan's contract with scripts and CI: a change of layout inside kplan must not move a
byte of it. Each entry of GOLDEN is a command line run as users run it, with `-o json` appended;
its answer is `tests/golden/<name>.json`, and the test compares stdout and the exit code. Time is
fixed with `--now` wherever a command takes it, so the answers are the same on any day and machine.

When the JSON changes on purpose, `python -m tests.test_golden_json NAME...` (no name: all) rewrites
the answers; review the diff as part of the change.
"""
from __future__ import annotations

import json
import sys

import pytest

from tests.run_kplan import ROOT, run_kplan

GOLDEN_DIR = ROOT / "tests" / "golden"
NOW = ("--now", "2026-05-01T12:00:00Z")
QUOTA = ("--config", "samples/quota/scheduler-config.yaml")
LIMITAWARE = ("--config", "samples/limitaware/scheduler-config.yaml")
LOADAWARE = ("-f", "samples/loadaware/cluster.yaml", "--config", "samples/loadaware/scheduler-config.yaml")
CLUSTER = ("-f", "samples/cluster.yaml")

# name -> (exit code, command line without `-o json`)
GOLDEN: dict[str, tuple[int, tuple[str, ...]]] = {
    # place
    "place-burstable": (0, ("place", "samples/pod-burstable.yaml", *CLUSTER, *NOW)),
    "place-burstable-too-big": (1, ("place", "samples/pod-burstable.yaml", "samples/pod-too-big.yaml", *CLUSTER, *NOW)),
    "place-gpu-no-toleration": (1, ("place", "samples/pod-gpu-no-toleration.yaml", "samples/pod-gpu.yaml", *CLUSTER,
                                    *NOW)),
    "place-running-pod": (0, ("place", "shop/web-7d9f-1", *CLUSTER, *NOW)),
    "place-spread-explain": (0, ("place", "samples/topology/web-spread.yaml", *CLUSTER, "--explain", "node-a1",
                                 *NOW)),
    "place-storefront-replicas": (0, ("place", "samples/topology/storefront-replicas.yaml", *CLUSTER, *NOW)),
    "place-anti-affinity": (0, ("place", "samples/topology/cache-anti-affinity.yaml", *CLUSTER, *NOW)),
    "place-service": (0, ("place", "samples/topology/web-service.yaml", "samples/pod-burstable.yaml", *CLUSTER, *NOW)),
    "place-limitaware-story1": (0, ("place", "samples/limitaware/pod5.yaml", "-f", "samples/limitaware/story-cluster.yaml",
                                    *LIMITAWARE, *NOW)),
    "place-limitaware-story2-explain": (1, ("place", "samples/limitaware/pod5.yaml", "-f",
                                            "samples/limitaware/story2-cluster.yaml", *LIMITAWARE, "--explain", "node1",
                                            *NOW)),
    "place-limitaware-kep217": (0, ("place", "samples/limitaware/pod5.yaml", "-f", "samples/limitaware/story-cluster.yaml",
                                    "--config", "samples/limitaware/kep217-scheduler-config.yaml", *NOW)),
    "place-loadaware-explain": (0, ("place", "samples/loadaware/pod-worker.yaml", *LOADAWARE, "--explain", "cold-1",
                                    *NOW)),
    "place-loadaware-burst": (1, ("place", "samples/loadaware/pods-burst.yaml", *LOADAWARE, *NOW)),
    "place-quota-story1": (1, ("place", *QUOTA, "-f", "samples/quota/story1/cluster.yaml",
                               "samples/quota/story1/a-3-gpus.yaml", "samples/quota/story1/a-2-gpus.yaml",
                               "samples/quota/story1/b-3-gpus.yaml", "samples/quota/story1/b-1-gpu.yaml", *NOW)),
    "place-quota-story2-step1": (1, ("place", *QUOTA, "-f", "samples/quota/story2/cluster-step1.yaml",
                                     "samples/quota/story2/b-1-gpu.yaml", *NOW)),
    "place-quota-story2-step2": (1, ("place", *QUOTA, "-f", "samples/quota/story2/cluster-step2.yaml",
                                     "samples/quota/story2/pod-c.yaml", *NOW)),
    "place-quota-cross-namespace": (1, ("place", *QUOTA, "-f", "samples/quota/cross-namespace/cluster.yaml",
                                        "samples/quota/cross-namespace/quota1-nginx.yaml",
                                        "samples/quota/cross-namespace/quota2-nginx.yaml", *NOW)),
    "place-quota-cross-node": (1, ("place", *QUOTA, "-f", "samples/quota/cross-node/cluster.yaml",
                                   "samples/quota/cross-node/quota2-nginx.yaml", *NOW)),
    "place-devices-one-gpu": (0, ("place", "samples/devices/pod-one-gpu.yaml", "-f", "samples/devices/cluster.yaml",
                                  *NOW)),
    "place-devices-a100-pair": (0, ("place", "samples/devices/pod-a100-pair.yaml", "-f", "samples/devices/cluster.yaml",
                                    *NOW)),
    "place-versions-1.35": (0, ("place", "samples/versions/pod.yaml", "-f", "samples/versions/cluster.yaml",
                                "--kube-version", "1.35", *NOW)),
    "place-versions-pod-level": (0, ("place", "samples/versions/pod-level.yaml", "-f", "samples/versions/cluster.yaml",
                                     "--kube-version", "1.33", *NOW)),
    # pending
    "pending-all": (1, ("pending", "-f", "samples/pending/cluster.yaml", "-A", "--now", "2026-11-25T12:00:00Z")),
    "pending-storage": (1, ("pending", "-n", "shop", "-f", "samples/storage/cluster.yaml",
                            "--now", "2026-11-26T04:05:00Z")),
    "pending-devices": (1, ("pending", "-n", "ml", "-f", "samples/devices/cluster.yaml", *NOW)),
    # check
    "check-apps-too-big": (1, ("check", "samples/check/apps.yaml", "samples/check/too-big.yaml", *CLUSTER, *NOW)),
    "check-apps-gpu": (1, ("check", "samples/check/apps.yaml", "samples/pod-gpu-no-toleration.yaml", *CLUSTER, *NOW)),
    "check-add-node-count": (0, ("check", "samples/check/apps.yaml", "samples/check/too-big.yaml", *CLUSTER,
                                 "--add-node", "samples/check/node-c-large.yaml:2", *NOW)),
    "check-add-node-auto": (0, ("check", "samples/check/apps.yaml", "samples/check/too-big.yaml", *CLUSTER,
                                "--add-node", "samples/check/node-c-large.yaml:auto", *NOW)),
    "check-drain": (1, ("check", "samples/check/apps.yaml", *CLUSTER, "--drain", "pool=general", *NOW)),
    "check-remove-cordon": (0, ("check", "samples/check/apps.yaml", *CLUSTER, "--remove-node", "node-c2",
                                "--cordon", "node-a1", *NOW)),
    "check-allow-preemption": (0, ("check", "samples/capacity/checkout.yaml", "-f", "samples/capacity/cluster.yaml",
                                   "--allow-preemption", *NOW)),
    "check-rollout-stuck": (1, ("check", "samples/rollout/web-v2.yaml", "-f", "samples/rollout/cluster.yaml", *NOW)),
    "check-rollout-unavailable": (0, ("check", "samples/rollout/web-v2-unavailable.yaml", "-f",
                                      "samples/rollout/cluster.yaml", *NOW)),
    "check-no-rollout": (1, ("check", "samples/rollout/web-v2.yaml", "-f", "samples/rollout/cluster.yaml",
                             "--no-rollout", *NOW)),
    "check-at-max": (1, ("check", "samples/rollout/web-v2-unavailable.yaml", "-f", "samples/rollout/cluster.yaml",
                         "--at-max", *NOW)),
    "check-storage": (1, ("check", "samples/storage/cache.yaml", "-f", "samples/storage/cluster.yaml", *NOW)),
    "check-devices": (1, ("check", "samples/devices/deployment-train.yaml", "-f", "samples/devices/cluster.yaml", *NOW)),
    "check-devices-auto": (0, ("check", "samples/devices/deployment-train.yaml", "-f", "samples/devices/cluster.yaml",
                               "--add-node", "samples/devices/node-gpu-template.yaml:auto", *NOW)),
    "check-quota": (1, ("check", *QUOTA, "-f", "samples/quota/story1/cluster.yaml",
                        "samples/quota/story1/a-3-gpus.yaml", "samples/quota/story1/b-3-gpus.yaml", *NOW)),
    # capacity
    "capacity-burstable": (0, ("capacity", "samples/pod-burstable.yaml", *CLUSTER, *NOW)),
    "capacity-max": (0, ("capacity", "samples/pod-burstable.yaml", *CLUSTER, "--max", "3", *NOW)),
    "capacity-replicas-auto": (0, ("capacity", "samples/pod-burstable.yaml", *CLUSTER, "--replicas", "40",
                                   "--add-node", "samples/check/node-c-large.yaml:auto", *NOW)),
    "capacity-allow-preemption": (0, ("capacity", "samples/capacity/checkout.yaml", "-f",
                                      "samples/capacity/cluster.yaml", "--allow-preemption", *NOW)),
    "capacity-no-preemption": (0, ("capacity", "samples/capacity/checkout.yaml", "-f", "samples/capacity/cluster.yaml",
                                   *NOW)),
    "capacity-rollout": (0, ("capacity", "samples/rollout/web-v2.yaml", "-f", "samples/rollout/cluster.yaml", *NOW)),
    "capacity-devices": (0, ("capacity", "samples/devices/pod-one-gpu.yaml", "-f", "samples/devices/cluster.yaml",
                             *NOW)),
    "capacity-drain": (0, ("capacity", "samples/pod-burstable.yaml", *CLUSTER, "--drain", "node-b1", *NOW)),
    # compare
    "compare-configs": (0, ("compare", "samples/compare/web.yaml", *CLUSTER,
                            "--config", "samples/compare/least-allocated.yaml",
                            "--config", "samples/compare/most-allocated.yaml", *NOW)),
    "compare-versions": (0, ("compare", "samples/versions/pod.yaml", "-f", "samples/versions/cluster.yaml",
                             "--kube-version", "1.35", "--kube-version", "1.36", *NOW)),
    "compare-variants": (1, ("compare", "samples/check/apps.yaml", "samples/pod-gpu-no-toleration.yaml", *CLUSTER,
                             "--variant", "as-is=", "--variant", "drained=--drain node-c2", *NOW)),
    # nodes
    "nodes": (0, ("nodes", *CLUSTER)),
    "nodes-group-by-zone": (0, ("nodes", *CLUSTER, "--group-by", "zone")),
    "nodes-selector-sort": (0, ("nodes", *CLUSTER, "-l", "pool in (general)", "--sort", "limit-ratio")),
    "nodes-limitaware": (0, ("nodes", "-f", "samples/limitaware/story-cluster.yaml", *LIMITAWARE)),
    "nodes-after": (0, ("nodes", "-f", "samples/limitaware/story-cluster.yaml", *LIMITAWARE,
                        "--after", "samples/limitaware/pod5.yaml", *NOW)),
    "nodes-usage": (0, ("nodes", *LOADAWARE, "--usage", *NOW, "--pod", "samples/loadaware/pod-worker.yaml")),
    "nodes-devices": (0, ("nodes", "-f", "samples/devices/cluster.yaml")),
    "nodes-storage": (0, ("nodes", "-f", "samples/storage/cluster.yaml")),
    # consolidate
    "consolidate": (0, ("consolidate", "-f", "samples/consolidate/cluster.yaml", *NOW)),
    "consolidate-max-threshold": (0, ("consolidate", "-f", "samples/consolidate/cluster.yaml", "--max-nodes", "1",
                                      "--threshold", "0.7", *NOW)),
    # quota
    "quota-status": (0, ("quota", "status", "-f", "samples/quota/story1/cluster.yaml", "-A")),
    "quota-status-namespace": (0, ("quota", "status", "-f", "samples/quota/story2/cluster-step2.yaml", "-n",
                                   "quota1")),
    "quota-check": (0, ("quota", "check", "-f", "samples/quota/story1/cluster.yaml",
                        "samples/quota/story1/b-3-gpus.yaml")),
    "quota-check-several": (1, ("quota", "check", *QUOTA, "-f", "samples/quota/cross-namespace/cluster.yaml",
                                "samples/quota/cross-namespace/quota1-nginx.yaml",
                                "samples/quota/cross-namespace/quota2-nginx.yaml")),
}


def run_json(name: str) -> tuple[int, str, str]:
    return run_kplan(*GOLDEN[name][1], "-o", "json", timeout=300)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_json_is_byte_identical_to_the_stored_answer(name):
    want_code = GOLDEN[name][0]
    code, out, err = run_json(name)
    assert (code, err if code == 2 else "") == (want_code, "")
    assert out == (GOLDEN_DIR / f"{name}.json").read_text(encoding="utf-8")


def test_every_stored_answer_has_a_command():
    stored = {path.stem for path in GOLDEN_DIR.glob("*.json")}
    assert stored == set(GOLDEN)


def rewrite(names: list[str]) -> None:
    GOLDEN_DIR.mkdir(exist_ok=True)
    for name in names or sorted(GOLDEN):
        code, out, err = run_json(name)
        json.loads(out)
        if code != GOLDEN[name][0]:
            raise SystemExit(f"{name}: exit {code}, expected {GOLDEN[name][0]}: {err}")
        (GOLDEN_DIR / f"{name}.json").write_text(out, encoding="utf-8")


if __name__ == "__main__":
    rewrite(sys.argv[1:])
