"""Built-in toolcall engines (entry-point group ``ishiki.engine.toolcall``)."""
