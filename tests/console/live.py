"""A live console for the browser tests and the README screenshots.

``build_store`` fills a store from the shipped sample conversation, a few
generated PNGs, a short generated video (its kept frames become linked image
units) and one unit whose text is an XSS attempt; the server is
``tests.serving.LiveServer``: ``create_app(memory)``, the app ``omnimem serve``
runs, on a free loopback port.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnimem import Memory
from omnimem.contract.loaders import load_jsonl

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample_conversation.jsonl"
USER = "alex-and-sam"
XSS = "<script>alert(1)</script><img src=x onerror=alert(2)>"
CHROMIUM = "/usr/bin/chromium"


def png(seed: int, label: str, size: tuple[int, int] = (240, 160)) -> bytes:
    """A small deterministic picture with ``label`` drawn on it."""
    from PIL import Image, ImageDraw

    colours = [(66, 120, 200), (220, 140, 60), (90, 170, 110), (180, 80, 150)]
    image = Image.new("RGB", size, colours[seed % len(colours)])
    draw = ImageDraw.Draw(image)
    for i in range(6):
        x = (seed * 37 + i * 41) % size[0]
        draw.ellipse((x, 20 + i * 18, x + 40, 60 + i * 18), fill=colours[(seed + i + 1) % len(colours)])
    draw.text((10, size[1] - 24), label, fill=(255, 255, 255))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


@dataclass
class Seeded:
    """Ids the tests look up."""

    xss_id: str
    edit_id: str
    delete_id: str
    image_ids: list[str]
    video_id: str | None


def build_store(memory: Memory, workdir: Path, *, video: bool = True) -> Seeded:
    """Everything the console shows: dialogue, images, a video, a correction target and hostile text."""
    for dialogue in load_jsonl(SAMPLE):
        memory.add_dialogue(dialogue.turns, user_id=dialogue.user_id, session_id=dialogue.session_id)
    images = [
        memory.add_image(png(i, name), caption, time=f"2024-03-{10 + i:02d}T12:00:00+00:00",
                         user_id=USER, session_id="photos").id
        for i, (name, caption) in enumerate([
            ("bowl.png", "Sam's lopsided blue bowl from the pottery class"),
            ("lighthouse.png", "Alex's watercolour of the lighthouse at Point Reyes"),
            ("garden.png", "The community garden plot in spring"),
        ])
    ]
    edit = memory.add("My favourite tea is jasmine green tea.", speaker="Sam", time="2024-03-20T09:00:00+00:00",
                      user_id=USER, session_id="preferences").id
    doomed = memory.add("Note to self: the old wifi password was hunter2.", speaker="Sam",
                        time="2024-03-20T10:00:00+00:00", user_id=USER, session_id="preferences").id
    memory.add("I keep my passport in the blue drawer.", speaker="Alex", time="2024-03-21T09:00:00+00:00",
               user_id=USER, session_id="to-forget")
    memory.add("The spare key is under the plant pot.", speaker="Alex", time="2024-03-21T09:05:00+00:00",
               user_id=USER, session_id="to-forget")
    xss = memory.add(XSS, speaker="<b>mallory</b>", time="2024-03-22T10:00:00+00:00",
                     user_id=USER, session_id="hostile").id
    video_id = None
    if video:
        from tests.media.generate import make_video

        clip = make_video(workdir / "walk.mp4", scene_s=2.0, fps=5)
        video_id = memory.add_video(clip, time="2024-03-23T16:00:00+00:00", user_id=USER, session_id="videos").event_id
    return Seeded(xss, edit, doomed, images, video_id)


@dataclass
class Console:
    """A running console: its URL, keys per role, the seeded ids and the Memory behind it."""

    url: str
    keys: dict[str, str]
    seeded: Seeded
    memory: Memory


def login(page: Any, console: Console, role: str) -> None:
    """Sign in through the login form with the key of ``role``, landing on the timeline."""
    page.goto(console.url + "/")
    page.get_by_label("API key").fill(console.keys[role])
    page.get_by_role("button", name="Sign in").click()
    page.locator("ol.timeline").wait_for()


def routed(page: Any) -> int:
    """How many views the console has finished rendering (``wait_routed`` waits for the next)."""
    return int(page.evaluate("() => Number(document.body.dataset.routed || 0)"))


def wait_routed(page: Any, before: int) -> None:
    page.wait_for_function("n => Number(document.body.dataset.routed || 0) > n", arg=before)


def show(page: Any, console: Console, route: str) -> None:
    """Open ``#/route`` in the signed-in console and wait until that view has rendered."""
    target = f"{console.url}/#/{route}"
    if page.url == target:  # the same hash fires no hashchange: load the page afresh
        page.reload()
        wait_routed(page, 0)
        return
    before = routed(page)
    page.goto(target)
    wait_routed(page, before)


def go(page: Any, view: str) -> None:
    """Click the navigation link ``view`` (e.g. "Search") and wait until the view has rendered."""
    before = routed(page)
    page.locator("#nav").get_by_role("link", name=view).click()
    wait_routed(page, before)


def launch_chromium(playwright: Any) -> Any:
    """Debian's Chromium, headless, offline (never ``playwright install``)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
