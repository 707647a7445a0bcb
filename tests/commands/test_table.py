"""Command matching (case, aliases, @botname, unknown slash words), registration conflicts, /help."""

from __future__ import annotations

import pytest

from ishiki_host.commands import builtin_commands, render_help
from ishiki_host.config.profile_types import TrustConfig
from ishiki_host.errors import CommandError
from ishiki_host.plugins.commands import Command, CommandContext, CommandTable


async def noop(ctx: CommandContext, args: str) -> str:
    return args


def table(*, bot_names: tuple[str, ...] = ()) -> CommandTable:
    commands = CommandTable(bot_names=bot_names)
    commands.register_all(builtin_commands(), source="host")
    return commands


def test_the_first_word_matches_whatever_its_case() -> None:
    commands = table()
    for text in ("/clear", "/CLEAR", "/Clear now", "  /clear", "/clear\nmore lines"):
        found = commands.match(text)
        assert found is not None, text
        assert found.command.name == "clear", text
    found = commands.match("/memories fact 5")
    assert found is not None
    assert (found.typed, found.args) == ("memories", "fact 5")
    found = commands.match("/help\n  compact  ")
    assert found is not None
    assert found.args == "compact"


def test_aliases_reach_their_command() -> None:
    found = table().match("/RESET")
    assert found is not None
    assert (found.command.name, found.typed) == ("clear", "reset")
    commands = table()
    assert commands.get("/Reset") is commands.get("clear")


def test_a_command_addressed_to_a_bot() -> None:
    ours = table(bot_names=("@MyBot",))
    found = ours.match("/status@mybot")
    assert found is not None
    assert found.command.name == "status"
    assert ours.match("/status@OtherBot") is None
    anyone = table()
    found = anyone.match("/status@whoever extra")
    assert found is not None
    assert found.args == "extra"


@pytest.mark.parametrize(
    "text",
    ["/shrug", "/etc/hosts is a file", "hello /clear", "", "/", "/ clear", "clear", "//clear", "/clear/x", "/@bot"],
)
def test_text_that_is_no_command_goes_to_the_model(text: str) -> None:
    assert table().match(text) is None


def test_a_taken_name_is_reported_and_skipped() -> None:
    commands = table()
    assert not commands.register(Command("Clear", noop, "Mine."), source="ishiki.ext.evil")
    assert commands.get("clear") is not None
    assert commands.source("clear") == "host"
    assert commands.problems == ["ishiki.ext.evil: /clear is already a command of host; skipped"]
    assert commands.register(Command("wipe", noop, "Wipe.", aliases=("reset", "w")), source="ext")
    wipe = commands.get("wipe")
    assert wipe is not None
    assert wipe.aliases == ("w",)
    assert commands.get("reset") is commands.get("clear")
    assert "alias /reset of /wipe is already taken" in commands.problems[-1]
    assert not commands.register("not a command", source="ext")  # type: ignore[arg-type]
    assert "is not a Command" in commands.problems[-1]


def test_commands_are_validated() -> None:
    with pytest.raises(ValueError, match="no slash"):
        Command("/clear", noop, "x")
    with pytest.raises(ValueError, match="no slash"):
        Command("a b", noop, "x")
    with pytest.raises(ValueError, match="alias"):
        Command("ok", noop, "x", aliases=("",))
    with pytest.raises(ValueError, match="trust"):
        Command("ok", noop, "x", trust="admin")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="help"):
        Command("ok", noop, "  ")
    assert Command("LOUD", noop, "x", aliases=("Shout",)).names == ("loud", "shout")


def test_help_lists_what_the_sender_may_use() -> None:
    commands = table()
    owner, untrusted = render_help(commands, "owner"), render_help(commands, "untrusted")
    assert "/memories [type] [count] - List the newest long-term memories." in owner
    assert "/memories" not in untrusted
    assert "/tools" not in untrusted
    assert "/clear" not in untrusted  # the whole chat shares the session: trusted by default
    assert "/memory [about @name [new text|forget]] - Show the summary carried into this session" in untrusted
    assert untrusted.splitlines()[0] == "Commands:"
    opened = render_help(commands, "untrusted", levels=TrustConfig(commands={"clear": "untrusted"}))
    assert "/clear - Start a fresh session; nothing is carried over. (also /reset)" in opened
    assert "/compact" not in opened


def test_help_for_one_command() -> None:
    commands = table()
    assert render_help(commands, "untrusted", "/memories") == (
        "/memories [type] [count]\nList the newest long-term memories.\nNeeds a trusted sender."
    )
    assert render_help(commands, "owner", "reset").splitlines()[2] == "Aliases: /reset"
    with pytest.raises(CommandError, match="no command /nope"):
        render_help(commands, "owner", "nope")
