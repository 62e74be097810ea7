"""The FailedScheduling message, ported from TestFitError_Error in kube-scheduler's types_test.go."""
import pytest

from kplan.framework.status import fit_error

CASES = [
    ("nodes failed Prefilter plugin",
     dict(n_nodes=3, prefilter_msg="Node(s) failed PreFilter plugin FalsePreFilter"),
     "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter."),
    ("nodes failed Prefilter plugin and the preemption also failed",
     dict(n_nodes=3, prefilter_msg="Node(s) failed PreFilter plugin FalsePreFilter",
          post_filter_msg="Error running PostFilter plugin FailedPostFilter"),
     "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter. "
     "Error running PostFilter plugin FailedPostFilter"),
    ("nodes failed one Filter plugin with an empty PostFilterMsg",
     dict(n_nodes=3, histogram={"Node(s) failed Filter plugin FalseFilter-1": 3}),
     "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1."),
    ("nodes failed one Filter plugin with a non-empty PostFilterMsg",
     dict(n_nodes=3, histogram={"Node(s) failed Filter plugin FalseFilter-1": 3},
          post_filter_msg="Error running PostFilter plugin FailedPostFilter"),
     "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1. "
     "Error running PostFilter plugin FailedPostFilter"),
    ("nodes failed two Filter plugins with an empty PostFilterMsg",
     dict(n_nodes=3, histogram={"Node(s) failed Filter plugin FalseFilter-1": 2,
                                "Node(s) failed Filter plugin FalseFilter-2": 1}),
     "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, "
     "2 Node(s) failed Filter plugin FalseFilter-1."),
    ("failed to Permit on node",
     dict(n_nodes=1, histogram={"Node failed Permit plugin Permit-1": 1}),
     "0/1 nodes are available: 1 Node failed Permit plugin Permit-1."),
    # Go's sort.Strings orders the "count reason" strings as text, so 10 sorts before 2.
    ("histogram sorted as strings",
     dict(n_nodes=12, histogram={"Insufficient cpu": 2, "node(s) had untolerated taint(s)": 10}),
     "0/12 nodes are available: 10 node(s) had untolerated taint(s), 2 Insufficient cpu."),
]


@pytest.mark.parametrize("kwargs,want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_fit_error(kwargs, want):
    assert fit_error(**kwargs) == want
