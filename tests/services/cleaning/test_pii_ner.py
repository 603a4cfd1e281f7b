"""English NER in PIIPresidioFilter with the pii-ner extra's model: consistent fakes across a conversation."""

from __future__ import annotations

import importlib.util

import pytest

from services.cleaning.pii import PIIPresidioFilter
from services.cleaning.pii_engine import ENGLISH_NER_MODEL

# `make install` installs the hash-pinned model; its absence is a failed install, not a reason to skip.
assert importlib.util.find_spec(ENGLISH_NER_MODEL) is not None, f"{ENGLISH_NER_MODEL} is not installed"

ROW = {"id": "c1", "messages": [
    {"role": "user", "content": "Hi, I'm John Smith and I live in Boston. Ship it to 12 Baker Street please."},
    {"role": "assistant", "content": "Thanks, John Smith! Your parcel goes to 12 Baker Street in Boston tomorrow."},
    {"role": "user", "content": "Great. My sister Maria Garcia in Madrid wants one too."},
    {"role": "assistant", "content": "Done: Maria Garcia in Madrid will get hers on Friday, John Smith."},
]}


@pytest.fixture(scope="module")
def ner() -> PIIPresidioFilter:
    return PIIPresidioFilter(languages=["en"], spacy_models={"en": ENGLISH_NER_MODEL})


def test_names_places_and_streets_are_replaced_consistently_across_the_conversation(ner: PIIPresidioFilter) -> None:
    (out,), dropped = ner([ROW])
    assert not dropped
    texts = [m["content"] for m in out["messages"]]
    joined = "\n".join(texts)
    for real in ("John Smith", "Boston", "Maria Garcia", "Madrid", "12 Baker Street"):
        assert real not in joined, (real, joined)
    spans = ner.find_spans(ROW["messages"][0]["content"])[1]
    assert {"PERSON", "LOCATION", "STREET_ADDRESS"} <= {s.entity for s in spans}
    # The same real value gets the same fake in every message of the row.
    first_fake_name = texts[0].split("I'm ", 1)[1].split(" and", 1)[0]
    assert first_fake_name and first_fake_name in texts[1] and first_fake_name in texts[3]
    fake_sister = texts[2].split("sister ", 1)[1].split(" in ", 1)[0]
    assert fake_sister in texts[3] and fake_sister != first_fake_name


def test_another_conversation_gets_other_fakes(ner: PIIPresidioFilter) -> None:
    (a,), _ = ner([ROW])
    (b,), _ = ner([{**ROW, "id": "c2", "messages": ROW["messages"] + [{"role": "user", "content": "Thanks."}]}])
    assert a["messages"][0]["content"] != b["messages"][0]["content"]


def test_without_a_model_names_stay_and_patterns_still_run() -> None:
    f = PIIPresidioFilter(languages=["en"])
    text = f.scrub_text("John Smith, john.smith@example.com", seed="s")
    assert "John Smith" in text and "john.smith@example.com" not in text


def test_a_batch_analysed_with_nlp_pipe_gives_what_row_by_row_analysis_gives(
        ner: PIIPresidioFilter, real_rows: list[dict]) -> None:
    rows = [ROW, *real_rows[:12], {"id": "parts", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Call Anna Berg in Oslo."}, {"type": "image_url"}]},
        {"role": "assistant", "content": "Anna Berg is in Oslo, " + "x" * 30_000}]}]
    batched, _ = ner(rows)  # process(): one nlp.pipe over every scanned text of the batch
    one_by_one = [ner.scrub_row(r) for r in rows]  # no prefetched analyses: nlp(text) per message
    assert batched == one_by_one
    assert batched[0] != ROW and ner._artifacts == {}  # NER ran; the batch's analyses are not kept
