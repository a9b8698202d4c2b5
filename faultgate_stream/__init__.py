"""faultgate-stream: checks AI-agent runs for known failure modes as their spans stream past."""

__version__ = "0.1.0"
