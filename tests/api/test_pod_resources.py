"""Pod requests as the scheduler computes them.

Cases ported from TestPodInfoCalculateResources (pkg/scheduler/framework/types_test.go, the
release with pod-level resources enabled) and from resourcehelper's PodRequests tests for
restartable init containers; QoS from GetPodQOS.
"""
import pytest

from builders import container, pod
from kplan.api.objects import Pod

MI = 1024 * 1024
DEFAULT_CPU, DEFAULT_MEM = 100, 200 * MI


def c(requests=None, limits=None, restart_policy=None):
    return container(requests=requests, limits=limits, restart_policy=restart_policy)


CASES = [
    ("requestless container", dict(containers=[c()]), {}, (DEFAULT_CPU, DEFAULT_MEM)),
    ("1X container with requests", dict(containers=[c({"cpu": "500m", "memory": "500Mi"})]),
     {"cpu": 500, "memory": 500 * MI}, (500, 500 * MI)),
    ("2X container with requests",
     dict(containers=[c({"cpu": "500m", "memory": "500Mi"}), c({"cpu": "700m", "memory": "800Mi"})]),
     {"cpu": 1200, "memory": 1300 * MI}, (1200, 1300 * MI)),
    ("1X container and 1X init container with pod-level requests",
     dict(containers=[c({"cpu": "500m", "memory": "500Mi"})], init_containers=[c({"cpu": "500m", "memory": "500Mi"})],
          spec={"resources": {"requests": {"cpu": "1200m", "memory": "1200Mi"}}}),
     {"cpu": 1200, "memory": 1200 * MI}, (1200, 1200 * MI)),
    ("1X container and 1X sidecar container with pod-level requests",
     dict(containers=[c({"cpu": "500m", "memory": "500Mi"})],
          init_containers=[c({"cpu": "500m", "memory": "500Mi"}, restart_policy="Always")],
          spec={"resources": {"requests": {"cpu": "1200m", "memory": "1200Mi"}}}),
     {"cpu": 1200, "memory": 1200 * MI}, (1200, 1200 * MI)),
    ("1X container with pod-level memory requests",
     dict(containers=[c()], init_containers=[c()], spec={"resources": {"requests": {"memory": "1200Mi"}}}),
     {"memory": 1200 * MI}, (DEFAULT_CPU, 1200 * MI)),
    ("1X container with pod-level cpu requests",
     dict(containers=[c()], init_containers=[c()], spec={"resources": {"requests": {"cpu": "500m"}}}),
     {"cpu": 500}, (500, DEFAULT_MEM)),
    ("1X container unsupported resources and pod-level supported resources",
     dict(containers=[c({"ephemeral-storage": "800Mi"})], init_containers=[c({"ephemeral-storage": "500Mi"})],
          spec={"resources": {"requests": {"cpu": "500m"}}}),
     {"cpu": 500, "ephemeral-storage": 800 * MI}, (500, DEFAULT_MEM)),
    # Restartable init containers run beside the app containers and add up; an ordinary init
    # container needs its own amount plus the sidecars started before it.
    ("sidecar adds to containers",
     dict(containers=[c({"cpu": "1"})], init_containers=[c({"cpu": "500m"}, restart_policy="Always")]),
     {"cpu": 1500}, None),
    ("init container after sidecar",
     dict(containers=[c({"cpu": "100m"})],
          init_containers=[c({"cpu": "200m"}, restart_policy="Always"), c({"cpu": "2"})]),
     {"cpu": 2200}, None),
    ("overhead added", dict(containers=[c({"cpu": "1"})], spec={"overhead": {"cpu": "250m", "memory": "120Mi"}}),
     {"cpu": 1250, "memory": 120 * MI}, None),
    ("requests default to limits", dict(containers=[c(limits={"cpu": "2", "memory": "1Gi"})]),
     {"cpu": 2000, "memory": 1024 * MI}, (2000, 1024 * MI)),
]


@pytest.mark.parametrize("kwargs,requests,non_zero", [x[1:] for x in CASES], ids=[x[0] for x in CASES])
def test_requests(kwargs, requests, non_zero):
    p = Pod(pod(**kwargs))
    assert p.requests == requests
    if non_zero:
        assert (p.non_zero_requests["cpu"], p.non_zero_requests["memory"]) == non_zero


@pytest.mark.parametrize("containers,qos", [
    ([c()], "BestEffort"),
    ([c({"cpu": "1"})], "Burstable"),
    ([c(limits={"cpu": "1", "memory": "1Gi"})], "Guaranteed"),
    ([c({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}), c()], "Burstable"),
    ([c({"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})], "Burstable"),
    ([c({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})], "BestEffort"),
])
def test_qos_class(containers, qos):
    assert Pod(pod(containers=containers)).qos_class == qos


def test_limits_add_overhead_only_where_limited():
    p = Pod(pod(containers=[c({"cpu": "1"}, {"cpu": "2"})], spec={"overhead": {"cpu": "100m", "memory": "64Mi"}}))
    assert p.limits == {"cpu": 2100}
