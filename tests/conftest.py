"""Shared fixtures: where the parity corpus lives (beside the repo, as CI lays it out)."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

# No property test is timed: hypothesis's default deadline (200 ms an example) fails an
# example that a loaded machine ran slowly, which says nothing of the property (a parity
# test once failed so beside two other test runs). Timing belongs in bench/.
settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus"


@pytest.fixture(scope="session")
def corpus() -> Path:
    # Deliberately an assertion, not a skip: a missing corpus must fail CI, not shrink it.
    assert CORPUS.is_dir(), f"parity corpus not found at {CORPUS}; ../shared must sit beside the repo"
    return CORPUS


from tests.live_service import live_service  # noqa: E402,F401  (a fixture for tests/live and tests/e2e)
