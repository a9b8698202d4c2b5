"""verdict: the run's record of truth, built once and rendered by every sink."""
