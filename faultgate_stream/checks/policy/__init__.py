"""policy: what the agent was allowed to do. One module per policy key; ``check`` composes
them into the ``policy`` check."""
