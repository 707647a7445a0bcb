"""The test kit: stand-in models, loopback fake model servers, the network guard, a fake channel and channel
host, a fake host-plugin context, test engines, the runtime harness, a real Host on a temporary config
directory and ``ishiki run`` in a subprocess, and the real parts a plugin's tests drive (the gateway over a model
API, the installed services); see ``docs/testing.md``.

Everything a plugin's tests need is importable from here (and the plugin itself from ``ishiki_host``); the
pytest plugin (entry point ``pytest11``) adds the fixtures.
"""

from ishiki_host.channels.repeats import event_identity
from ishiki_host.config.models import ModelsConfig
from ishiki_host.core.turns import CallContext
from ishiki_host.gateway.gateway import Gateway
from ishiki_host.gateway.scheduler import SchedulerConfig
from ishiki_host.ingress import HttpIngress
from ishiki_host.observe.logtail import HostLogTail
from ishiki_host.plugins.discovery import PluginRegistry, ServiceRecord, discover
from ishiki_host.testing.channel_host import FakeChannelHost, FakeDelivery
from ishiki_host.testing.channels import FakeChannel, FakeConnection, SentMessage
from ishiki_host.testing.configs import plugin_config
from ishiki_host.testing.connection import running_connection
from ishiki_host.testing.embeddings import ConceptEmbedder
from ishiki_host.testing.engines import EveryMessageWakeup, PassthroughToolcall, PlainContext
from ishiki_host.testing.expect import ExpectationFailed, Expectations, RecordedCall
from ishiki_host.testing.fake_anthropic import FakeAnthropicServer
from ishiki_host.testing.fake_models import FakeModelServer, Reply, ScriptedCall
from ishiki_host.testing.fake_openai import FakeOpenAIServer
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.harness_factory import RuntimeHarnessFactory
from ishiki_host.testing.host import MakeHost, TestHost, host_yaml, models_yaml, profile_yaml, write_config
from ishiki_host.testing.host_plugin_context import FakeHostPluginContext
from ishiki_host.testing.http import serve_http
from ishiki_host.testing.http_server import LoopbackServer, RecordedRequest, Response
from ishiki_host.testing.models import FunctionModel, ScriptedModel, reply, tool_call
from ishiki_host.testing.network_guard import NetworkGuardError
from ishiki_host.testing.process import IshikiProcess, free_ports
from ishiki_host.testing.registry import registry_with
from ishiki_host.testing.schema_values import example_arguments
from ishiki_host.testing.testmodel import KERNEL_TOOL_NAMES, TestModel
from ishiki_host.tools.read import make_read_tool

__all__ = [
    "KERNEL_TOOL_NAMES",
    "CallContext",
    "ConceptEmbedder",
    "EveryMessageWakeup",
    "ExpectationFailed",
    "Expectations",
    "FakeAnthropicServer",
    "FakeChannel",
    "FakeChannelHost",
    "FakeConnection",
    "FakeDelivery",
    "FakeHostPluginContext",
    "FakeModelServer",
    "FakeOpenAIServer",
    "FunctionModel",
    "Gateway",
    "HostLogTail",
    "HttpIngress",
    "IshikiProcess",
    "LoopbackServer",
    "MakeHost",
    "ModelsConfig",
    "NetworkGuardError",
    "PassthroughToolcall",
    "PlainContext",
    "PluginRegistry",
    "RecordedCall",
    "RecordedRequest",
    "Reply",
    "Response",
    "RuntimeHarness",
    "RuntimeHarnessFactory",
    "SchedulerConfig",
    "ScriptedCall",
    "ScriptedModel",
    "SentMessage",
    "ServiceRecord",
    "TestHost",
    "TestModel",
    "discover",
    "event_identity",
    "example_arguments",
    "free_ports",
    "host_yaml",
    "make_read_tool",
    "models_yaml",
    "plugin_config",
    "profile_yaml",
    "registry_with",
    "reply",
    "running_connection",
    "serve_http",
    "tool_call",
    "write_config",
]
