"""``ishiki models [DIR] [--json] [--probe [--timeout S]]``: the providers, groups and models of ``models.yaml``.

With ``--probe`` every model gets one tiny request (concurrently, each cut at ``--timeout`` seconds, 10 by
default, so a server that hangs costs 10 s, not its provider's whole-call timeout) and the report shows its
latency or the classified error with the URL it went to. While probing, a line on stderr says what is probed
and where, and one line per model as its probe ends (progress for a person at the terminal; stdout stays the
report, JSON with ``--json``). Exit status: 0 when models.yaml has no error (and, probing, every model answered), 1
otherwise, 2 when DIR is not a config directory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ishiki_host.cli._args import add_dir_argument, timeout_seconds, usable_dir

__all__ = ["provider_apis", "register", "render", "run"]


def register(subparsers: Any) -> None:
    """Add the ``models`` command."""
    parser = subparsers.add_parser(
        "models",
        help="list the models of models.yaml (and probe them)",
        description="List providers, groups and models with context windows, inputs and groups. --probe sends "
        "each model one tiny request and shows its latency or error. Exit 1 on a models.yaml error or a failed "
        "probe, 2 when DIR is not a config directory.",
    )
    add_dir_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.add_argument("--probe", action="store_true", help="send every model one tiny request")
    parser.add_argument(
        "--timeout",
        type=timeout_seconds,
        default=PROBE_TIMEOUT,
        metavar="S",
        help=f"seconds each probe may take (default {PROBE_TIMEOUT:g})",
    )
    parser.set_defaults(handler=run)


PROBE_TIMEOUT = 10.0
"""How long one probe may take by default: long enough for a cold local model, short enough to wait for."""


def run(args: argparse.Namespace) -> int:
    """Report the models of ``args.dir``; return the exit status."""
    import anyio

    from ishiki_host.cli._output import print_json
    from ishiki_host.config.models_loader import load_models
    from ishiki_host.plugins.discovery import discover

    root = usable_dir("models", args.dir)
    if root is None:
        return 2
    registry = discover()
    config, errors = load_models(root, catalog=registry)
    report = anyio.run(_report, root, config, registry, args.probe, args.timeout)
    report["errors"] = [e.as_dict() for e in errors]
    if args.json:
        print_json(report)
    else:
        print("\n".join(render(report)))
        for error in errors:
            print(f"error: {error.describe()}", file=sys.stderr)
    failed = any(m.get("probe") and not m["probe"]["ok"] for m in report["models"])
    return 1 if errors or failed else 0


def provider_apis(config: Any, registry: Any) -> dict[str, Any]:
    """An instance of each installed model API the providers of ``config`` name, by API name (what a
    ``Gateway`` takes; ``ishiki doctor`` probes through the same)."""
    from ishiki_host.config.services import PROVIDER_GROUP, service_name

    apis = {}
    for provider in config.providers.values():
        cls = registry.plugin(service_name(PROVIDER_GROUP, provider.api))
        if cls is not None:
            apis[provider.api] = cls()
    return apis


async def _report(root: Path, config: Any, registry: Any, probe: bool, probe_seconds: float) -> dict[str, Any]:
    from ishiki_host.gateway import Gateway, models_report

    apis = provider_apis(config, registry)
    if probe:
        count = sum(len(p.models) for p in config.providers.values())
        urls = sorted({p.base_url or f"{p.api}'s default URL" for p in config.providers.values() if p.models})
        models = f"{count} model{'s' if count != 1 else ''}"
        print(f"probing {models} at {', '.join(urls)} (at most {probe_seconds:g} s each)", file=sys.stderr)
    async with Gateway(config, apis, config_dir=root) as gateway:
        return await models_report(config, gateway, probe, timeout_seconds=probe_seconds, on_probe=_progress)


def _progress(result: Any, url: str | None) -> None:
    """One stderr line as a probe ends."""
    print(f"  {result.member}: {_probe_state(result.to_dict(), url)}", file=sys.stderr, flush=True)


def _probe_state(probe: dict[str, Any], url: str | None) -> str:
    if probe["ok"]:
        return f"ok {probe['latency_seconds']:.2f}s"
    return f"{probe['error_kind']}: {probe['error']}" + (f" ({url})" if url else "")


def render(report: dict[str, Any]) -> list[str]:
    """The report as aligned tables."""
    from ishiki_host.cli._output import table

    lines = [f"models.yaml: {report['file'] or 'not found'}"]
    rows = [["MODEL", "CONTEXT", "MAX OUT", "INPUT", "TOOLS", "GROUPS", "STATE"]]
    for model in report["models"]:
        state = (model.get("breaker") or {}).get("state", "?")
        probe = model.get("probe")
        if probe is not None:
            state = _probe_state(probe, probe.get("url"))
        rows.append(
            [
                model["ref"],
                f"{model['context_window']:,}",
                f"{model['max_tokens']:,}",
                ",".join(model["input"]),
                "yes" if model["tool_call"] else "no",
                ",".join(model["groups"]) or "-",
                state,
            ]
        )
    lines += table(rows, "  ")
    providers = [p for p in report["providers"] if p.get("error")]
    lines += [f"provider {p['id']}: {p['error']}" for p in providers]
    for group in report["groups"]:
        lines.append(f"group {group['name']} ({group['strategy']}): {' → '.join(group['members'])}")
    return lines
