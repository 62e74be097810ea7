"""Plugins kplan accepts in a profile that have nothing to decide in a what-if.

PrioritySort orders the scheduling queue (kplan places pods in the order it is given them, and
`pending` sorts them as PrioritySort does) and DefaultBinder writes the binding. Neither joins an
extension point here, and reports need not mention them.
"""
from __future__ import annotations

from typing import Mapping

NOTHING_TO_SIMULATE = ("PrioritySort", "DefaultBinder")


class NotSimulated:
    """Stands in for a plugin with nothing to simulate; it implements no extension point."""

    simulated = False
    silent = True  # reports need not list it

    def __init__(self, name: str, args: Mapping | None = None, handle=None):
        self.name = name
