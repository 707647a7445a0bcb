"""The willingness model: scores, decay, probability, reply cost, persistence and replay."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ishiki_host.engines.wakeup import MessageFeatures
from ishiki_host.engines.wakeup.willingness_model import (
    WILLINGNESS_CONFIG_SCHEMA,
    Decision,
    WillingnessModel,
    WillingnessOptions,
)
from ishiki_host.errors import ConfigError, EngineStateInvalid

PLAIN = MessageFeatures(text="just chatting")
MENTION = MessageFeatures(mentions_self=True, text="@bot hi")
T0 = 1_700_000_000.0


class AlwaysLow:
    """A random source whose every draw is 0.0: anything with a chance above zero triggers."""

    def __init__(self) -> None:
        self.draws = 0

    def random(self) -> float:
        self.draws += 1
        return 0.0


def model(**config: object) -> WillingnessModel:
    return WillingnessModel(WillingnessOptions.from_config(config))


features = st.builds(
    MessageFeatures,
    mentions_self=st.booleans(),
    quotes_self=st.booleans(),
    is_direct=st.booleans(),
    text=st.sampled_from(["hi", "cats are great", "CATS!", ""]),
)
events = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), features, st.floats(0, 900), st.booleans()), max_size=40)


def replay(seq: list[tuple[str, MessageFeatures, float, bool]], seed: int) -> list[Decision]:
    willingness = model(seed=seed, keywords=["cat"])
    rng = willingness.options.make_rng()
    now, out = T0, []
    for channel, message, gap, replied in seq:
        now += gap
        out.append(willingness.decide(channel, message, now, rng))
        if replied:
            willingness.on_reply(channel, now)
    return out


def test_defaults_come_from_the_schema() -> None:
    options = WillingnessOptions.from_config({})
    assert options == WillingnessOptions(12, 100, 15, 40, (), 1.2, 100, 600, 55, 0.04, 35, None)
    assert set(WILLINGNESS_CONFIG_SCHEMA["properties"]) == {
        "base", "at_mention", "is_quote", "is_direct_message", "keywords", "keyword_multiplier", "max_willingness",
        "decay_half_life_seconds", "probability_threshold", "probability_amplifier", "reply_cost", "seed",
    }  # fmt: skip


@given(events, st.integers(0, 2**32))
def test_a_replay_with_the_same_seed_makes_the_same_decisions(seq: list, seed: int) -> None:
    assert replay(seq, seed) == replay(seq, seed)


@given(events)
def test_at_or_below_the_threshold_it_never_triggers(seq: list) -> None:
    willingness, rng = model(), AlwaysLow()
    now = T0
    for channel, message, gap, replied in seq:
        now += gap
        decision = willingness.decide(channel, message, now, rng)
        assert 0.0 <= decision.score <= 100.0
        if decision.score <= 55.0:
            assert not decision.trigger
            assert decision.probability == 0.0
        else:
            assert decision.trigger  # a draw of 0.0 is below any chance above zero
        if replied:
            willingness.on_reply(channel, now)


def test_a_mention_from_zero_lifts_above_the_threshold_and_answers() -> None:
    willingness, rng = model(), random.Random(1)
    decision = willingness.decide("g1", MENTION, T0, rng)
    assert decision == Decision(trigger=True, score=100.0, probability=1.0)


def test_plain_messages_climb_with_shrinking_gains() -> None:
    willingness, rng = model(), AlwaysLow()
    scores = [willingness.decide("g1", PLAIN, T0, rng).score for _ in range(8)]
    assert scores[0] == 12.0
    assert scores[1] == pytest.approx(12 + 12 * 0.88)
    gains = [b - a for a, b in zip([0.0, *scores], scores, strict=False)]
    assert gains == sorted(gains, reverse=True)
    first_trigger = next(i for i, s in enumerate(scores) if s > 55)
    assert rng.draws == len(scores) - first_trigger  # no draw while the chance is zero


def test_bonuses_and_keywords() -> None:
    willingness = model(keywords=["Tea"], keyword_multiplier=2)
    assert willingness.gain(MessageFeatures()) == 12
    assert willingness.gain(MessageFeatures(quotes_self=True)) == 27
    assert willingness.gain(MessageFeatures(is_direct=True)) == 52
    assert willingness.gain(MessageFeatures(text="green TEA please")) == 24
    assert willingness.gain(MessageFeatures(mentions_self=True, text="tea")) == 224


def test_decay_halves_in_one_half_life() -> None:
    willingness, rng = model(), AlwaysLow()
    willingness.decide("g1", MessageFeatures(is_direct=True), T0, rng)
    assert willingness.score("g1", T0) == 52.0
    assert willingness.score("g1", T0 + 600) == 26.0
    assert willingness.score("g1", T0 + 1200) == 13.0
    assert willingness.score("g1", T0 - 50) == 52.0  # a clock that went back decays nothing
    assert willingness.score("never-seen", T0) == 0.0


def test_probability_grows_past_the_threshold_and_caps() -> None:
    willingness = model()
    assert willingness.probability(55) == 0.0
    assert willingness.probability(65) == pytest.approx(0.4)
    assert willingness.probability(80) == 1.0
    assert willingness.probability(100) == 1.0


def test_reply_cost_applies_to_the_answered_channel_only() -> None:
    willingness, rng = model(), AlwaysLow()
    willingness.decide("a", MENTION, T0, rng)
    willingness.decide("b", MENTION, T0, rng)
    assert willingness.on_reply("a", T0) == 65.0
    assert willingness.score("a", T0) == 65.0
    assert willingness.score("b", T0) == 100.0
    assert willingness.on_reply("a", T0) == 30.0
    assert willingness.on_reply("a", T0) == 0.0  # never below zero


def test_state_round_trips_through_json_and_keeps_decaying() -> None:
    willingness, rng = model(), AlwaysLow()
    willingness.decide("private:1", MENTION, T0, rng)
    willingness.decide("group:2", PLAIN, T0 + 10, rng)
    data = json.loads(json.dumps(willingness.to_dict()))
    restored = WillingnessModel.from_dict(data, willingness.options)
    assert restored.to_dict() == willingness.to_dict()
    assert restored.score("private:1", T0 + 600) == 50.0
    assert sorted(restored.channels()) == ["group:2", "private:1"]


def test_lowered_maximum_caps_restored_scores() -> None:
    data = {"version": 1, "channels": {"a": {"score": 100.0, "updatedAt": T0}}}
    restored = WillingnessModel.from_dict(data, WillingnessOptions.from_config({"max_willingness": 80}))
    assert restored.score("a", T0) == 80.0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "version 1"),
        ({"version": 2, "channels": {}}, "version 1"),
        ({"version": 1, "channels": []}, '"channels" must be an object'),
        ({"version": 1, "channels": {"a": {"score": "x", "updatedAt": 1}}}, "channel 'a' needs numbers"),
        ({"version": 1, "channels": {"a": {"score": 1}}}, "channel 'a' needs numbers"),
        ({"version": 1, "channels": {"a": {"score": -1, "updatedAt": 1}}}, "below 0"),
    ],
)
def test_malformed_state_is_refused_clearly(data: object, message: str) -> None:
    with pytest.raises(EngineStateInvalid, match=message):
        WillingnessModel.from_dict(data, WillingnessOptions.from_config({}))  # type: ignore[arg-type]


def test_prune_forgets_faded_channels() -> None:
    willingness, rng = model(), AlwaysLow()
    willingness.decide("old", PLAIN, T0, rng)
    willingness.decide("new", PLAIN, T0 + 6000, rng)
    assert willingness.prune(T0 + 6000, below=0.05) == 1
    assert list(willingness.channels()) == ["new"]
    assert len(willingness) == 1


def test_seeded_sources_repeat() -> None:
    options = WillingnessOptions.from_config({"seed": 7})
    assert [options.make_rng().random() for _ in range(2)] == [random.Random(7).random()] * 2


@pytest.mark.parametrize(
    ("config", "path", "message"),
    [
        ({"bse": 3}, "wakeup.willingness", 'unknown option "bse" (did you mean "base"?)'),
        ({"base": "high"}, "wakeup.willingness.base", '"high" is invalid'),
        ({"decay_half_life_seconds": 0}, "wakeup.willingness.decay_half_life_seconds", "0 is invalid"),
        ({"keywords": ["ok", ""]}, "wakeup.willingness.keywords.1", '"" is invalid'),
        ({"seed": 1.5}, "wakeup.willingness.seed", "1.5 is invalid"),
        ({"probability_threshold": 100}, "wakeup.willingness.probability_threshold", "must be below max_willingness"),
    ],
)
def test_bad_config_names_the_key_and_value(config: dict, path: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        WillingnessOptions.from_config(config)
    assert caught.value.path == path
    assert message in caught.value.message
