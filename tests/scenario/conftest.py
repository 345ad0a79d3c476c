"""Helpers for scenario tests: run ``simulate`` on snapshot files and index its outcome."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data"
