"""One unit per column, as kubectl top and describe write resources, and readable amounts in lines."""
import pytest

from kplan.api.resources import readable_amount
from kplan.report.units import column_unit

GI, MI = 2**30, 2**20


@pytest.mark.parametrize("resource,amounts,expected", [
    # The quota table of the issue: 72 cores beside 63800m, 270Gi beside 355840Mi.
    ("cpu", [72000, 63800, 100, 0], ["72", "63.8", "0.1", "0"]),
    ("memory", [270 * GI, 355840 * MI, 0], ["270Gi", "347.5Gi", "0"]),
    # Below a core everywhere: millicores, as kubectl top writes cpu.
    ("cpu", [500, 250, 5], ["500m", "250m", "5m"]),
    # Headroom may be negative; cores stay exact to the millicore.
    ("cpu", [-6750, 23700, 350], ["-6.75", "23.7", "0.35"]),
    # Below a Gi everywhere: Mi; a tiny amount keeps two significant digits rather than reading 0.
    ("memory", [512 * MI, 300 * MI + 1], ["512Mi", "300Mi"]),
    ("memory", [88 * GI, 20 * MI], ["88Gi", "0.02Gi"]),
    ("ephemeral-storage", [100 * GI, 512 * MI], ["100Gi", "0.5Gi"]),
    ("nvidia.com/gpu", [3, 0], ["3", "0"]),
    ("pods", [110], ["110"]),
])
def test_one_unit_per_column(resource, amounts, expected):
    unit = column_unit(resource, amounts)
    assert [unit(a) for a in amounts] == expected


def test_readable_amounts_round_to_nearest_or_up():
    # LoadAwareScheduling's line: the metric's usage and the pod's estimate, as a person reads them.
    assert readable_amount("memory", 10307921512, round_up=False) == "9.6Gi"
    assert readable_amount("memory", 1503238554, round_up=False) == "1.4Gi"
    assert readable_amount("memory", 1503238554) == "1.5Gi"  # a shortfall rounds up: always enough
    assert readable_amount("memory", -3 * GI, round_up=False) == "-3Gi"
    assert readable_amount("cpu", 1700) == "1700m" and readable_amount("cpu", 8000) == "8"
