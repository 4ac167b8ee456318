"""Retrieval beyond English: conversations in German, Spanish, French and Chinese, asked about in their own
language and across languages.

The conversations and questions are written for this test. Each question has one gold turn; it must be
among the best ``K`` of multilingual-e5-small's dense ranking for every question (the model maps languages
into one space), of BM25 alone for questions in the conversation's language (BM25 tokenised, stemmed and
stripped of stop words for that language, or for the language detected per unit with ``language="auto"``),
and of the fused ranking of both halves.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from omnimem import ConfigError, Memory

pytestmark = pytest.mark.slow  # loads multilingual-e5-small

E5 = "multilingual-e5-small"

CONVERSATIONS: dict[str, list[tuple[str, str]]] = {
    "de": [
        ("Anna", "Ich habe mir letzte Woche einen gebrauchten Kombi gekauft, einen blauen Volvo."),
        ("Jonas", "Meine Schwester heiratet im August in Hamburg, die Feier ist an der Elbe."),
        ("Anna", "Seit Januar lerne ich Cello, meine Lehrerin kommt jeden Donnerstag."),
        ("Jonas", "Unser Hund Bruno hat sich beim Spielen im Park die Pfote verletzt."),
        ("Anna", "Zum Abendessen koche ich heute Linsensuppe mit geräuchertem Tofu."),
        ("Jonas", "Ich wechsle nächsten Monat die Stelle und arbeite dann bei einer Bank in Frankfurt."),
    ],
    "es": [
        ("Lucía", "Mi abuela me enseñó a preparar paella valenciana con conejo y judías verdes."),
        ("Mateo", "El sábado corrí mi primera media maratón en Sevilla, tardé dos horas."),
        ("Lucía", "Estoy pintando un mural de girasoles en la pared de la cocina."),
        ("Mateo", "Mi hermano se mudó a Buenos Aires para estudiar arquitectura."),
        ("Lucía", "Perdí las llaves del coche en la playa y tuve que llamar a un cerrajero."),
        ("Mateo", "Adopté dos gatos del refugio, se llaman Luna y Sol."),
    ],
    "fr": [
        ("Camille", "J'ai planté des tomates et du basilic sur mon balcon à Lyon."),
        ("Hugo", "Mon vol pour Montréal a été annulé à cause de la neige."),
        ("Camille", "Je lis en ce moment un roman policier qui se passe à Marseille."),
        ("Hugo", "Ma fille a commencé le judo, elle a eu sa ceinture jaune."),
        ("Camille", "Nous avons repeint la chambre du bébé en vert pâle."),
        ("Hugo", "Je me suis cassé le poignet en faisant du vélo dans les Alpes."),
    ],
    "zh": [
        ("小明", "我上个月在杭州买了一套新房子，离西湖很近。"),
        ("小红", "我的女儿下周开始学习钢琴，老师是音乐学院的学生。"),
        ("小明", "昨天我做了红烧肉，用了我妈妈的老菜谱。"),
        ("小红", "我们公司明年要把办公室搬到深圳。"),
        ("小明", "周末我去爬了黄山，看到了非常美的日出。"),
        ("小红", "我养的金鱼死了一条，我很难过。"),
    ],
}

# (language of the conversation, question, index of the gold turn); the question's own language varies
SAME = [
    ("de", "Welches Auto hat Anna gekauft?", 0),
    ("de", "Wo arbeitet Jonas ab nächstem Monat?", 5),
    ("de", "Was ist mit Brunos Pfote passiert?", 3),
    ("es", "¿Dónde corrió Mateo la media maratón?", 1),
    ("es", "¿Cómo se llaman los gatos adoptados?", 5),
    ("es", "¿Qué está pintando Lucía en la cocina?", 2),
    ("fr", "Où est-ce que Camille a planté des tomates ?", 0),
    ("fr", "Pourquoi le vol de Hugo a-t-il été annulé ?", 1),
    ("fr", "Quelle ceinture la fille de Hugo a-t-elle eue au judo ?", 3),
    ("zh", "小明在哪里买了房子？", 0),
    ("zh", "小红的女儿要学习什么？", 1),
    ("zh", "公司的办公室要搬到哪里？", 3),
]
ACROSS = [
    ("de", "Which instrument is Anna learning?", 2),
    ("de", "¿Dónde se casa la hermana de Jonas?", 1),
    ("es", "Who taught Lucía to cook paella?", 0),
    ("es", "Wohin ist Mateos Bruder gezogen?", 3),
    ("fr", "How did Hugo break his wrist?", 5),
    ("fr", "谁的航班因为下雪被取消了？", 1),
    ("zh", "Which mountain did Xiaoming climb at the weekend?", 4),
    ("zh", "Qu'a cuisiné Xiaoming hier ?", 2),
]
K_ONE = 2  # of the six turns of one conversation
K_ALL = 3  # of the 24 turns of all four


def remember(m: Memory, languages: list[str]) -> dict[tuple[str, int], str]:
    ids = {}
    for code in languages:
        turns = [{"speaker": speaker, "text": text} for speaker, text in CONVERSATIONS[code]]
        for i, added in enumerate(m.add_dialogue(turns, user_id="u", session_id=code)):  # one embedding batch
            ids[(code, i)] = added.id
    return ids


def ranks_of(m: Memory, question: str, gold: str) -> dict[str, int]:
    """The gold turn's rank in the fused ranking and in each half (every turn is a hit: all of them rank)."""
    hits = m.search(question, user_id="u", top_k=50).hits  # 24 turns at most: each one a hit
    hit = next((h for h in hits if h.unit.id == gold), None)
    if hit is None:
        return {}
    return {"fused": hit.rank, **{half: hit.ranks[half] for half in ("dense", "sparse") if half in hit.ranks}}


@pytest.fixture(scope="module")
def stores() -> Iterator[dict[str, tuple[Memory, dict[tuple[str, int], str]]]]:
    """Per setting ("de", ..., "auto"): a store of its conversations (all four for "auto") and the gold ids."""
    out = {}
    for setting in [*CONVERSATIONS, "auto"]:
        m = Memory(embedder=E5, language=setting, novelty=False, llm=False)
        out[setting] = (m, remember(m, list(CONVERSATIONS) if setting == "auto" else [setting]))
    yield out
    for m, _ in out.values():
        m.close()


CASES = [(setting, lang, q, gold) for setting in [*CONVERSATIONS, "auto"]
         for lang, q, gold in SAME + ACROSS if setting in ("auto", lang)]


@pytest.mark.parametrize(("setting", "lang", "question", "gold"), CASES)
def test_each_gold_turn_is_found_by_dense_and_where_asked_in_its_language_by_bm25_and_both(
        stores, setting, lang, question, gold) -> None:
    m, ids = stores[setting]
    k = K_ALL if setting == "auto" else K_ONE
    ranks = ranks_of(m, question, ids[(lang, gold)])
    assert ranks.get("dense", k + 1) <= k, ranks
    if (lang, question, gold) in SAME:  # BM25 shares no words across languages; in one, it is language-aware
        assert ranks.get("sparse", k + 1) <= k and ranks["fused"] <= k, ranks


def test_english_tokenising_finds_no_chinese_words_the_chinese_setting_does() -> None:
    question, gold = "公司的办公室要搬到哪里？", 3
    for setting, found in (("en", False), ("zh", True)):
        with Memory(embedder="fake", language=setting, dense=False, novelty=False, llm=False) as m:
            ids = remember(m, ["zh"])
            assert ("sparse" in ranks_of(m, question, ids[("zh", gold)])) is found


def test_stemming_follows_the_language(tmp_path) -> None:
    with Memory(tmp_path / "de", embedder="fake", language="de", dense=False, llm=False) as m:
        gold = m.add("Die Kinder spielten mit den Hunden im Garten.", user_id="u").id
        m.add("Der Zug nach Köln hatte Verspätung.", user_id="u")
        assert m.search("Hund", user_id="u", top_k=1).hits[0].unit.id == gold  # Hunden -> hund
        assert m.store.meta().language == "de"


def test_a_store_opens_only_with_the_language_it_was_built_for(tmp_path, monkeypatch) -> None:
    with Memory(tmp_path / "mem", embedder="fake", language="fr") as m:
        m.add("Nous avons repeint la chambre du bébé.", user_id="u")
    with pytest.raises(ConfigError, match="language 'fr', not 'en'"):
        Memory(tmp_path / "mem")
    monkeypatch.setenv("OMNIMEM_LANGUAGE", "fr")
    with Memory(tmp_path / "mem") as m:
        assert m.settings.language == "fr" and m.search("chambre", user_id="u").hits
    with pytest.raises(ConfigError, match="language must be auto or one of"):
        Memory(language="klingon")


def test_postgresql_records_the_language_and_its_postings_follow_it(pg_url: str) -> None:
    with Memory(url=pg_url, embedder="fake", language="de", dense=False, llm=False) as m:
        gold = m.add("Die Kinder spielten mit den Hunden im Garten.", user_id="u").id
        m.add("Der Zug nach Köln hatte Verspätung.", user_id="u")
        assert m.search("Hund", user_id="u", top_k=1).hits[0].unit.id == gold  # BM25 in SQL, German stems
        assert (m.store.meta().language, m.store.meta().roles) == ("de", "none")
    with pytest.raises(ConfigError, match="language 'de', not 'en'"):
        Memory(url=pg_url, embedder="fake")
