"""Example checks of one's own for faultgate-stream (docs/writing-checks.md)."""
