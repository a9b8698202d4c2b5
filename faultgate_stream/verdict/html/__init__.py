"""The HTML report (``check --html``): ``page.render`` and the style sheet and script it inlines."""
