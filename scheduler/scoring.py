"""The node orders a user chooses between with ``--scoring`` (``pack`` or ``spread``).

A module of its own, outside :mod:`scheduler.framework`, so that the settings — and with them
``gang-scheduler run --help`` and a setting error — name the choices without importing the
framework package (numpy and every model). :class:`~scheduler.framework.plan.SolverConfig` carries
the choice to the solver; ``solver/plugins/scoring.py`` implements both orders.
"""

from __future__ import annotations

from typing import Literal

Scoring = Literal["pack", "spread"]
"""``pack``: fewest nodes, partly used nodes first, accelerator nodes kept whole; ``spread``: one pod at a
time onto the emptiest node."""
