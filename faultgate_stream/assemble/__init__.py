"""assemble: spans -> runs. A run is the subtree under the top-most ``invoke_agent`` span."""
