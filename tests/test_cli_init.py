"""``ishiki init`` on a real terminal: a pty, the real command in a subprocess, the questions answered.

The model list comes from loopback fakes: an OpenAI-compatible server answering ``GET /v1/models`` and an
Ollama answering ``GET /api/tags`` (found through ``OLLAMA_HOST``, as the ``ollama`` command finds it).
Without a terminal the template is written unchanged (``tests/test_cli.py``).
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from ishiki_host.cli._templates import WHATSAPP_VARS, ChannelChoice, ModelChoice, chosen_files
from ishiki_host.config.yamlio import load_yaml
from ishiki_host.errors import ConfigError
from ishiki_host.testing.http_server import LoopbackServer, RecordedRequest, Response

RunIshiki = Callable[..., subprocess.CompletedProcess[str]]

WAIT_SECONDS = 60.0
"""A cap on waiting for the next prompt (last resort: each wait ends as soon as the text is there)."""


CHANNEL_QUESTIONS = (
    "a Telegram bot? (y/N):",
    "a WhatsApp number (the Cloud API)? (y/N):",
    "the web chat of the dashboard? (y/N):",
)


class Terminal:
    """``ishiki init`` on a pty: ``expect`` a text, ``answer`` a line."""

    def __init__(self, ishiki: Path, args: list[str], env: Mapping[str, str], cwd: Path):
        master, slave = pty.openpty()
        self.fd = master
        self.seen = ""
        self._read_to = 0
        self.process = subprocess.Popen(
            [str(ishiki), *args], stdin=slave, stdout=slave, stderr=slave, env=dict(env), cwd=cwd, close_fds=True
        )
        os.close(slave)

    def expect(self, text: str) -> str:
        """Read until ``text`` appears after what earlier calls matched; return what came up to it."""
        while text not in self.seen[self._read_to :]:
            self._read_more((text,))
        start = self._read_to
        self._read_to = self.seen.index(text, start) + len(text)
        return self.seen[start : self._read_to]

    def first(self, *texts: str) -> str:
        """Read until one of ``texts`` appears (after what earlier calls matched); return that one."""
        while True:
            rest = self.seen[self._read_to :]
            hits = [(rest.index(t), t) for t in texts if t in rest]
            if hits:
                found = min(hits)[1]
                self.expect(found)
                return found
            self._read_more(texts)

    def _read_more(self, texts: tuple[str, ...]) -> None:
        ready, _, _ = select.select([self.fd], [], [], WAIT_SECONDS)
        assert ready, f"none of {texts!r} within {WAIT_SECONDS} s; the terminal shows:\n{self.seen}"
        try:
            chunk = os.read(self.fd, 4096)
        except OSError:  # EIO: the command ended and closed the terminal
            chunk = b""
        assert chunk, f"the command ended before {texts!r}; the terminal shows:\n{self.seen}"
        self.seen += chunk.decode("utf-8", "replace").replace("\r\n", "\n")

    def no_channels(self) -> str:
        """Say no to every channel offered (which are offered depends on the packages installed); return what
        came next: ``wrote `` or ``overwrite ``."""
        self.expect("Channels: the console")
        while (seen := self.first(*CHANNEL_QUESTIONS, "wrote ", "overwrite ")) in CHANNEL_QUESTIONS:
            os.write(self.fd, b"\n")
        return seen

    def answer(self, prompt: str, line: str) -> None:
        """Wait for ``prompt``, then type ``line`` and Enter."""
        self.expect(prompt)
        os.write(self.fd, line.encode() + b"\n")

    def finish(self) -> int:
        """Read to the end; the exit status."""
        while True:
            ready, _, _ = select.select([self.fd], [], [], WAIT_SECONDS)
            assert ready, f"the command did not end; the terminal shows:\n{self.seen}"
            try:
                chunk = os.read(self.fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            self.seen += chunk.decode("utf-8", "replace").replace("\r\n", "\n")
        os.close(self.fd)
        return self.process.wait(WAIT_SECONDS)


@pytest.fixture
def terminal(ishiki_bin: Path, tmp_path: Path) -> Iterator[type[Terminal]]:
    """Start ``ishiki init`` on a pty: ``terminal(args, **env)``; killed at the end if still running."""
    started: list[Terminal] = []
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OLLAMA_HOST")}
    base.update(TERM="dumb", NO_COLOR="1")

    def start(args: list[str], **env: str) -> Terminal:
        term = Terminal(ishiki_bin, args, {**base, **env}, tmp_path)
        started.append(term)
        return term

    yield start  # type: ignore[misc]
    for term in started:
        if term.process.poll() is None:
            term.process.kill()
            term.process.wait()


def _models_server(path: str, body: dict[str, object]) -> LoopbackServer:
    def handle(request: RecordedRequest) -> Response:
        if request.method == "GET" and request.path == path:
            return Response.json(body)  # type: ignore[arg-type]
        return Response.json({"error": f"no route {request.method} {request.path}"}, 404)

    return LoopbackServer(handle)


def test_openai_compatible_server_models_listed_and_chosen(terminal: type[Terminal], tmp_path: Path) -> None:
    with _models_server("/v1/models", {"data": [{"id": "qwen2.5:7b"}, {"id": "llama3.2"}]}) as server:
        term = terminal(["init", "bot"], MY_KEY="sk-not-written")
        term.answer("model server [1]:", "2")
        term.answer("base URL [https://api.openai.com/v1]:", f"{server.url}/v1")
        term.answer("variable holding the API key (- for none) [OPENAI_API_KEY]:", "MY_KEY")
        term.answer("list its models? (Y/n):", "")
        listed = term.expect("model [1]:")
        assert "1) llama3.2" in listed
        assert "2) qwen2.5:7b" in listed
        assert "3) another id" in listed
        os.write(term.fd, b"2\n")
        assert term.no_channels() == "wrote "
        assert term.finish() == 0, term.seen
    assert server.requests[0].headers["authorization"] == "Bearer sk-not-written"
    root = tmp_path / "bot"
    models = (root / "models.yaml").read_text()
    assert "sk-not-written" not in models
    assert 'api_key: "${MY_KEY}"' in models
    assert f'base_url: "{server.url}/v1"' in models
    assert '- id: "qwen2.5:7b"' in models
    assert '- "openai:qwen2.5:7b"' in models
    assert "$ ishiki check bot" in term.seen
    assert "enabled profiles ready" in term.seen
    assert "next:" in term.seen


def test_ollama_found_through_ollama_host(terminal: type[Terminal], tmp_path: Path) -> None:
    with _models_server("/api/tags", {"models": [{"name": "llama3.2:latest"}]}) as server:
        term = terminal(["init", "bot", "--profile", "ana"], OLLAMA_HOST=server.url.removeprefix("http://"))
        assert server.url.removeprefix("http://") in term.expect("model server [1]:")
        os.write(term.fd, b"\n")
        term.answer("list its models? (Y/n):", "y")
        term.answer("model [1]:", "1")
        assert term.no_channels() == "wrote "
        assert term.finish() == 0, term.seen
    models = (tmp_path / "bot" / "models.yaml").read_text()
    assert f'base_url: "{server.url}/v1"' in models
    assert 'api_key: ""' in models
    assert '- "ollama:llama3.2:latest"' in models
    assert (tmp_path / "bot" / "profiles" / "ana" / "persona.md").read_text().startswith("You are ana")


def test_anthropic_bad_answers_asked_again(terminal: type[Terminal], tmp_path: Path) -> None:
    term = terminal(["init", "bot"])
    term.answer("model server [1]:", "7")
    term.answer("answer a number from 1 to 3", "3")
    term.answer("variable holding the API key [ANTHROPIC_API_KEY]:", "not a name")
    term.answer("is not a variable name", "")
    term.answer("model id [claude-sonnet-4-5]:", "")
    assert term.no_channels() == "wrote "
    assert term.finish() == 0, term.seen
    models = (tmp_path / "bot" / "models.yaml").read_text()
    assert "api: anthropic-messages" in models
    assert 'api_key: "${ANTHROPIC_API_KEY}"' in models
    assert "next: set ANTHROPIC_API_KEY (`export ANTHROPIC_API_KEY=...`), then `ishiki doctor bot`" in term.seen


def test_existing_files_kept_unless_the_person_says_so(terminal: type[Terminal], tmp_path: Path) -> None:
    root = tmp_path / "bot"
    root.mkdir()
    (root / "models.yaml").write_text("# mine\n")
    term = terminal(["init", "bot"])
    term.answer("model server [1]:", "3")
    term.answer("[ANTHROPIC_API_KEY]:", "")
    term.answer("model id [claude-sonnet-4-5]:", "")
    assert term.no_channels() == "overwrite "
    term.answer("models.yaml in bot? (y/N):", "")
    assert term.finish() == 2
    assert "nothing written" in term.seen
    assert (root / "models.yaml").read_text() == "# mine\n"
    assert not (root / "ishiki.yaml").exists()
    again = terminal(["init", "bot"])
    again.answer("model server [1]:", "3")
    again.answer("[ANTHROPIC_API_KEY]:", "")
    again.answer("model id [claude-sonnet-4-5]:", "")
    assert again.no_channels() == "overwrite "
    again.answer("models.yaml in bot? (y/N):", "y")
    assert again.finish() == 0
    assert "anthropic-messages" in (root / "models.yaml").read_text()


def test_ctrl_d_stops_without_writing(terminal: type[Terminal], tmp_path: Path) -> None:
    term = terminal(["init", "bot"])
    term.expect("model server [1]:")
    os.write(term.fd, b"\x04")
    assert term.finish() == 2
    assert "stopped, nothing written" in term.seen
    assert not (tmp_path / "bot").exists()


def _yaml_ok(path: Path, text: str) -> None:
    path.write_text(text)
    names = ("KEY", "TG_TOKEN", *WHATSAPP_VARS)
    doc = load_yaml(path, str(path), ConfigError, dict.fromkeys(names, "x"))
    assert not doc.errors, doc.errors


def test_chosen_files_are_yaml_with_every_channel(tmp_path: Path) -> None:
    model = ModelChoice("openai", "https://example.test/v1", "KEY", 'we"ird:id')
    channels = ChannelChoice("TG_TOKEN", "123", "106540352242922", "https://bot.example.test", web_chat=True)
    written = chosen_files("ana", model, channels)
    for name, text in written.items():
        if name.endswith((".yaml", ".yml")):
            _yaml_ok(tmp_path / Path(name).name, text)
    host = written["ishiki.yaml"]
    assert "listen: 127.0.0.1:8080" in host
    assert 'public_url: "https://bot.example.test"' in host
    assert 'token: "${TG_TOKEN}"' in host
    assert 'access_token: "${WHATSAPP_TOKEN}"' in host
    assert "dashboard: {}" in host
    profile = written["profiles/ana/profile.yml"]
    for claim in ("console:local", "telegram:123", "whatsapp:106540352242922", "web:dashboard"):
        assert f'  {claim}: ["*"]' in profile
    assert 'owners: ["web:admin"]' in profile
    bare = chosen_files("ana", model, ChannelChoice("TG_TOKEN"))
    assert "# telegram:<bot id>" in bare["profiles/ana/profile.yml"]
    assert "http:" not in bare["ishiki.yaml"]


def test_telegram_bot_claimed_with_the_id_of_its_token(
    terminal: type[Terminal], tmp_path: Path, run_ishiki: RunIshiki
) -> None:
    if '"ishiki.channel.telegram"' not in run_ishiki("plugins", "--json").stdout:
        pytest.skip("ishiki-channel-telegram is not installed")
    term = terminal(["init", "bot"], TG_TOKEN="4242:not-written")
    term.answer("model server [1]:", "3")
    term.answer("[ANTHROPIC_API_KEY]:", "")
    term.answer("model id [claude-sonnet-4-5]:", "")
    term.answer("a Telegram bot? (y/N):", "y")
    term.answer("variable holding the bot token [TELEGRAM_BOT_TOKEN]:", "TG_TOKEN")
    term.answer("(Enter: later) [4242]:", "")
    while term.first(*CHANNEL_QUESTIONS[1:], "wrote ") != "wrote ":
        os.write(term.fd, b"\n")
    assert term.finish() == 0, term.seen
    root = tmp_path / "bot"
    assert 'token: "${TG_TOKEN}"' in (root / "ishiki.yaml").read_text()
    assert "not-written" not in "".join(p.read_text() for p in root.rglob("*") if p.is_file())
    assert '  telegram:4242: ["*"]' in (root / "profiles" / "assistant" / "profile.yml").read_text()
