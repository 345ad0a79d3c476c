"""Settings, from flags and ``GANG_SCHEDULER_*`` environment variables (pydantic-settings).

Each setting documents its unit and why its default is what it is.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from scheduler.solver.plan import Scoring, SolverConfig


class Settings(BaseSettings):
    """Scheduler settings shared by ``simulate`` and (later) ``run``."""

    model_config = SettingsConfigDict(env_prefix="GANG_SCHEDULER_", extra="ignore")

    scheduler_name: str = Field(
        default="gang-scheduler",
        description="spec.schedulerName of the pods we own; the product's documented name.",
    )
    scoring: Scoring = Field(
        default="pack",
        description="pack (fewest nodes, keep accelerator nodes whole: accelerators are the scarce, "
        "expensive resource) or spread.",
    )
    search_budget: int = Field(
        default=256,
        ge=1,
        description="Most subtree placements tried per root; bounds a failing search's time.",
    )

    def solver(self) -> SolverConfig:
        """The solver's part of the settings, as a value."""
        return SolverConfig(scoring=self.scoring, search_budget=self.search_budget)
