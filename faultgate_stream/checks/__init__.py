"""checks: one module per check, each a small object with the incremental contract of
``base.Check``; ``registry`` maps names to them."""
