"""Pod requests as the scheduler computes them.

Cases ported from TestPodInfoCalculateResources (pkg/scheduler/framework/types_test.go, the
release with pod-level resources enabled) and from resourcehelper's PodRequests tests for
restartable init containers; QoS from GetPodQOS.
"""
import pytest

from builders import container, pod
from kplan.api.objects import Pod
from kplan.framework import versions
from kplan.planning.place import as_release_sees

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


# -- in-place resize: status-aware requests of bound pods ------------------------------------------

G = 1000 ** 3
M = 1000 ** 2
INFEASIBLE = {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
DEFERRED = {"type": "PodResizePending", "status": "True", "reason": "Deferred"}
IN_PROGRESS = {"type": "PodResizeInProgress", "status": "True"}


def status(name, requests=None, allocated=None):
    """A container status; `requests` (even {}) sets status.resources, as a kubelet reporting it does."""
    s = {"name": name}
    if requests is not None:
        s["resources"] = {"requests": requests}
    if allocated is not None:
        s["allocatedResources"] = allocated
    return s


def resized(containers=(), init_containers=(), statuses=(), init_statuses=(), conditions=(), node_name="n1",
            pod_level=None, pod_status=None, pod_allocated=None):
    """A pod (bound to `node_name` unless it is "") with container statuses and pod-level status."""
    raw = pod(containers=list(containers), init_containers=list(init_containers), node_name=node_name,
              spec={"resources": {"requests": pod_level}} if pod_level else None)
    st = raw["status"]
    if statuses:
        st["containerStatuses"] = list(statuses)
    if init_statuses:
        st["initContainerStatuses"] = list(init_statuses)
    if conditions:
        st["conditions"] = list(conditions)
    if pod_status is not None:
        st["resources"] = {"requests": pod_status}
    if pod_allocated is not None:
        st["allocatedResources"] = pod_allocated
    return raw


def sidecar(name, requests):
    return container(name, requests=requests, restart_policy="Always")


# resourcehelper TestPodResourceRequests (staging/src/k8s.io/component-helpers/resource/helpers_test.go)
# and TestAggregateContainerRequestsAndLimits. Upstream's UseStatusResources is the scheduler's for
# pods on a node (InPlacePodVerticalScaling is on in 1.33 to 1.36); a pod it places is read from its
# spec, so the "don't use status" cases are unbound pods here.
RESIZE_CASES = [
    ("resized, infeasible",
     resized([container("container-1", {"cpu": "4"})], statuses=[status("container-1", {"cpu": "2"})],
             conditions=[INFEASIBLE]), {"cpu": 2000}),
    ("resized, infeasible & in-progress",
     resized([container("container-1", {"cpu": "6"})],
             statuses=[status("container-1", {"cpu": "2"}, allocated={"cpu": "4"})], conditions=[INFEASIBLE]),
     {"cpu": 4000}),
    ("resized, no resize status",
     resized([container("container-1", {"cpu": "4"})], statuses=[status("container-1", {"cpu": "2"})]),
     {"cpu": 4000}),
    ("resized: per-resource 3-way maximum",
     resized([container("container-1", {"cpu": "30m", "memory": "20M", "ephemeral-storage": "10G"})],
             statuses=[status("container-1", {"cpu": "10m", "memory": "30M", "ephemeral-storage": "20G"},
                              allocated={"cpu": "20m", "memory": "10M", "ephemeral-storage": "30G"})]),
     {"cpu": 30, "memory": 30 * M, "ephemeral-storage": 30 * G}),
    ("resized, infeasible, but don't use status",
     resized([container("container-1", {"cpu": "4"})], statuses=[status("container-1", {"cpu": "2"})],
             conditions=[INFEASIBLE], node_name=""), {"cpu": 4000}),
    ("resized, restartable init container, infeasible",
     resized(init_containers=[sidecar("restartable-init-1", {"cpu": "4"})],
             init_statuses=[status("restartable-init-1", {"cpu": "2"})], conditions=[INFEASIBLE]),
     {"cpu": 2000}),
    ("resized, restartable init container, no resize status",
     resized(init_containers=[sidecar("restartable-init-1", {"cpu": "4"})],
             init_statuses=[status("restartable-init-1", {"cpu": "2"})]), {"cpu": 4000}),
    ("resized, restartable init container, infeasible, but don't use status",
     resized(init_containers=[sidecar("restartable-init-1", {"cpu": "4"})],
             init_statuses=[status("restartable-init-1", {"cpu": "2"})], conditions=[INFEASIBLE], node_name=""),
     {"cpu": 4000}),
    ("regularcontainers with empty requests, but status with non-empty requests",
     resized([container("container-1")], statuses=[status("container-1", {"cpu": "2"})]), {"cpu": 2000}),
    ("always-restart init containers with empty requests, but status with non-empty requests",
     resized(init_containers=[sidecar("container-1", None)], init_statuses=[status("container-1", {"cpu": "2"})]),
     {"cpu": 2000}),
    # Each container counts its own maximum before they add up: desired c1 1 + c2 2, allocated (and
    # actual) c1 2 + c2 1 count 2 + 2 (kubernetes#140046 describes this as the scheduler's behaviour;
    # kubernetes#140047 changes it after 1.36 to the maximum of the sums).
    ("each container counts its own maximum",
     resized([container("c1", {"cpu": "1"}), container("c2", {"cpu": "2"})],
             statuses=[status("c1", {"cpu": "2"}, allocated={"cpu": "2"}),
                       status("c2", {"cpu": "1"}, allocated={"cpu": "1"})]), {"cpu": 4000}),
    # Upstream reads a container's allocatedResources only when its status names resources.
    ("allocated resources without status resources",
     resized([container("c1", {"cpu": "1"})], statuses=[status("c1", allocated={"cpu": "2"})]), {"cpu": 1000}),
    # Ordinary init containers have run to completion: their status is not read.
    ("init container status is not read",
     resized([container("c1", {"cpu": "1"})], [container("i1", {"cpu": "2"})],
             init_statuses=[status("i1", {"cpu": "5"})]), {"cpu": 2000}),
]


@pytest.mark.parametrize("raw,requests", [x[1:] for x in RESIZE_CASES], ids=[x[0] for x in RESIZE_CASES])
def test_resized_requests(raw, requests):
    assert Pod(raw).requests == requests


CPU500, CPU700 = {"cpu": "500m"}, {"cpu": "700m"}
R500 = {"cpu": "500m", "memory": "500Mi"}
R700_500 = {"cpu": "700m", "memory": "500Mi"}
R700_800 = {"cpu": "700m", "memory": "800Mi"}

# TestCalculatePodResourcesWithResize (pkg/scheduler/framework/types_test.go, with
# InPlacePodVerticalScaling and InPlacePodLevelResourcesVerticalScaling on): requests and the
# non-zero cpu/memory scoring reads, (milli-cpu, bytes).
CALCULATE_CASES = [
    ("Pod with no pending resize", resized([container("c1", R500)], statuses=[status("c1", R500)]), (500, 500 * MI)),
    ("Pod with pod-level resources no pending resize",
     resized([container("c1", R500)], statuses=[status("c1", R700_500)], pod_level=R700_500, pod_status=R500),
     (700, 500 * MI)),
    ("Pod with resize in progress",
     resized([container("c1", R500)], statuses=[status("c1", R500)], conditions=[IN_PROGRESS]), (500, 500 * MI)),
    ("Pod with pod-level resources and resize in progress",
     resized([container("c1", R500)], statuses=[status("c1", R700_500)], conditions=[IN_PROGRESS],
             pod_level=R700_500, pod_status=R500), (700, 500 * MI)),
    ("Pod with deferred resize",
     resized([container("c1", R700_800)], statuses=[status("c1", R500)], conditions=[DEFERRED]), (700, 800 * MI)),
    ("Pod with pod-level resources and with deferred resize",
     resized([container("c1", R500)], statuses=[status("c1", R500)], conditions=[DEFERRED],
             pod_level=R700_800, pod_status=R500), (700, 800 * MI)),
    ("Pod with infeasible resize",
     resized([container("c1", R700_800)], statuses=[status("c1", R500)], conditions=[INFEASIBLE]), (500, 500 * MI)),
    ("Pod with init container and no pending resize",
     resized([container("c1", R500)], [container("i1", R700_800)], statuses=[status("c1", R500)],
             init_statuses=[status("i1", R700_800)]), (700, 800 * MI)),
    ("Pod with sider container and no pending resize",
     resized([container("c1", R500)], [container("i1", R700_800), sidecar("s1", R700_800)],
             statuses=[status("c1", R500)], init_statuses=[status("i1", R700_800), status("s1", R700_800)]),
     (1200, 1300 * MI)),
]


@pytest.mark.parametrize("raw,want", [x[1:] for x in CALCULATE_CASES], ids=[x[0] for x in CALCULATE_CASES])
def test_calculate_resources_with_resize(raw, want):
    p = as_release_sees(Pod(raw), versions.NEWEST)
    assert (p.requests["cpu"], p.requests["memory"]) == want
    assert (p.non_zero_requests["cpu"], p.non_zero_requests["memory"]) == want


def test_resized_non_zero_requests_default_only_what_status_leaves_unset():
    # A container's effective requests get 100m / 200Mi only for what neither spec nor status names.
    p = Pod(resized([container("c1", {"cpu": "1"})], statuses=[status("c1", {"memory": "1Gi"})]))
    assert p.requests == {"cpu": 1000, "memory": 1024 * MI}
    assert (p.non_zero_requests["cpu"], p.non_zero_requests["memory"]) == (1000, 1024 * MI)


def test_status_resources_leave_limits_alone():
    p = Pod(resized([container("c1", {"cpu": "1"}, {"cpu": "2"})], statuses=[status("c1", {"cpu": "3"})]))
    assert p.requests == {"cpu": 3000}
    assert p.limits == {"cpu": 2000}


# Pod-level requests of a bound pod read status.resources and status.allocatedResources from 1.36
# (InPlacePodLevelResourcesVerticalScaling beta, on; kubernetes#137684). Cases from
# TestPodRequestsAndLimitsVerticalScalingWrappers (helpers_test.go), whose expectations are those
# with the option on; with it off (1.35, alpha) PodRequests keeps spec.resources.requests.
POD_LEVEL_CASES = [
    ("pod level requests/limits with PLR vertical scaling enabled and status populated",
     resized([container("c1", {"cpu": "1"}, {"cpu": "2"})], pod_level={"cpu": "2"}, pod_status={"cpu": "3.5"},
             pod_allocated={"cpu": "3"}), 2000, 3500),
    ("pod level requests/limits with PLR vertical scaling enabled and infeasible resize",
     resized([container("c1", {"cpu": "1"}, {"cpu": "2"})], conditions=[INFEASIBLE], pod_level={"cpu": "10"},
             pod_status={"cpu": "4"}, pod_allocated={"cpu": "3"}), 10000, 4000),
]


@pytest.mark.parametrize("raw,v135,v136", [x[1:] for x in POD_LEVEL_CASES], ids=[x[0] for x in POD_LEVEL_CASES])
def test_pod_level_requests_read_status_from_1_36(raw, v135, v136):
    assert as_release_sees(Pod(raw), (1, 35)).requests == {"cpu": v135}
    assert as_release_sees(Pod(raw), (1, 36)).requests == {"cpu": v136}


def test_pod_level_status_of_an_unbound_pod_is_not_read():
    raw = POD_LEVEL_CASES[0][1]
    raw = {**raw, "spec": {k: v for k, v in raw["spec"].items() if k != "nodeName"}}
    assert as_release_sees(Pod(raw), (1, 36)).requests == {"cpu": 2000}


def test_shared_container_resources_never_mix_two_specs():
    # Parsed container resources are shared between pods with the same spec: specs that name the
    # same values under other resources, or in requests rather than limits, must stay apart.
    specs = [
        ({"cpu": "1", "memory": "1Gi"}, None),
        ({"cpu": "1"}, {"memory": "1Gi"}),
        ({"cpu": "1"}, None),
        ({"cpu": "1", "nvidia.com/gpu": "1"}, None),
        ({"cpu": "1", "ephemeral-storage": "1Gi"}, None),
        (None, {"cpu": "1", "memory": "1Gi"}),
        ({"memory": "1Gi"}, {"cpu": "1"}),
    ]
    expected = [
        ({"cpu": 1000, "memory": 1024 * MI}, {}),
        ({"cpu": 1000, "memory": 1024 * MI}, {"memory": 1024 * MI}),  # the request defaults to the limit
        ({"cpu": 1000}, {}),
        ({"cpu": 1000, "nvidia.com/gpu": 1}, {}),
        ({"cpu": 1000, "ephemeral-storage": 1024 * MI}, {}),
        ({"cpu": 1000, "memory": 1024 * MI}, {"cpu": 1000, "memory": 1024 * MI}),
        ({"cpu": 1000, "memory": 1024 * MI}, {"cpu": 1000}),
    ]
    for _ in range(2):  # the second round reads the shared results
        for (requests, limits), (want_requests, want_limits) in zip(specs, expected):
            (only,) = Pod(pod("p", node_name="n", containers=[c(requests, limits)])).containers
            assert (only.requests, only.limits) == (want_requests, want_limits), (requests, limits)
