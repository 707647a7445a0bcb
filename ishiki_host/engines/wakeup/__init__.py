"""Built-in wakeup engines (entry-point group ``ishiki.engine.wakeup``)."""
