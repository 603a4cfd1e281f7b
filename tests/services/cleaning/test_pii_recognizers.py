"""Checksums and the stricter built-in recognizers."""

from __future__ import annotations

from services.cleaning.pii_recognizers import (
    CnIdRecognizer,
    OfflineEmailRecognizer,
    VersionAwareIpRecognizer,
    cn_id_checksum_ok,
    jp_my_number_checksum_ok,
    luhn_ok,
)


def test_checksums() -> None:
    assert luhn_ok("4539 1488 0343 6467") and not luhn_ok("4539 1488 0343 6468")
    assert not luhn_ok("424242")  # under 13 digits is never a card
    assert cn_id_checksum_ok("11010519491231002X") and cn_id_checksum_ok("11010519491231002x")
    assert not cn_id_checksum_ok("110105194912310021")
    assert jp_my_number_checksum_ok("1234 5678 9018") and not jp_my_number_checksum_ok(
        "123456789012"
    )


def test_cn_id_not_inside_longer_alphanumerics() -> None:
    rec = CnIdRecognizer(supported_language="zh")
    assert rec.analyze("号码11010519491231002X。", ["CN_ID"])
    assert not rec.analyze("token a11010519491231002Xb", ["CN_ID"])


def test_version_strings_are_not_ips() -> None:
    rec = VersionAwareIpRecognizer(supported_language="en")
    text = "host 10.1.2.3, version 1.2.3.4, v2.0.0.1, pkg==3.1.4.1, 1.2.3.4-rc1"
    assert [text[r.start : r.end] for r in rec.analyze(text, ["IP_ADDRESS"])] == ["10.1.2.3"]


def test_email_inside_url_query_is_trimmed_to_the_address() -> None:
    rec = OfflineEmailRecognizer(supported_language="en")
    text = "https://x.org/unsub?email=bob@mail.example.org"
    hits = rec.analyze(text, ["EMAIL_ADDRESS"])
    assert [text[r.start : r.end] for r in hits] == ["bob@mail.example.org"]
