"""Plug-ins: checks of your own in Python, written against ``checks/api.py``. ``load``
finds them, ``adapt`` builds the views they see, ``check`` is how the engine holds one and
``isolate`` runs them on a thread of their own, within a CPU budget."""
