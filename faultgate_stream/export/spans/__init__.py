"""export/spans: every received span passed downstream, the run's root carrying its verdict.

Children pass through as they arrive; root candidates (``invoke_agent`` or parentless
spans) wait in ``held`` for their run's verdict. One bounded ``queue`` holds everything
accepted but not yet exported; ``exporter`` drains it with retries; ``forward`` is the tee
in front of the assembler that reserves queue room before anything is acknowledged.
"""
