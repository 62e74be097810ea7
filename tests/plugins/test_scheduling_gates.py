"""SchedulingGates, ported from TestPreEnqueue in scheduling_gates_test.go."""
from __future__ import annotations

import pytest
from builders import pod

from kplan.api.objects import Pod
from kplan.framework.interfaces import FilterPlugin, PreEnqueuePlugin, PreFilterPlugin
from kplan.framework.status import Code
from kplan.plugins.scheduling_gates import SchedulingGates


# TestPreEnqueue in scheduling_gates_test.go
@pytest.mark.parametrize("gates, want", [
    pytest.param([], None, id="pod does not carry scheduling gates"),
    pytest.param(["foo", "bar"], (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting for scheduling gates: [foo bar]",)),
                 id="pod carries scheduling gates"),
])
def test_pre_enqueue(gates, want):
    p = Pod(pod("p", spec={"schedulingGates": [{"name": g} for g in gates]} if gates else None))
    status = SchedulingGates().pre_enqueue(p)
    if want is None:
        assert status is None
    else:
        assert (status.code, status.reasons) == want
        assert status.message == "waiting for scheduling gates: [foo bar]"


def test_pre_enqueue_only():
    pl = SchedulingGates()
    assert isinstance(pl, PreEnqueuePlugin)
    assert not isinstance(pl, (PreFilterPlugin, FilterPlugin))
