"""Built-in wakeup engines (group ``ishiki.engine.wakeup``) and the scoring cores of ``willingness``, ``jev``.

``willingness_model`` keeps a per-channel score and rolls a seeded die; ``jev_model`` applies rules, a
cooldown and a judge model's strict JSON verdict. The engines that subscribe to a runtime build on them.
"""

from ishiki_host.engines.wakeup._features import MessageFeatures, RandomSource

__all__ = ["MessageFeatures", "RandomSource"]
