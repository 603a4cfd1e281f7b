"""PIIPresidioFilter on real Presidio: recognizers, false positives, consistency, caps, no drops."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from services.cleaning.pii import PIIPresidioFilter, route_language
from shared.errors import ValidationFailed

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def pii() -> PIIPresidioFilter:
    return PIIPresidioFilter(record_counts=True)


def _scrub(step: PIIPresidioFilter, text: str, role: str = "user", rid: Any = "r1") -> str:
    kept, dropped = step([{"id": rid, "messages": [{"role": role, "content": text}]}])
    assert dropped == []
    return str(kept[0]["messages"][0]["content"])


@pytest.mark.parametrize(
    ("text", "secret", "entity"),
    [
        ("我的手机是13800138000，请回电", "13800138000", "CN_PHONE"),
        ("call me on +86 138-0013-8000 tonight", "138-0013-8000", "CN_PHONE"),
        ("办公室电话 021-87654321", "87654321", "CN_LANDLINE"),
        ("身份证号 11010519491231002X 已登记", "11010519491231002X", "CN_ID"),
        ("身份证号 11010519491231002x 已登记", "11010519491231002x", "CN_ID"),
        ("银行卡 6222020200112223330 请查收", "6222020200112223330", "CN_BANK"),
        ("携帯は090-1234-5678です", "1234-5678", "JP_PHONE"),
        ("my number 1234 5678 9018 please", "1234 5678 9018", "JP_MY_NUMBER"),
        ("휴대폰 010-1234-5678 로 연락", "1234-5678", "KR_PHONE"),
        ("주민번호 900101-1234568 입니다", "900101-1234568", "KR_RRN"),
        ("card 4539 1488 0343 6467 exp 12/29", "4539 1488 0343 6467", "CREDIT_CARD"),
        ("IBAN GB82 WEST 1234 5698 7654 32 ok", "GB82 WEST 1234 5698 7654 32", "IBAN_CODE"),
        ("ssh into 192.168.10.24 now", "192.168.10.24", "IP_ADDRESS"),
        ("ring +1 415-555-0132 today", "415-555-0132", "PHONE_NUMBER"),
        ("write to alice.smith@acme-corp.com", "alice.smith@acme-corp.com", "EMAIL_ADDRESS"),
    ],
)
def test_each_recognizer_rewrites_its_entity(
    pii: PIIPresidioFilter, text: str, secret: str, entity: str
) -> None:
    kept, _ = pii([{"id": 1, "messages": [{"role": "user", "content": text}]}])
    assert secret not in kept[0]["messages"][0]["content"]
    assert kept[0]["_pii_hits"].get(entity) == 1


@pytest.mark.parametrize(
    "text",
    [
        "card 4539 1488 0343 6468 fails Luhn",
        "身份证号 110105194912310021 校验位不对",
        "upgrade to version 1.2.3.4 today",
        "pin requests==2.31.0.1 in the lock file",
        "build v10.0.19041.1 and 1.2.3.4.5 are versions",
        "stripe test card 4242 4242 4242 4242 in code: pay('4111111111111111')",
        "order id 213800138000123 is not a phone",
        "timestamp 1700000000000 and account 123456789012",
    ],
)
def test_false_positives_left_alone(pii: PIIPresidioFilter, text: str) -> None:
    assert _scrub(pii, text) == text


def test_email_in_code_and_url_is_rewritten_url_kept(pii: PIIPresidioFilter) -> None:
    text = 'send_mail(to="bob@mail.example.org")  # see https://example.com/unsub?e=bob@mail.example.org'
    out = _scrub(pii, text)
    assert "bob@mail.example.org" not in out
    assert "https://example.com/unsub?e=" in out and 'send_mail(to="' in out


def test_mask_format_keeps_ends(pii: PIIPresidioFilter) -> None:
    assert _scrub(pii, "电话13800138000") == "电话138****8000"


def test_same_value_same_fake_within_row_and_differs_across_rows(pii: PIIPresidioFilter) -> None:
    msgs = [
        {"role": "user", "content": "I am jo.doe@corp.io"},
        {"role": "assistant", "content": "Noted, jo.doe@corp.io!"},
    ]
    rows = [{"id": "a", "messages": msgs}, {"id": "b", "messages": copy.deepcopy(msgs)}]
    kept, _ = pii(rows)
    fake_a1 = kept[0]["messages"][0]["content"].removeprefix("I am ")
    assert kept[0]["messages"][1]["content"] == f"Noted, {fake_a1}!"
    assert "@" in fake_a1 and fake_a1 != "jo.doe@corp.io"
    assert kept[1]["messages"][0]["content"] != kept[0]["messages"][0]["content"]
    again, _ = pii(rows[:1])
    assert again[0]["messages"][0]["content"] == kept[0]["messages"][0]["content"]


def test_persistent_consistency_shares_fakes_across_rows() -> None:
    step = PIIPresidioFilter(persistent_consistency=True, hash_salt="s")
    rows = [
        {"id": i, "messages": [{"role": "user", "content": "mail jo.doe@corp.io"}]}
        for i in range(2)
    ]
    kept, _ = step(rows)
    assert (
        kept[0]["messages"][0]["content"]
        == kept[1]["messages"][0]["content"]
        != "mail jo.doe@corp.io"
    )


def test_tool_messages_skipped_by_default_and_roles_configurable(pii: PIIPresidioFilter) -> None:
    text = "user email jo.doe@corp.io"
    assert _scrub(pii, text, role="tool") == text
    assert _scrub(PIIPresidioFilter(roles=("tool",)), text, role="tool") != text


def test_strategies_redact_hash_and_unknown(pii: PIIPresidioFilter) -> None:
    redact = PIIPresidioFilter(entity_strategy={"cn_phone": "redact"})
    assert _scrub(redact, "电话13800138000。") == "电话。"
    hashed = PIIPresidioFilter(entity_strategy={"ip_address": "hash"}, hash_salt="k")
    out = _scrub(hashed, "ip 10.20.30.40 and again 10.20.30.40")
    token = out.split()[1]
    assert token.startswith("<IP_ADDRESS:") and out.count(token) == 2
    with pytest.raises(ValidationFailed, match="unknown strategy"):
        PIIPresidioFilter(default_strategy="scramble")


def test_missing_spacy_model_is_a_clear_error_not_a_download() -> None:
    step = PIIPresidioFilter(spacy_models={"en": "en_core_web_sm"})
    with pytest.raises(ValidationFailed, match="not installed"):
        _ = step.analyzer


def test_size_cap_scans_the_head_only() -> None:
    step = PIIPresidioFilter(max_chars=40)
    text = "call 13800138000 now." + " filler" * 10 + " then 13900139000"
    out = _scrub(step, text)
    assert "13800138000" not in out and out.endswith("then 13900139000")
    assert step.stats.messages_capped == 1 and step.stats.chars_scanned == 40


def test_list_content_text_parts_scanned(pii: PIIPresidioFilter) -> None:
    row = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "手机13800138000"},
                    {"type": "image_url", "image_url": {"url": "x"}},
                ],
            }
        ]
    }
    kept, _ = pii([row])
    parts = kept[0]["messages"][0]["content"]
    assert parts[0]["text"] == "手机138****8000" and parts[1] == row["messages"][0]["content"][1]


def test_real_rows_never_dropped_never_mutated(
    pii: PIIPresidioFilter, real_rows: list[dict[str, Any]]
) -> None:
    rows = real_rows[:80]
    before = copy.deepcopy(rows)
    kept, dropped = pii(rows)
    assert dropped == [] and len(kept) == len(rows) and rows == before
    assert [r.get("id") for r in kept] == [r.get("id") for r in rows]
    assert all(set(r) - {"_pii_hits"} == set(o) for r, o in zip(kept, rows, strict=True))
    assert pii.stats.rows == 80 and pii.stats.seconds > 0 and pii.stats.chars_scanned > 0


def test_record_counts_removes_stale_hits(pii: PIIPresidioFilter) -> None:
    kept, _ = pii(
        [{"messages": [{"role": "user", "content": "nothing here"}], "_pii_hits": {"X": 1}}]
    )
    assert "_pii_hits" not in kept[0]


def test_language_routing() -> None:
    assert route_language("这是一个中文句子 with some English", ("en", "zh")) == "zh"
    assert route_language("mostly English text with 中文", ("en", "zh")) == "en"
    assert route_language("这是中文", ("en",)) == "en"


def test_first_call_is_fast_offline() -> None:
    code = (
        "import time\nfrom services.cleaning.pii import PIIPresidioFilter\n"
        "s = PIIPresidioFilter(); _ = s.analyzer\nt = time.perf_counter()\n"
        "s([{'messages': [{'role': 'user', 'content': 'mail a.b@example.co.uk'}]}])\n"
        "print(time.perf_counter() - t)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert float(proc.stdout.strip().splitlines()[-1]) < 1.0


def test_without_consistency_each_message_draws_its_own_fake() -> None:
    step = PIIPresidioFilter(consistency=False)
    msgs = [
        {"role": "user", "content": "jo.doe@corp.io"},
        {"role": "user", "content": "jo.doe@corp.io"},
    ]
    kept, _ = step([{"id": 1, "messages": msgs}])
    assert kept[0]["messages"][0]["content"] != kept[0]["messages"][1]["content"]


def test_find_spans_reports_language_and_ordered_spans(pii: PIIPresidioFilter) -> None:
    lang, spans = pii.find_spans("手机13800138000，邮箱 li@qq.com")
    assert lang == "zh"
    assert [s.entity for s in spans] == ["CN_PHONE", "EMAIL_ADDRESS"]
