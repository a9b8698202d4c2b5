"""Records, verdict types, errors and the clock: what every stage shares. Imports no stage."""
