"""Judges: a model answering a yes/no question about a rendered run, for what rules cannot
see. faultgate's contract (a name, a character budget, ``ask(state, question)``), one
adapter for any OpenAI-compatible chat endpoint, and the questions judge checks ask."""
