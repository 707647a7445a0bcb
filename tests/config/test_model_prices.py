"""A model's ``price`` in ``models.yaml``: typed on its ``ModelSpec``, looked up by member, and every mistake
(a negative price, an unknown key, a non-number, a bad currency, a missing price) named with file, key and value
by the real loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from ishiki_host import ModelPrice, ModelsConfig, ModelSpec, ProviderConfig
from ishiki_host.config.models_loader import load_models

PRICED = """\
providers:
  hosted:
    api: anthropic-messages
    base_url: https://api.example.test
    models:
      - id: big
        price: {input: 3, output: 15, cached_input: 0.3, currency: EUR}
      - id: small
        price: {input: 0.25, output: 1.25}
      - id: free
"""


def load(tmp_path: Path, text: str) -> tuple[ModelsConfig, list[str]]:
    (tmp_path / "models.yaml").write_text(text, encoding="utf-8")
    models, errors = load_models(tmp_path, {})
    return models, [e.describe() for e in errors]


def priced(price: str) -> str:
    return f"providers:\n  p:\n    api: x\n    models:\n      - id: m\n        price: {price}\n"


def test_prices_land_on_the_model_specs(tmp_path: Path) -> None:
    models, errors = load(tmp_path, PRICED)
    assert errors == []
    big, small, free = models.providers["hosted"].models
    assert big == ModelSpec("big", price=ModelPrice(3.0, 15.0, cached_input=0.3, currency="EUR"))
    assert small.price == ModelPrice(input=0.25, output=1.25, cached_input=None, currency="USD")
    assert free.price is None
    assert big.price is not None
    assert isinstance(big.price.input, float)  # YAML's 3 becomes 3.0


def test_a_usage_row_model_finds_its_price(tmp_path: Path) -> None:
    models, _ = load(tmp_path, PRICED)
    assert models.price("hosted:small") == ModelPrice(0.25, 1.25)
    assert models.price("hosted:free") is None
    assert models.price("ghost:big") is None
    assert set(models.prices()) == {"hosted:big", "hosted:small"}


def test_cost_is_per_million_tokens() -> None:
    assert ModelPrice(input=2.5, output=10).cost(1_000_000, 100_000) == 3.5
    assert ModelPrice(input=0, output=0).cost(5, 5) == 0.0


@pytest.mark.parametrize(
    ("price", "message"),
    [
        ("{input: -1, output: 10}", "models[0].price.input: must be >= 0; got -1"),
        ("{input: 1, output: -0.5}", "models[0].price.output: must be >= 0; got -0.5"),
        (
            "{input: 1, output: 2, cahcedInput: 1}",
            "models[0].price.cahcedInput: unknown key 'cahcedInput'; did you mean 'cached_input'?",
        ),
        ("{input: cheap, output: 2}", "models[0].price.input: expected a number, got string ('cheap')"),
        ("{input: 1, output: [2]}", "models[0].price.output: expected a number, got array"),
        ("{input: 1, output: 2, currency: usd}", "price.currency: must be a three-letter currency code"),
        ("{output: 2}", "models[0].price: missing required key 'input'"),
        ("12", "models[0].price: expected an object, got integer (12)"),
    ],
)
def test_a_wrong_price_is_named_with_file_key_and_value(tmp_path: Path, price: str, message: str) -> None:
    models, errors = load(tmp_path, priced(price))
    assert len(errors) == 1
    assert errors[0].startswith(f"{tmp_path / 'models.yaml'}:6: providers.p.")
    assert message in errors[0]
    assert "p" not in models.providers  # a provider with an error is left out, as for any other key


def test_the_redacted_config_keeps_prices_and_hides_credentials(tmp_path: Path) -> None:
    text = PRICED.replace("    base_url:", '    api_key: "sk-secret"\n    headers: {X-Token: t0ken}\n    base_url:')
    models, errors = load(tmp_path, text)
    assert errors == []
    shown = models.redacted()
    hosted = shown.providers["hosted"]
    assert (hosted.api_key, dict(hosted.headers)) == ("<hidden>", {"X-Token": "<hidden>"})
    assert shown.prices() == models.prices()
    assert (shown.groups, shown.file) == (models.groups, models.file)
    assert models.providers["hosted"].api_key == "sk-secret"  # the original is untouched
    assert ModelsConfig(providers={"p": ProviderConfig("p", "x")}).redacted().providers["p"].api_key is None
