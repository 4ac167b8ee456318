from omnimem.engine.ingest.novelty import NoveltyFilter, jaccard, word_set


def test_word_set_is_lowercased_words():
    assert word_set("I painted a Sunset, a SUNSET!") == {"i", "painted", "a", "sunset"}


def test_jaccard_counts_shared_words_over_all_words():
    assert jaccard(word_set("a b c"), word_set("b c d")) == 2 / 4
    assert jaccard(frozenset(), frozenset()) == 0.0


def test_filter_rejects_above_threshold_and_names_the_closest_unit():
    f = NoveltyFilter(threshold=0.8)
    recent = [("u1", "we went hiking in the alps"), ("u2", "I painted a sunset last weekend")]
    decision = f.check("I painted a sunset last weekend!", recent)
    assert not decision.accepted
    assert decision.closest_id == "u2"
    assert decision.similarity == 1.0
    assert "u2" in decision.reason


def test_filter_accepts_at_exactly_the_threshold():
    # 4 shared of 5 words = 0.8: the original rejects only strictly above
    decision = NoveltyFilter(threshold=0.8).check("a b c d", [("u", "a b c d e")])
    assert decision.accepted and decision.similarity == 0.8


def test_filter_can_be_switched_off():
    decision = NoveltyFilter(enabled=False).check("same", [("u", "same")])
    assert decision.accepted
