"""The built-in ``console`` channel: a chat on the terminal (``console:local``, channel ``private:local``).

The local user (id ``local``) is the owner. The host starts the console when a ready profile claims
``console:local``; it needs no account (``channels.console.accounts: [{...}]`` in ishiki.yaml may set the
options of ``ConsoleChannel``).

With a terminal on stdin and stdout it is an interactive chat on prompt_toolkit (``terminal``): the prompt
stays at the bottom, with line editing, a history file in the channel's state directory and completion of
the slash commands the runtime knows; replies, log lines and anything else printed go above it. Every line is
delivered as soon as it is typed: while a turn runs, a message joins it and a command (``/status``, ``/stop``)
is answered at once; messages keep the order they were typed in. While a turn a person started runs, a dim
line above the prompt says what it does (``thinking 3s · default``, ``running web_search 5s``, ``writing…``;
``show_activity``), its seconds moving once a second; nothing runs while idle. Replies the host streams are
printed as they are written (``drafting``). The terminal outlives the connection: a restarted or reloaded
console takes over the same prompt, what was typed in it, and every line not yet handed to the host, so no
line is lost or delivered twice. Ctrl-D, and Ctrl-C, end the chat and stop the host.

Without a terminal, each line of stdin is one message, delivered one at a time: the next line is read only
once the turn the previous one started has finished, so a piped script behaves like a typed conversation.
Blank lines are skipped.

Output format without a terminal: stdout carries only what is said in the chat (what the persona sends, and
the host's notices: command replies, the apology for a failed turn), each message part written as its text
followed by one newline (a part with line breaks spans several lines); logs go to stderr; nothing is
streamed. Why a turn failed (``show_failure``, for the operator: the console's user sits at the host) is a dim
line among the chat on a terminal, and a line on stderr otherwise (dim only when stderr is a terminal), so
piped stdout stays the chat. At the end of input the console waits for pending turns (at most
``drain_seconds``) and asks the host to stop; it keeps printing what is sent until the host has stopped.
Without a terminal, the host stops only when the console is its only channel: with other channels up (a
headless bot under systemd or ``docker run`` without ``-it``, whose stdin is empty from the start) the host
answers ``False`` and the console finishes alone while the rest runs on. On a terminal, the end of input is
the operator leaving (Ctrl-D at the prompt), and the host stops whatever else runs.
"""

from ishiki_host.channels.console.channel import ConsoleChannel
from ishiki_host.channels.console.connection import CHANNEL_ID, SELF_ID, ConsoleConnection
from ishiki_host.channels.console.drafting import DraftingConsole
from ishiki_host.channels.console.terminal import PROMPT, TERMINAL, Line, Terminal

__all__ = [
    "CHANNEL_ID",
    "PROMPT",
    "SELF_ID",
    "TERMINAL",
    "ConsoleChannel",
    "ConsoleConnection",
    "DraftingConsole",
    "Line",
    "Terminal",
]
