"""Adversarial scope probe: no scope reachable through a spelling, no unit id taken over, no unscoped retriever.

Counted on the embedded store and on a private pgserver PostgreSQL (the
``postgres`` extra), with the fake embedder:

- **LangGraph spellings.** User ``ann`` and ``zoë`` each put one item through
  ``OmnimemStore``; then every variant of their labels (spaces, tab, newline,
  ideographic and no-break space, NFD, a combining mark, case, zero-width
  characters, a lone combining mark) tries a put of a planted note. Counted:
  puts refused (by error class), accepted ones that reach the victim's
  ``Memory.search``, ``OmnimemRetriever(user_id=...)`` or export, and accepted
  ones the victim's ``forget`` removes (target 0 for all but the refusals).
- **Colliding keys.** ``--collisions`` puts under keys that omnimem's session id
  trims to ann's key, then ann's put, get, second put, get and delete: puts
  her get cannot see and deletes that leave a version behind (target 0).
- **Unscoped retriever.** ``OmnimemRetriever(memory=mem)`` without a scope:
  searches that ran (target 0).
- **Import over HTTP**, through a real ``omnimem serve`` on loopback: alice's
  user-scoped key imports a unit with an id bob deleted, a live id of bob's,
  an id only carol's audit log names (carol forgotten) and an id of alice's
  other agent. Counted: ids taken over (stored, or readable by alice), events
  crossing scopes (alice's history of bob's ids, bob's history changed, the log
  naming bob's ids under another user), and distinguishable refusals (answers
  compared byte for byte with the id blanked; target 0). A free id refused for
  another reason (an unknown modality) is shown beside them. A user-scoped admin key importing
  events whose actors are store-wide or other users' keys: foreign actors kept.

    python -m benchmarks scope-probe                    # both backends
    python -m benchmarks scope-probe --backends sqlite --collisions 51

Writes ``results/scope-probe.json`` and ``results/SECURITY.md`` (:func:`write_page`, which also reads
``time-fuzz.json``, ``ingest-race.json`` and ``dialogue-stall*.json``: the default run and any kept beside it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness.backends import database_server
from benchmarks.harness.paths import RESULTS
from benchmarks.harness.server import create_key, serving
from omnimem import Memory, __version__
from omnimem.integrations.langchain import OmnimemRetriever
from omnimem.integrations.langgraph import OmnimemStore

VICTIMS = ("ann", "zoë")  # NFC, as omnimem keeps user ids
SPELLINGS = {  # variant -> label; each is tried as the first label of (label,) and (label, "notes")
    "trailing space": "ann ", "leading space": " ann", "tab": "ann\t", "newline": "ann\n",
    "ideographic space": "ann\u3000", "no-break space": "\u00a0ann", "NFD": unicodedata.normalize("NFD", "zoë"),
    "combining mark after a letter": "zoe\u0308", "capitalised": "Ann", "upper case": "ANN",
    "zero-width space inside": "an\u200bn", "zero-width space after": "ann\u200b",
    "zero-width joiner inside": "an\u200dn", "lone combining mark first": "\u0301ann",
    "a lone combining mark": "\u0301", "zoe without diaeresis": "zoe",
}
KEYS: dict[str, dict[str, Any]] = {
    "alice": {"role": "write", "user_id": "alice"},
    "alice-bot": {"role": "write", "user_id": "alice", "agent_id": "bot"},
    "alice-admin": {"role": "admin", "user_id": "alice"}, "bob": {"role": "write", "user_id": "bob"},
    "root": {"role": "admin"},
}
HEADER = {"kind": "header", "format": "omnimem-export", "version": 1}
NDJSON = {"content-type": "application/x-ndjson"}


def _shown(mem: Memory, user: str) -> str:
    """Everything a user's search, retriever and export show, by surface."""
    search = [h.text for h in mem.search("planted instruction note", user_id=user, budget=8000).hits]
    retriever = [d.page_content for d in OmnimemRetriever(memory=mem, user_id=user, budget=8000).invoke("planted")]
    return json.dumps({"search": search, "retriever": retriever, "export": list(mem.export(user_id=user))},
                      ensure_ascii=False, default=str)


def spellings(mem: Memory) -> dict[str, Any]:
    """Every variant's put against the victims' search, retriever, export and forget."""
    store = OmnimemStore(memory=mem)
    for victim in VICTIMS:
        store.put((victim, "notes"), "k", {"text": f"{victim}'s own note about the garden"})
    refused: Counter[str] = Counter()
    accepted: list[tuple[str, tuple[str, ...]]] = []
    for n, (name, label) in enumerate(SPELLINGS.items()):
        for namespace in [(label,), (label, "notes")]:
            try:
                store.put(namespace, "k", {"text": f"planted instruction marker{n}x{len(namespace)}"})
            except Exception as exc:  # the error class is the figure
                refused[type(exc).__name__] += 1
            else:
                accepted.append((f"marker{n}x{len(namespace)}", namespace))
    reach = {"search": 0, "retriever": 0, "export": 0}
    for victim in VICTIMS:
        shown = json.loads(_shown(mem, victim))
        for surface in reach:
            reach[surface] += sum(marker in json.dumps(shown[surface], ensure_ascii=False) for marker, _ in accepted)
    seen_by_owner = sum(marker in _shown(mem, namespace[0]) for marker, namespace in accepted)  # the surfaces work
    for victim in VICTIMS:
        mem.forget(user_id=victim)
    removed = sum(store.get(namespace, "k") is None for _, namespace in accepted)
    return {"variants": len(SPELLINGS), "puts": 2 * len(SPELLINGS), "accepted": len(accepted),
            "refused": dict(sorted(refused.items())), "accepted_seen_by_their_own_user": seen_by_owner,
            "reaching_victim": reach,
            "removed_by_victim_forget": removed,
            "cross_scope": sum(reach.values()) + removed}


def collisions(mem: Memory, n: int) -> dict[str, Any]:
    """``n`` keys sharing ann's omnimem scope, then ann's own puts, gets and delete."""
    store = OmnimemStore(memory=mem)
    keys = [" " * i + "k" for i in range(1, n // 2 + 1)] + ["k" + "\t" * i for i in range(1, n - n // 2 + 1)]
    for i, key in enumerate(keys):
        store.put(("ann", "notes"), key, {"text": f"colliding put {i}"})
    invisible = 0
    for value in ("ann's first value", "ann's second value"):
        store.put(("ann", "notes"), "k", {"text": value})
        got = store.get(("ann", "notes"), "k")
        invisible += got is None or got.value != {"text": value}
    store.delete(("ann", "notes"), "k")
    residue = [u for u in mem.units(user_id="ann", include_superseded=True, limit=10 * n + 100)
               if u.metadata.get("langgraph", {}).get("key") == "k"
               and u.metadata["langgraph"].get("namespace") == ["ann", "notes"]]
    others = sum(store.get(("ann", "notes"), key) is not None for key in keys)
    return {"colliding_puts": n, "invisible_puts": invisible,
            "noop_deletes": int(bool(residue) or store.get(("ann", "notes"), "k") is not None),
            "versions_left_after_delete": len(residue), "colliding_items_intact": others}


def unscoped_retriever(mem: Memory) -> dict[str, Any]:
    """``OmnimemRetriever(memory=mem)`` with no scope: refused, or a search of every user."""
    try:
        retriever = OmnimemRetriever(memory=mem)
    except Exception as exc:
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        return {"searches_ran": 0, "refused_with": type(exc).__name__,
                "message": str(cause).splitlines()[0][:200]}
    retriever.invoke("garden")
    return {"searches_ran": 1, "refused_with": None, "message": None}


def _dump(*records: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in (HEADER, *records))


def _unit(unit_id: str, user: str, **fields: Any) -> dict[str, Any]:
    return {"kind": "unit", "id": unit_id, "text": "alice's imported note", "user_id": user, **fields}


def _event(unit_id: str, actor: str, seq: int) -> dict[str, Any]:
    return {"kind": "event", "seq": seq, "time": "2026-01-01T00:00:00+00:00", "actor": actor, "action": "update",
            "unit_ids": [unit_id], "user_id": "alice", "agent_id": None, "session_id": None,
            "reason": f"restored {seq}", "details": {}}


def _ok(response: httpx.Response) -> Any:
    response.raise_for_status()  # the set-up must have happened for the counts to mean anything
    return response.json() if response.content else None


def _taken_ids(c: dict[str, httpx.Client]) -> dict[str, str]:
    """Ids that are not alice's to import: live and deleted ones of bob's, one only carol's log names,
    one of alice's other agent."""
    bob, root, bot = c["bob"], c["root"], c["alice-bot"]
    live = _ok(bob.post("/v1/units", json={"text": "bob's live unit"}))["id"]
    deleted = _ok(bob.post("/v1/units", json={"text": "bob's plan", "session_id": "bob-s1"}))["id"]
    _ok(bob.request("DELETE", f"/v1/units/{deleted}", params={"reason": "bob's private reason"}))
    carol = _ok(root.post("/v1/units", json={"text": "carol's unit", "user_id": "carol"}))["id"]
    _ok(root.post("/v1/forget", json={"user_id": "carol"}))
    agent = _ok(bot.post("/v1/units", json={"text": "the bot's unit"}))["id"]
    _ok(bot.request("DELETE", f"/v1/units/{agent}"))
    return {"deleted by bob": deleted, "live, bob's": live, "only in carol's log": carol,
            "another agent's (deleted)": agent}


def imports(port: int, keys: dict[str, str]) -> dict[str, Any]:
    """Alice's imports of ids other scopes hold or held, against a live server."""
    base = f"http://127.0.0.1:{port}"
    c = {name: httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60)
         for name, key in keys.items()}
    try:
        bob, alice, root = c["bob"], c["alice"], c["root"]
        taken = _taken_ids(c)
        live, deleted = taken["live, bob's"], taken["deleted by bob"]
        before = {uid: bob.get(f"/v1/units/{uid}/history").json() for uid in (live, deleted)}
        answers: dict[str, tuple[int, bytes]] = {}
        takeovers = 0
        for name, uid in taken.items():
            r = alice.post("/v1/import", content=_dump(_unit(uid, "alice")), headers=NDJSON)
            answers[name] = (r.status_code, r.content.replace(uid.encode(), b"<id>"))
            takeovers += r.status_code < 300 and r.json().get("stored", 0) > 0
            takeovers += alice.get(f"/v1/units/{uid}").status_code != 404
        free = "f" * 24
        r = alice.post("/v1/import", content=_dump(_unit(free, "alice", modality="smell")), headers=NDJSON)
        free_answer = (r.status_code, r.content.replace(free.encode(), b"<id>"))
        crossing = sum(alice.get(f"/v1/units/{uid}/history").status_code != 404 for uid in (live, deleted))
        crossing += sum(bob.get(f"/v1/units/{uid}/history").json() != before[uid] for uid in (live, deleted))
        log = root.get("/v1/log", params={"limit": 1000}).json()["events"]
        crossing += sum(1 for e in log if {live, deleted} & set(e["unit_ids"]) and e["user_id"] != "bob")
        distinct = set(answers.values())
        own = _ok(alice.post("/v1/units", json={"text": "alice's unit with a past"}))["id"]
        claimed = ["key:root", "key:bob", "local:root", "key:nobody", "key:alice", "key:alice-bot"]
        _ok(c["alice-admin"].post("/v1/import", content=_dump(*[_event(own, a, i) for i, a in enumerate(claimed, 1)]),
                                  headers=NDJSON))
        history = alice.get(f"/v1/units/{own}/history").json()["events"]
        own_actors = {f"key:{name}" for name in keys if name.startswith("alice")}
        restored = [e for e in history if (e.get("reason") or "").startswith("restored")]
        foreign = sum(e["actor"] not in own_actors for e in restored)
        return {
            "taken_ids_tried": len(taken), "takeovers": takeovers, "history_events_crossing_scopes": crossing,
            "refusals": {name: {"status": s, "body": b.decode()} for name, (s, b) in answers.items()},
            "distinguishable_refusals": len(distinct) - 1,
            "free_id_refused_for_another_reason": {"status": free_answer[0], "body": free_answer[1].decode()},
            "free_id_same_status_and_class": free_answer[0] == next(iter(distinct))[0] and (
                json.loads(free_answer[1])["error"] == json.loads(next(iter(distinct))[1])["error"]),
            "claimed_actors": len(claimed), "events_imported": len(restored),
            "foreign_actors_kept": foreign, "log_events_read": len(log),
        }
    finally:
        for client in c.values():
            client.close()


@contextmanager
def _backend(name: str, folder: Path) -> Iterator[tuple[Any, list[str]]]:
    """``(open a Memory, the serve arguments)`` for a fresh store of backend ``name``."""
    if name == "sqlite":
        yield (lambda: Memory(folder / "store", embedder="fake")), ["--store", str(folder / "store")]
        return
    with database_server("pgserver") as databases:
        assert databases is not None
        url = databases.fresh()
        yield (lambda: Memory(url=url, embedder="fake")), ["--url", url]


def probe(name: str, n_collisions: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix=f"omnimem-scope-probe-{name}-"))
    try:
        with _backend(name, folder) as (opened, target):
            with opened() as mem:
                out: dict[str, Any] = {"langgraph_spellings": spellings(mem)}
                out["langgraph_collisions"] = collisions(mem, n_collisions)
                out["unscoped_retriever"] = unscoped_retriever(mem)
            keys = {key: create_key(target, name=key, **spec) for key, spec in KEYS.items()}
            with serving(target, "--rate-limit", "0") as port:
                out["http_import"] = imports(port, keys)
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def totals(backends: dict[str, dict[str, Any]]) -> dict[str, int]:
    """The figures with a target of 0, summed over the backends."""
    def total(part: str, field: str) -> int:
        return sum(int(b[part][field]) for b in backends.values())
    return {"cross_scope_writes_or_reads": total("langgraph_spellings", "cross_scope"),
            "invisible_puts": total("langgraph_collisions", "invisible_puts"),
            "noop_deletes": total("langgraph_collisions", "noop_deletes"),
            "unscoped_searches_ran": total("unscoped_retriever", "searches_ran"),
            "import_takeovers": total("http_import", "takeovers"),
            "history_events_crossing_scopes": total("http_import", "history_events_crossing_scopes"),
            "distinguishable_refusals": total("http_import", "distinguishable_refusals"),
            "foreign_actors_kept": total("http_import", "foreign_actors_kept")}


def run(backends: Sequence[str], n_collisions: int = 60) -> dict[str, Any]:
    results = {name: probe(name, n_collisions) for name in backends}
    return {"benchmark": "scope-probe", "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "omnimem": __version__, "python": platform.python_version(), "cpus": os.cpu_count(),
            "config": {"backends": list(backends), "collisions": n_collisions, "embedder": "fake",
                       "variants": list(SPELLINGS)},
            "backends": results, "totals": totals(results)}


def table(data: dict[str, Any]) -> list[str]:
    """The per-backend counts as a markdown table."""
    names = list(data["backends"])
    rows = [("LangGraph puts under a variant of a victim's label: refused / accepted (each its own user)",
             lambda b: f"{sum(b['langgraph_spellings']['refused'].values())} / {b['langgraph_spellings']['accepted']}"),
            ("accepted puts reaching the victim's search, retriever, export or forget (target 0)",
             lambda b: b["langgraph_spellings"]["cross_scope"]),
            (f"{data['config']['collisions']} colliding puts: ann's invisible puts / no-op deletes (target 0)",
             lambda b: f"{b['langgraph_collisions']['invisible_puts']} / {b['langgraph_collisions']['noop_deletes']}"),
            ("`OmnimemRetriever(memory=mem)` unscoped searches that ran (target 0)",
             lambda b: b["unscoped_retriever"]["searches_ran"]),
            ("import over HTTP: ids taken over / history events crossing scopes (target 0)",
             lambda b: f"{b['http_import']['takeovers']} / {b['http_import']['history_events_crossing_scopes']}"),
            ("import refusals distinguishable from each other (target 0)",
             lambda b: b["http_import"]["distinguishable_refusals"]),
            ("user-scoped admin import: foreign actors kept (target 0)",
             lambda b: f"{b['http_import']['foreign_actors_kept']} of {b['http_import']['claimed_actors']}")]
    lines = ["| count | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    return lines + [f"| {label} | " + " | ".join(str(cell(data["backends"][n])) for n in names) + " |"
                    for label, cell in rows]


def _load(folder: Path, name: str) -> dict[str, Any] | None:
    path = folder / name
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _lone_when(stall: dict[str, Any]) -> str:
    """A run that reports the adds right after the dialogues apart (``after``) has its lone adds before them only;
    an older run's lone adds were before and after each dialogue together."""
    return " before the dialogues" if "after" in stall else ""


def page(folder: Path) -> str:
    """``SECURITY.md``: issue #35's figures, each with its target and command, from the result files."""
    scope, fuzz = _load(folder, "scope-probe.json"), _load(folder, "time-fuzz.json")
    race = _load(folder, "ingest-race.json")
    lines = ["# Security and isolation: Hardening III", "",
             "Written by `python -m benchmarks scope-probe` (benchmarks/reliability/scope_probe.py) from the result "
             "files beside it; rerun it after any of the commands below.", "",
             "| issue #35 item | figure | target | command |", "|---|---|---|---|"]
    if scope is not None:
        t = scope["totals"]
        where = " + ".join(scope["backends"])
        lines += [
            f"| 1. a LangGraph label's spelling reaches another user ({where}) | "
            f"{t['cross_scope_writes_or_reads']} cross-scope writes or reads | 0 | "
            "`python -m benchmarks scope-probe` |",
            f"| 2. a put invisible to its get, a delete that deletes nothing ({where}) | "
            f"{t['invisible_puts']} invisible puts, {t['noop_deletes']} no-op deletes | 0 | "
            "`python -m benchmarks scope-probe` |",
            f"| 3. import takes over another scope's unit id (HTTP, {where}) | {t['import_takeovers']} takeovers, "
            f"{t['history_events_crossing_scopes']} history events crossing scopes, "
            f"{t['distinguishable_refusals']} distinguishable refusals | 0 | `python -m benchmarks scope-probe` |"]
    if fuzz is not None:
        lines.append(f"| 4-5. relative time near year 1 or 9999: 5xx, broken kept-alive connections "
                     f"({' + '.join(fuzz['backends'])}, {fuzz['combinations']} combinations each) | "
                     f"{fuzz['server_errors']} 5xx, {fuzz['connection_failures']} broken connections | 0 | "
                     "`python -m benchmarks time-fuzz` |")
    stalls = [(p.name, json.loads(p.read_text(encoding="utf-8"))) for p in sorted(folder.glob("dialogue-stall*.json"))]
    for name, stall in stalls:  # dialogue-stall.json, and any other run kept beside it (dialogue-stall-run1.json)
        c = stall["config"]
        lines.append(f"| 6. another user's add p95 during a {c['turns']:,}-turn dialogue ({c['embedder']} embedder, "
                     f"{stall['when']}, [{name}]({name})) | {stall['p95_ratio']}x its lone p95{_lone_when(stall)} (during p95 "
                     f"{stall['during']['p95_ms']} ms, lone p95 {stall['lone']['p95_ms']} ms, lone p50 "
                     f"{stall['lone']['p50_ms']} ms), {stall['lost']} adds lost | <= {stall['target_ratio']}x | "
                     "`python -m benchmarks dialogue-stall` |")
    if race is not None:
        lines.append(f"| 7. processes ingesting one file into one store ({len(race['runs'])} runs, 2-4 processes, "
                     f"CLI and Python API) | {race['duplicates']} duplicated turns | 0 | "
                     "`python -m benchmarks ingest-race` |")
    loaded = [name for name, stall in stalls if stall["lone"]["p95_ms"] > 3 * stall["lone"]["p50_ms"]]
    if scope is not None:
        t = scope["totals"]
        lines.append(f"| 8. unscoped `OmnimemRetriever`; a user-scoped admin key importing store-wide actors | "
                     f"{t['unscoped_searches_ran']} unscoped searches, {t['foreign_actors_kept']} foreign actors kept "
                     "| 0 | `python -m benchmarks scope-probe` |")
    if loaded:
        lines += ["", f"In {', '.join(loaded)} the lone adds' p95 is over 3x their p50 (a few slow lone adds: "
                  "other load on the machine, or work the server does right after a dialogue), so a ratio to it "
                  "understates the stall; compare the during p95 with the lone p50 too."]
    if scope is not None:
        lines += ["", f"## Scope probe ({scope['when']}, {scope['cpus']} CPUs, omnimem {scope['omnimem']}, "
                  f"fake embedder)", "", *table(scope), "",
                  f"Label variants tried ({len(scope['config']['variants'])}, each as `(label,)` and "
                  f"`(label, \"notes\")`): " + ", ".join(scope["config"]["variants"]) + ". A refused put is an "
                  "`" + "`, `".join(sorted({k for b in scope["backends"].values()
                                            for k in b["langgraph_spellings"]["refused"]})) + "`; the others are "
                  "users of their own. The refusals compared for the existence oracle: an id bob deleted, a live "
                  "id of bob's, an id only a forgotten user's audit log names, an id of alice's other agent."]
    lines += ["", "Links: [RELIABILITY.md](RELIABILITY.md) (the writers' figures in full), "
              "[CURRENT.md](CURRENT.md).", ""]
    return "\n".join(lines)


START = "<!-- security: written by benchmarks/reliability/scope_probe.py -->"
END = "<!-- /security -->"


# SECURITY.md's sections below this line are written by other commands (hostile-model, ...): kept as they are
OTHERS = "<!-- sections below are written by their own commands; scope-probe keeps them -->"


def write_page(folder: Path) -> Path:
    """Write ``SECURITY.md`` and its marked pointer section at the end of ``RELIABILITY.md``."""
    path = folder / "SECURITY.md"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    kept = text.split(OTHERS, 1)[1] if OTHERS in text else "\n"
    path.write_text(page(folder).rstrip("\n") + "\n\n" + OTHERS + kept, encoding="utf-8")
    scope = _load(folder, "scope-probe.json")
    zeros = "" if scope is None else (
        " Scope probe totals over " + " and ".join(scope["backends"]) + " (target 0 each): "
        + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in scope["totals"].items()) + ".")
    section = "\n".join([START, "## Isolation: Hardening III", "",
                          "Issue #35's figures (scopes, import ids, time fuzz, writers), each with its target and "
                          f"command, are in [SECURITY.md](SECURITY.md).{zeros}", "",
                          "```bash", "python -m benchmarks scope-probe", "```", END]) + "\n"
    reliability = folder / "RELIABILITY.md"
    text = reliability.read_text(encoding="utf-8") if reliability.exists() else "# Reliability\n"
    if START in text and END in text:
        before, rest = text.split(START, 1)
        after = rest.split(END, 1)[1].lstrip("\n")
        text = before.rstrip("\n") + "\n\n" + section + ("\n" + after if after else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    reliability.write_text(text, encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks scope-probe", description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="sqlite,postgresql", help="comma-separated: sqlite, postgresql")
    parser.add_argument("--collisions", type=int, default=60, help="colliding LangGraph puts (51+ was the bug)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--page-only", action="store_true", help="only rewrite SECURITY.md from the JSON files")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.page_only:
        data = run([b.strip() for b in args.backends.split(",") if b.strip()], args.collisions)
        (args.out / "scope-probe.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n",
                                                   encoding="utf-8")
        print(json.dumps(data["totals"], indent=2))
    print(f"wrote {write_page(args.out)}")


if __name__ == "__main__":
    main()
