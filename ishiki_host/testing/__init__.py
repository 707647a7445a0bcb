"""The test kit: loopback fake model servers, a fake channel host, the network guard and fixtures (see
``docs/testing.md``)."""

from ishiki_host.testing.channel_host import FakeChannelHost, FakeDelivery
from ishiki_host.testing.configs import plugin_config
from ishiki_host.testing.fake_anthropic import FakeAnthropicServer
from ishiki_host.testing.fake_models import FakeModelServer, Reply, ScriptedCall
from ishiki_host.testing.fake_openai import FakeOpenAIServer
from ishiki_host.testing.http_server import LoopbackServer, RecordedRequest, Response
from ishiki_host.testing.network_guard import NetworkGuardError

__all__ = [
    "FakeAnthropicServer",
    "FakeChannelHost",
    "FakeDelivery",
    "FakeModelServer",
    "FakeOpenAIServer",
    "LoopbackServer",
    "NetworkGuardError",
    "RecordedRequest",
    "Reply",
    "Response",
    "ScriptedCall",
    "plugin_config",
]
