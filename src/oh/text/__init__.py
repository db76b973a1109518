"""Text for the terminal, stdlib only: escaping agent/editor-controlled text (``sanitize``), shared
formatting (``fmt``) and the ``oh status`` text (``status``). One owner for the fast path
(``oh.fastpath``, no rich/typer) and the typer commands and live view alike."""
