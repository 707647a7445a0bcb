"""The test kit: loopback fake model servers, the network guard, a fake channel and channel host, test
engines, the runtime harness and a real Host on a temporary config directory (see ``docs/testing.md``)."""

from ishiki_host.testing.channel_host import FakeChannelHost, FakeDelivery
from ishiki_host.testing.channels import FakeChannel, FakeConnection, SentMessage
from ishiki_host.testing.configs import plugin_config
from ishiki_host.testing.engines import EveryMessageWakeup, PassthroughToolcall, PlainContext
from ishiki_host.testing.fake_anthropic import FakeAnthropicServer
from ishiki_host.testing.fake_models import FakeModelServer, Reply, ScriptedCall
from ishiki_host.testing.fake_openai import FakeOpenAIServer
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.host import TestHost, host_yaml, models_yaml, profile_yaml, write_config
from ishiki_host.testing.http_server import LoopbackServer, RecordedRequest, Response
from ishiki_host.testing.network_guard import NetworkGuardError
from ishiki_host.testing.registry import registry_with

__all__ = [
    "EveryMessageWakeup",
    "FakeAnthropicServer",
    "FakeChannel",
    "FakeChannelHost",
    "FakeConnection",
    "FakeDelivery",
    "FakeModelServer",
    "FakeOpenAIServer",
    "LoopbackServer",
    "NetworkGuardError",
    "PassthroughToolcall",
    "PlainContext",
    "RecordedRequest",
    "Reply",
    "Response",
    "RuntimeHarness",
    "ScriptedCall",
    "SentMessage",
    "TestHost",
    "host_yaml",
    "models_yaml",
    "plugin_config",
    "profile_yaml",
    "registry_with",
    "write_config",
]
