"""Built-in context engines (entry-point group ``ishiki.engine.context``)."""
