"""Node utilization as cluster-autoscaler's scale-down computes it (kplan.planning.consolidate.utilization)."""
from datetime import datetime, timezone

from builders import cluster, node, pod
from kplan.planning.consolidate import utilization

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_requests_over_allocatable_and_zero_where_calculate_fails():
    # utilization.Calculate: requests over allocatable per resource. On a node whose allocatable
    # memory is 0 it fails ("memory allocatable 0"); scale-down logs it and goes on with the zero
    # utilization, cpu included.
    state = cluster([node("n1", cpu="4", memory="8Gi"), node("no-memory", cpu="4", memory="0")],
                    [pod("a", node_name="n1", requests={"cpu": "1", "memory": "2Gi"}),
                     pod("b", node_name="no-memory", requests={"cpu": "2"})])
    got = utilization(state, NOW)
    assert got["cpu"].tolist() == [0.25, 0.0] and got["memory"].tolist() == [0.25, 0.0]
