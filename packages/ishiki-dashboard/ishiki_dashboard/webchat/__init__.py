"""The web chat: the `web` channel and the hub it shares with the dashboard's chat page."""
