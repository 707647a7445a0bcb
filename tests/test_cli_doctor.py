"""``ishiki doctor`` as a real subprocess: the example config with its model up and down, channel plugins that
answer, raise or return junk, the ingress's port, a read-only data dir, a held lock, ``--json``; and the
pure parts (free space, clock skew, the ``Date`` recorder) in-process."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ishiki_host.cli.doctor.clock import DateRecorder, DateSeen, clock_finding
from ishiki_host.cli.doctor.local import FREE_BYTES, space_level
from ishiki_host.host.lock import claim_data_dir
from ishiki_host.testing.fake_openai import FakeOpenAIServer
from ishiki_host.testing.http_server import LoopbackServer, RecordedRequest, Response

RunIshiki = Callable[..., subprocess.CompletedProcess[str]]
REPO = Path(__file__).resolve().parent.parent
MARKS = {"✓": "ok", "!": "warning", "✗": "error"}

CHANNEL_PLUGIN = '''
from typing import Any, ClassVar
from collections.abc import Mapping
from pathlib import Path
from ishiki_host import Channel, Finding


class DocChat(Channel):
    """A channel whose check does what its account says."""

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"check": {"enum": ["ok", "bad", "raise", "junk", "none"]}, "mode": {"type": "string"}},
    }

    def create(self, ctx: Any, account: Mapping[str, Any]) -> Any:
        return account

    async def diagnose(self, account: Mapping[str, Any], *, seconds: float, state_dir: Path) -> Any:
        check = account.get("check", "ok")
        if check == "raise":
            raise RuntimeError("the token server is on fire")
        if check == "junk":
            return ["not a finding"]
        if check == "none":
            return ()
        if check == "bad":
            return [Finding("error", "docchat token", f"refused (cut at {seconds:g} s)", "make a new token")]
        return [Finding("ok", "docchat token", f"accepted (cut at {seconds:g} s)")]
'''


@pytest.fixture(scope="module")
def chat_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding an installed distribution with the ``docchat`` channel (its dist-info written by
    hand: what pip would write, without a build)."""
    site = tmp_path_factory.mktemp("doctor-site")
    (site / "ishiki_doctor_chat.py").write_text(CHANNEL_PLUGIN)
    info = site / "ishiki_doctor_chat-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ishiki-doctor-chat\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[ishiki.channel]\ndocchat = ishiki_doctor_chat:DocChat\n")
    return site


@pytest.fixture
def doctor(ishiki_bin: Path, chat_site: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``ishiki doctor ARGS`` with the docchat channel installed; ``prefix`` runs it under another command."""

    def run(*args: str, env: dict[str, str] | None = None, prefix: tuple[str, ...] = ()) -> Any:
        environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPENAI_BASE_URL", "OPENAI_MODEL")}
        environ["PYTHONPATH"] = str(chat_site)
        environ.update(env or {})
        command = [*prefix, str(ishiki_bin), "doctor", *args]
        return subprocess.run(command, env=environ, capture_output=True, text=True, timeout=120, check=False)

    return run


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A copy of the example config (the repository root), with a data dir of its own."""
    root = tmp_path / "example"
    root.mkdir()
    for name in ("ishiki.yaml", "models.yaml", "demo.rules.yaml"):
        shutil.copy(REPO / name, root / name)
    shutil.copytree(REPO / "profiles", root / "profiles")
    return root


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A loopback OpenAI-compatible server."""
    with FakeOpenAIServer() as server:
        yield server


def lines(text: str) -> dict[str, tuple[str, str]]:
    """``what`` -> (level, detail) of each finding line of the text report."""
    found = {}
    for line in text.splitlines():
        if line[:1] in MARKS and ": " in line:
            what, _, detail = line[2:].partition(": ")
            found[what] = (MARKS[line[0]], detail)
    return found


def closed_port() -> int:
    """A port nothing listens on (bound, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_example_config_with_its_model_up(doctor: Any, example: Path, fake_openai: FakeOpenAIServer) -> None:
    env = {"OPENAI_BASE_URL": fake_openai.base_url, "OPENAI_MODEL": "fake-model"}
    done = doctor(str(example), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    found = lines(done.stdout)
    assert found["config"][0] == "ok"
    level, detail = found["model local:fake-model"]
    assert level == "ok"
    assert f"at {fake_openai.base_url}" in detail
    assert found["model demo:demo"][0] == "ok"
    assert found["http ingress"][0] == "ok"
    assert found["host lock"] == ("ok", f"no host is running on {example / 'data'}")
    assert found["clock"] == ("ok", "not checked: no remote server answered with a Date header")
    assert done.stdout.splitlines()[-1].startswith("ok: ")
    assert done.stderr == ""
    assert not (example / "data").exists()  # the doctor writes nothing


def test_example_config_with_its_model_down_falls_back(doctor: Any, example: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    done = doctor(str(example), "--timeout", "5", env={"OPENAI_BASE_URL": url})
    assert done.returncode == 0, done.stdout
    level, detail = lines(done.stdout)["model local:llama3.2"]
    assert level == "warning"
    assert detail.startswith(f"unavailable at {url}")
    assert detail.endswith("default falls back to demo:demo")
    assert f"    fix: start {url}" in done.stdout


def test_a_refused_key_and_a_model_nothing_backs_are_errors(
    doctor: Any, write_config: Any, fake_openai: FakeOpenAIServer
) -> None:
    models = f"providers:\n  fake:\n    api: openai-completions\n    baseUrl: {fake_openai.base_url}\n"
    models += "    models:\n      - id: m\ngroups:\n  default:\n    models: [fake:m]\n"
    profile = {"profiles/p/profile.yml": "model: default\n", "profiles/p/persona.md": "You are p.\n"}
    root = write_config({"models.yaml": models, **profile})
    fake_openai.error(401, "Incorrect API key provided", type="invalid_request_error")
    done = doctor(str(root))
    assert done.returncode == 1
    level, detail = lines(done.stdout)["model fake:m"]
    assert level == "error"
    assert detail.startswith(f"auth at {fake_openai.base_url}")
    assert "api_key" in done.stdout
    fake_openai.server_error(503)
    again = lines(doctor(str(root)).stdout)["model fake:m"]
    assert again[0] == "error"
    assert again[1].endswith("no model of profile p answered")


def test_not_a_config_dir_is_one_line(doctor: Any, tmp_path: Path) -> None:
    done = doctor(str(tmp_path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"ishiki doctor: {tmp_path} is not a config directory: it has no ishiki.yaml, models.yaml or profiles/ "
        "(`ishiki init DIR` writes one)"
    ]
    missing = doctor(str(tmp_path / "nope"), "--json")
    assert missing.returncode == 2
    assert json.loads(missing.stdout) == {"ok": False, "error": f"{tmp_path / 'nope'}: no such directory"}


def test_channel_plugins_checked_and_a_broken_one_named(doctor: Any, write_config: Any) -> None:
    host = "channels:\n  docchat:\n    accounts:\n"
    host += "".join(f"      - {{check: {c}}}\n" for c in ("ok", "bad", "raise", "junk", "none"))
    root = write_config({"ishiki.yaml": host, "models.yaml": "providers: {}\n"})
    done = doctor(str(root), "--json", "--timeout", "3")
    report = json.loads(done.stdout)
    assert done.returncode == 1
    channel = [f for f in report["findings"] if f["what"].startswith(("docchat", "channel docchat"))]
    assert channel[0] == {"level": "ok", "what": "docchat token", "detail": "accepted (cut at 3 s)", "fix": None}
    assert channel[1]["level"] == "error"
    assert channel[1]["fix"] == "make a new token"
    origin = "ishiki.channel.docchat (ishiki-doctor-chat)"
    assert channel[2]["what"] == "channel docchat#2"
    assert channel[2]["detail"] == f"{origin} raised RuntimeError: the token server is on fire"
    assert channel[3]["detail"] == f"{origin} answered str, not Finding"
    assert channel[4] == {
        "level": "ok",
        "what": "channel docchat#4",
        "detail": "configured (the channel has no checks of its own)",
        "fix": None,
    }


def test_json_shape(doctor: Any, example: Path) -> None:
    done = doctor(
        str(example), "--json", "--timeout", "2", env={"OPENAI_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1"}
    )
    report = json.loads(done.stdout)
    assert set(report) == {"ok", "dir", "findings", "summary"}
    assert report["dir"] == str(example)
    assert report["ok"] is (done.returncode == 0)
    for finding in report["findings"]:
        assert set(finding) == {"level", "what", "detail", "fix"}
        assert finding["level"] in ("ok", "warning", "error")
        assert finding["level"] == "ok" or finding["fix"]
    counts = {level: sum(f["level"] == level for f in report["findings"]) for level in ("ok", "warning", "error")}
    assert report["summary"] == counts
    whats = [f["what"] for f in report["findings"]]
    assert whats[0] == "config"
    assert whats[-1] == "clock"


def test_held_lock_names_the_live_host(doctor: Any, example: Path) -> None:
    claim = claim_data_dir(example / "data")  # as the host takes it
    try:
        done = doctor(str(example), "--timeout", "2", env={"OPENAI_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1"})
    finally:
        claim.release()
    level, detail = lines(done.stdout)["host lock"]
    assert level == "warning"
    assert detail.startswith(f"a host (pid {os.getpid()}, alive) is running on {example / 'data'}")
    assert f"kill {os.getpid()}" in done.stdout
    assert lines(doctor(str(example), "--timeout", "2").stdout)["host lock"][0] == "ok"


def test_read_only_data_dir_is_an_error(doctor: Any, example: Path) -> None:
    data = example / "data"
    data.mkdir()
    data.chmod(0o555)
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:  # root writes anywhere: run the doctor without that privilege
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv to drop CAP_DAC_OVERRIDE")
        caps = "-dac_override,-dac_read_search"
        prefix = (setpriv, "--inh-caps", caps, "--bounding-set", caps)
    try:
        done = doctor(str(example), "--timeout", "2", prefix=prefix)
    finally:
        data.chmod(0o755)
    assert done.returncode == 1
    level, detail = lines(done.stdout)[f"data dir {data}"]
    assert level == "error"
    assert detail == "not writable: Permission denied"
    assert f"chmod -R u+rwX {data}" in done.stdout
    assert list(data.iterdir()) == []


def _serve(handler: Callable[[RecordedRequest], Response]) -> LoopbackServer:
    return LoopbackServer(handler).start()


def test_listen_port_taken_by_a_host_or_another_program(doctor: Any, write_config: Any) -> None:
    healthy = _serve(lambda r: Response(200, (), b"ok\n") if r.path == "/healthz" else Response(404))
    other = _serve(lambda r: Response(404))
    try:
        for server, level in ((healthy, "ok"), (other, "error")):
            host = f"http:\n  listen: 127.0.0.1:{server.port}\n  public_url: http://bot.example.test\n"
            host += "channels:\n  docchat:\n    accounts: [{mode: webhook}]\n"
            root = write_config({"ishiki.yaml": host, "models.yaml": "providers: {}\n"})
            found = lines(doctor(str(root), "--timeout", "3").stdout)
            listen = found[f"http.listen 127.0.0.1:{server.port}"]
            assert listen[0] == level
            assert ("in use by a running host" if level == "ok" else "in use by another program") in listen[1]
            assert found["public URL"] == (
                "warning",
                "http://bot.example.test is not https: platforms post webhooks to https only",
            )
    finally:
        healthy.close()
        other.close()
    port = closed_port()
    root = write_config({"ishiki.yaml": "channels:\n  docchat:\n    accounts: [{mode: webhook}]\n", "models.yaml": ""})
    assert lines(doctor(str(root)).stdout)["http ingress"][0] == "error"
    root = write_config({"ishiki.yaml": f"http: {{listen: '127.0.0.1:{port}'}}\n", "models.yaml": ""})
    assert lines(doctor(str(root)).stdout)[f"http.listen 127.0.0.1:{port}"] == ("ok", "free: the host can bind it")


def test_space_levels() -> None:
    tera = 1 << 40
    assert space_level(tera // 2, tera) == "ok"
    assert space_level(FREE_BYTES - 1, tera) == "warning"
    assert space_level(40 << 30, tera) == "warning"  # 40 GiB is under 5 % of 1 TiB
    assert space_level(0, tera) == "error"


def test_clock_skew_from_remote_dates_only() -> None:
    now = 1_700_000_000.0
    date = "Tue, 14 Nov 2023 22:13:20 GMT"  # == now
    assert clock_finding([DateSeen("127.0.0.1", date, now + 500)]).detail.startswith("not checked")
    fine = clock_finding([DateSeen("api.example.test", date, now + 2)])
    assert (fine.level, fine.detail) == ("ok", "within 2 s of api.example.test")
    off = clock_finding([DateSeen("api.example.test", date, now + 95), DateSeen("b.example.test", date, now + 90)])
    assert off.level == "warning"
    assert off.detail == "this machine's clock is 92 s ahead of api.example.test, b.example.test"
    behind = clock_finding([DateSeen("api.example.test", date, now - 60), DateSeen("x.test", "garbage", now)])
    assert behind.detail == "this machine's clock is 60 s behind api.example.test"


@pytest.mark.anyio
async def test_date_recorder_keeps_each_answers_date() -> None:
    server = _serve(lambda r: Response(200, (("date", "Tue, 14 Nov 2023 22:13:20 GMT"),), b"{}"))
    seen: list[DateSeen] = []
    try:
        async with httpx.AsyncClient(transport=DateRecorder(seen, clock=lambda: 1.0)) as client:
            assert (await client.get(f"{server.url}/x")).status_code == 200
    finally:
        server.close()
    assert seen == [DateSeen("127.0.0.1", "Tue, 14 Nov 2023 22:13:20 GMT", 1.0)]
