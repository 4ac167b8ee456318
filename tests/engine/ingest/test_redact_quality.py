"""redact_pii's detectors on the labelled synthetic set (benchmarks/reliability/redaction_data.py).

The figures the redaction benchmark reports come from the same generator and
scorer; these bounds keep them from slipping silently.
"""

from __future__ import annotations

from benchmarks.reliability.redaction import findings, score, stored_texts
from benchmarks.reliability.redaction_data import examples, iban
from omnimem.engine.ingest.redact import KINDS, iban_valid, redact


def test_the_set_is_the_same_on_every_run_and_labels_what_it_holds() -> None:
    first, again = examples(200), examples(200)
    assert first == again and first != examples(200, seed=1)
    kinds = {kind for e in first for _, _, kind in e.spans}
    assert kinds == set(KINDS) and any(not e.spans for e in first)
    assert iban_valid(iban("DE", "370400440532013000"))  # the generator's check digits are ISO 13616's


def test_each_kind_is_found_with_high_precision() -> None:
    sentences = examples(300)
    result = score(sentences, [redact(e.text) for e in sentences])  # one sentence at a time, as one add redacts it
    for kind in ("EMAIL", "IBAN", "CARD", "ACCOUNT", "PHONE", "ADDRESS"):
        assert result["kinds"][kind]["recall"] == 1.0 and result["kinds"][kind]["precision"] == 1.0, kind
    person = result["kinds"]["PERSON"]
    assert person["recall"] >= 0.8 and person["precision"] >= 0.95, person
    assert result["all"]["leak_rate"] <= 0.1


def test_the_benchmark_reads_what_an_add_stored_and_aligns_each_placeholder() -> None:
    sentences = examples(20)
    assert stored_texts([e.text for e in sentences]) == [redact(e.text) for e in sentences]
    original = "Ask Priya Patel for the keys; her mobile is 555-0142."
    assert findings(original, "Ask <PERSON> for the keys; her mobile is <PHONE>.") == [(4, 15, "PERSON"),
                                                                                     (44, 52, "PHONE")]
