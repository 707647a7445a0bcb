"""The built-in provider APIs (entry-point group ``ishiki.provider``): ``openai-completions``,
``anthropic-messages`` and ``scripted``."""
