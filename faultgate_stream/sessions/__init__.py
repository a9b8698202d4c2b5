"""sessions: runs grouped by ``session.id`` (else ``gen_ai.conversation.id``) and judged
together when the session ends (an explicit end attribute, else ``idle_timeout``): token
and cost budgets per session and per agent per window, the same task asked again after a
run that answered, and session attributes that must never go down. Fed run verdicts like
a sink; feeds session verdicts to the sinks (``model/session.py``)."""
