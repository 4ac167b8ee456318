"""The web console end to end: real headless Chromium against a live server over a seeded store."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from omnimem import Memory
from omnimem.errors import NotFoundError
from tests.console.live import USER, XSS, Console, go, login, routed, show, wait_routed
from tests.serving import LiveServer


def test_login_keeps_the_key_out_of_the_page(page: Any, console: Console) -> None:
    login(page, console, "write")
    key = console.keys["write"]
    assert key not in page.url
    assert key not in page.content()
    stored = page.evaluate("() => JSON.stringify([{...localStorage}, {...sessionStorage}])")
    assert key not in stored
    assert "omnimem_session" not in page.evaluate("() => document.cookie")  # HttpOnly: scripts cannot read it
    assert page.locator("#who").inner_text().lower().startswith("write")


def test_a_wrong_key_is_refused_on_the_login_screen(page: Any, console: Console) -> None:
    page.goto(console.url + "/")
    page.get_by_label("API key").fill("omk_0000000000000000_" + "x" * 43)
    page.get_by_role("button", name="Sign in").click()
    assert "AuthError" in page.get_by_role("alert").inner_text()
    assert page.locator("#nav").is_hidden() and page.locator("#scope").is_hidden()


def test_timeline_shows_memories_in_event_order_with_media(page: Any, console: Console) -> None:
    login(page, console, "write")
    cards = page.locator("ol.timeline > li.unit")
    assert cards.count() >= 20
    stamps = [t for t in cards.locator(".meta time").evaluate_all("els => els.map(e => e.getAttribute('datetime'))")]
    assert stamps == sorted(stamps), "the timeline is ordered by event time"
    first = cards.first.locator(".meta time")
    assert first.get_attribute("title").startswith("recorded ")  # record time on hover
    # image thumbnails come from the cold tier through the session cookie
    thumb = page.locator(f'li.unit[data-unit-id="{console.seeded.image_ids[0]}"] img.thumb')
    thumb.scroll_into_view_if_needed()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=thumb.element_handle())
    # the video shows its kept frames inside its card
    video = page.locator(f'li.unit[data-unit-id="{console.seeded.video_id}"]')
    assert video.locator("ul.frames img").count() >= 1


def test_timeline_shows_a_sessions_turns_in_the_order_they_were_said(page: Any, console: Console) -> None:
    """Every turn of the sample's first session has the session's time: only the order given tells them apart."""
    from omnimem.contract.loaders import load_jsonl
    from tests.console.live import SAMPLE

    said = [t["text"] for d in load_jsonl(SAMPLE) if d.session_id == "session-1" for t in d.turns]
    assert len(said) > 5
    login(page, console, "read")
    show(page, console, "timeline?session_id=session-1")
    shown = page.locator("ol.timeline > li.unit p.summary").all_inner_texts()
    assert shown == said


def test_timeline_filters_by_time_range(page: Any, console: Console) -> None:
    login(page, console, "read")
    show(page, console, "timeline?since=2024-03-10T00:00&until=2024-03-13T00:00")
    assert page.get_by_label("From").input_value() == "2024-03-10T00:00"
    ids = page.locator("ol.timeline > li.unit").evaluate_all("els => els.map(e => e.dataset.unitId)")
    assert ids == console.seeded.image_ids


def test_a_video_unit_page_shows_its_kept_frames(page: Any, console: Console) -> None:
    login(page, console, "read")
    show(page, console, f"unit/{console.seeded.video_id}")
    frames = page.locator(".video-parts ul.frames img")
    assert frames.count() == 3  # three generated scenes, one kept frame each
    frames.first.click()
    page.locator("img.raw-image").wait_for()
    assert "parent event" in page.locator("dl.facts").inner_text()


def test_timeline_filters_by_modality_speaker_and_session(page: Any, console: Console) -> None:
    login(page, console, "write")
    page.get_by_label("Modality").select_option("image")
    before = routed(page)
    page.get_by_role("button", name="Filter").click()
    wait_routed(page, before)
    assert "modality=image" in page.url
    badges = page.locator("ol.timeline > li.unit .meta > .badge").all_inner_texts()  # not the provenance badges
    assert badges and set(badges) == {"image"}

    show(page, console, "timeline?speaker=Sam&session_id=session-1")
    page.locator("ol.timeline").wait_for()
    speakers = page.locator("ol.timeline .speaker").all_inner_texts()
    sessions = page.locator("ol.timeline .session").all_inner_texts()
    assert speakers and set(speakers) == {"Sam"}
    assert set(sessions) == {"session-1"}


def test_search_explains_the_context_and_opens_a_hit(page: Any, console: Console) -> None:
    login(page, console, "read")
    go(page, "Search")
    page.get_by_label("Query").fill("pottery class teacher")
    page.get_by_label("Token budget").fill("300")
    page.get_by_role("button", name="Search", exact=True).click()
    rows = page.locator("table.hits tbody tr")
    rows.first.wait_for()
    first = rows.first.locator("td")
    assert re.fullmatch(r"\d\.\d{5}|–", first.nth(1).inner_text())  # fused score
    assert re.fullmatch(r"\d\.\d{3}", first.nth(2).inner_text())  # similarity
    assert set(first.nth(3).inner_text().split()) <= {"dense", "text", "graph", "neighbour", "clip"}
    assert first.nth(3).inner_text().split()
    assert re.fullmatch(r"L[123]", first.nth(4).inner_text())  # pyramid level
    assert int(first.nth(5).inner_text()) > 0  # tokens
    caption = page.locator("figure.budget figcaption").inner_text()
    used, budget = map(int, re.match(r"(\d+) / (\d+) tokens", caption).groups())
    assert budget == 300 and 0 < used <= 300
    assert page.locator(".budget-bar .seg").count() == rows.count()
    rendered = page.locator("pre.rendered").inner_text()
    assert "pottery" in rendered.lower()
    summary = rows.first.locator("td a").inner_text()
    rows.first.locator("td a").click()
    page.locator("h1.unit-title").wait_for()
    assert page.locator("h1.unit-title").inner_text() == summary
    assert page.locator("pre.full-text").is_visible()
    assert page.locator("table.audit tbody tr").count() >= 1  # the add is in the unit's audit history


def test_update_a_unit_with_confirmation(page: Any, console: Console) -> None:
    login(page, console, "write")
    show(page, console, f"unit/{console.seeded.edit_id}")
    page.get_by_label("Text").fill("My favourite tea is Earl Grey.")
    page.get_by_label("Reason").first.fill("user corrected it")
    page.get_by_role("button", name="Save as new version").click()
    dialog = page.locator("dialog.confirm")
    dialog.get_by_role("button", name="Cancel").click()  # cancelling changes nothing
    assert console.memory.get(console.seeded.edit_id, user_id=USER).superseded_by is None
    page.get_by_role("button", name="Save as new version").click()
    page.locator("dialog.confirm").get_by_role("button", name="Save").click()
    page.wait_for_url(lambda url: console.seeded.edit_id not in url)
    page.locator("h1.unit-title", has_text="Earl Grey").wait_for()
    versions = page.locator("ol.versions li")
    assert versions.count() == 2 and versions.first.inner_text() == console.seeded.edit_id
    old = console.memory.get(console.seeded.edit_id, user_id=USER)
    assert old.superseded_by is not None and old.superseded_by in page.url
    events = console.memory.history(old.superseded_by, user_id=USER)
    assert any(e.action == "update" and e.actor == "key:console-writer" and e.reason == "user corrected it"
               for e in events)


def test_delete_a_unit_with_confirmation(page: Any, console: Console) -> None:
    login(page, console, "write")
    show(page, console, f"unit/{console.seeded.delete_id}")
    page.get_by_label("Reason").last.fill("secret written down by mistake")
    page.get_by_role("button", name="Delete…").click()
    page.locator("dialog.confirm").get_by_role("button", name="Delete").click()
    page.wait_for_url(re.compile("#/timeline$"))
    page.locator("ol.timeline").wait_for()
    assert page.locator(f'li.unit[data-unit-id="{console.seeded.delete_id}"]').count() == 0
    assert "hunter2" not in page.locator("main").inner_text()
    with pytest.raises(NotFoundError):
        console.memory.get(console.seeded.delete_id, user_id=USER)


def test_forget_a_session_with_preview_and_see_it_gone(page: Any, console: Console) -> None:
    login(page, console, "admin")
    show(page, console, "timeline?session_id=to-forget")
    assert page.locator("ol.timeline > li.unit").count() == 2
    go(page, "Governance")
    page.get_by_label("User", exact=True).last.fill(USER)
    page.get_by_label("Session").fill("to-forget")
    page.get_by_label("Reason").fill("deletion request #7")
    page.get_by_role("button", name="Preview what will go").click()
    page.locator("ul.preview-units li").nth(1).wait_for()
    assert page.locator("ul.preview-units li").count() == 2
    assert console.memory.units(user_id=USER, session_id="to-forget")  # a preview removes nothing
    page.get_by_role("button", name="Forget 2 memories…").click()
    page.locator("dialog.confirm").get_by_role("button", name="Forget").click()
    page.locator("form.forget .notice.ok", has_text="Forgot 2 memories.").wait_for()
    assert console.memory.units(user_id=USER, session_id="to-forget") == []
    show(page, console, "timeline?session_id=to-forget")
    page.get_by_text("No memories match.").wait_for()
    go(page, "Governance")
    assert "deletion request #7" in page.locator("table.audit").inner_text()


def test_a_read_only_key_sees_no_write_controls(page: Any, console: Console) -> None:
    login(page, console, "read")
    assert page.locator("#who").inner_text().lower().startswith("read")
    show(page, console, f"unit/{console.seeded.image_ids[1]}")
    page.locator("h1.unit-title").wait_for()
    assert page.locator("form.edit, section.delete").count() == 0
    assert page.get_by_role("button", name=re.compile("Save|Delete")).count() == 0
    go(page, "Governance")
    page.locator("table.audit, p.empty").first.wait_for()
    assert page.locator("form.forget").count() == 0
    with page.expect_download() as download:  # reading is allowed: the export downloads with the cookie
        page.get_by_role("link", name=re.compile("Download export")).click()
    lines = download.value.path().read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) >= 20 and any("pottery class" in line for line in lines)


def test_untrusted_text_renders_as_text(page: Any, console: Console) -> None:
    login(page, console, "write")
    card = page.locator(f'li.unit[data-unit-id="{console.seeded.xss_id}"]')
    assert card.locator(".summary").inner_text() == XSS
    assert card.locator(".speaker").inner_text() == "<b>mallory</b>"
    assert card.locator("script, img[src='x'], b").count() == 0
    show(page, console, f"unit/{console.seeded.xss_id}")
    assert page.locator("h1.unit-title").inner_text() == XSS
    assert page.locator("pre.full-text").inner_text() == XSS
    go(page, "Search")
    page.get_by_label("Query").fill("script alert onerror")
    page.get_by_role("button", name="Search", exact=True).click()
    page.locator("pre.rendered").wait_for()
    assert "<script>alert(1)</script>" in page.locator("pre.rendered").inner_text()
    assert page.locator("main script, main img[src='x']").count() == 0
    page.wait_for_timeout(300)  # an onerror handler would have fired by now
    assert page.dialogs == []


def test_csp_header_and_inline_script_refused(page: Any, console: Console) -> None:
    response = page.goto(console.url + "/")
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"
    page.locator("#api-key").wait_for()
    violations = page.evaluate("""() => new Promise(resolve => {
        const seen = [];
        document.addEventListener('securitypolicyviolation', e => seen.push(e.violatedDirective));
        const s = document.createElement('script');
        s.textContent = 'window.__inline_ran = true';
        document.body.append(s);
        setTimeout(() => resolve({seen, ran: window.__inline_ran === true}), 200);
    })""")
    assert violations["ran"] is False
    assert any(v.startswith("script-src") for v in violations["seen"])


def test_state_change_without_csrf_header_is_refused(page: Any, console: Console) -> None:
    login(page, console, "write")
    unit_id = console.seeded.image_ids[2]
    status = page.evaluate("""async (id) => {
        const r = await fetch('/v1/units/' + id, {method: 'PATCH', headers: {'Content-Type': 'application/json'},
                                                  body: JSON.stringify({text: 'hijacked'})});
        return [r.status, (await r.json()).error];
    }""", unit_id)
    assert status == [403, "CsrfError"]
    assert console.memory.get(unit_id, user_id=USER).superseded_by is None


def test_graph_expands_a_node_and_opens_its_units(page: Any, console: Console) -> None:
    login(page, console, "read")
    show(page, console, "graph/Priya")
    page.locator("svg.graph").wait_for()
    before = page.locator("svg.graph g.node").count()
    assert before >= 2  # Priya and what she relates to
    page.locator(".graph-panel h2", has_text="Priya").wait_for()
    unit = page.locator(".graph-panel ul.unit-links a").first
    unit_id = unit.inner_text()
    other = page.locator("svg.graph g.node:not(.expanded)").first
    other.focus()
    page.keyboard.press("Enter")
    page.get_by_role("button", name="Expand", exact=True).click()
    page.get_by_role("button", name="Expanded", exact=True).wait_for()
    assert page.locator("svg.graph g.node").count() >= before
    edge = page.locator("svg.graph g.edge").first  # an edge opens the units behind it
    edge.focus()
    page.keyboard.press("Enter")
    page.locator(".graph-panel h3", has_text="Units").wait_for()
    assert " → " in page.locator(".graph-panel h2").inner_text()
    assert page.locator(".graph-panel ul.unit-links a").count() >= 1
    show(page, console, f"unit/{unit_id}")
    page.locator("h1.unit-title").wait_for()


def test_logout_ends_the_session(page: Any, console: Console) -> None:
    login(page, console, "read")
    page.get_by_role("button", name="Log out").click()
    page.get_by_label("API key").wait_for()
    status = page.evaluate("async () => (await fetch('/v1/session')).status")
    assert status == 401
    page.reload()
    page.get_by_label("API key").wait_for()  # no session survives a reload


def test_ask_on_a_server_with_an_llm_and_no_auth(browser: Any, tmp_path: Any) -> None:
    """``omnimem serve --no-auth`` with an LLM: no login screen, and Ask shows the model's answer."""
    from omnimem.llm.fake import FakeLLM

    with Memory(tmp_path / "llm-store", embedder="fake", llm=FakeLLM("Alex painted the lighthouse.")) as memory:
        memory.add("I did a watercolour of the lighthouse at sunset.", speaker="Alex", user_id=USER)
        server = LiveServer(memory, auth=False)
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(server.url + "/#/search")
            page.get_by_label("Query").fill("What did Alex paint?")
            page.get_by_role("button", name="Ask").click()
            assert page.locator(".answer-text").inner_text() == "Alex painted the lighthouse."
            assert "1 memories given as evidence" in page.locator("section.answer").inner_text()
            assert page.locator("#logout").is_hidden()  # nothing to log out of
        finally:
            context.close()
            server.stop()


def test_theme_follows_the_system_and_the_toggle(browser: Any, console: Console) -> None:
    context = browser.new_context(color_scheme="dark")
    page = context.new_page()
    try:
        page.goto(console.url + "/")
        page.locator("#api-key").wait_for()
        dark_bg = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        page.get_by_role("button", name="Light theme").click()
        assert page.evaluate("() => document.documentElement.dataset.theme") == "light"
        light_bg = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        assert dark_bg != light_bg
    finally:
        context.close()


def test_every_control_is_labelled_and_reachable_by_keyboard(page: Any, console: Console) -> None:
    login(page, console, "admin")
    for route in ("timeline", "search", f"unit/{console.seeded.image_ids[0]}", "governance"):
        show(page, console, route)
        page.locator("main h1").wait_for()
        unlabelled = page.evaluate("""() => [...document.querySelectorAll('input, select, textarea, button')]
            .filter(el => !el.closest('[hidden]'))
            .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.textContent.trim())
            .map(el => el.outerHTML)""")
        assert unlabelled == [], route
    show(page, console, "timeline")
    page.reload()
    page.locator("ol.timeline").wait_for()
    page.keyboard.press("Tab")  # the skip link comes first
    assert page.evaluate("() => document.activeElement.textContent") == "Skip to content"


def test_the_console_is_served_with_its_assets(console: Console) -> None:
    with httpx.Client(base_url=console.url) as client:
        index = client.get("/")
        assert index.status_code == 200 and 'src="/console/app.js"' in index.text
        script = client.get("/console/app.js")
        assert script.status_code == 200 and "javascript" in script.headers["content-type"]
        assert "script-src 'self'" in script.headers["content-security-policy"]
        assert client.get("/console/missing.js").status_code == 404
        raw = client.get(f"/v1/units/{console.seeded.image_ids[0]}/raw",
                         headers={"Authorization": f"Bearer {console.keys['read']}"})
        assert raw.status_code == 200 and raw.headers["content-type"] == "image/png"
        assert "sandbox" in raw.headers["content-security-policy"]  # opened directly, it can run nothing


@pytest.mark.parametrize("asset", ["app.js", "api.js", "dom.js", "timeline.js", "search.js", "unit.js", "graph.js",
                                   "governance.js", "media.js"])
def test_no_asset_parses_html_from_data(asset: str) -> None:
    """The console builds the DOM with createElement/textContent only (the XSS test checks the result)."""
    from omnimem.server.console import static_dir

    source = (static_dir() / asset).read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML =", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in source, f"{asset} uses {sink}"
