"""The type of JSON values in the host's public signatures.

Fact-log entries, tool arguments and results, trigger info and plugin configs hold JSON: whatever
``json.loads`` can give. Its shape is the business of a schema or of the code that wrote it, not of a type, so
the value type is ``Any``, under this one name, so that every ``Any`` in the public face says why it is there.
"""

from typing import Any

__all__ = ["Json"]

Json = Any
"""A JSON value (``None``, a bool, number or string, or a list or object of JSON values): arbitrary by nature."""
