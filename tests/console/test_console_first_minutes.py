"""A new user's first minutes in the console: where a key comes from, and why a write key cannot forget."""

from __future__ import annotations

from typing import Any

from tests.console.live import Console, go, login


def test_the_sign_in_page_says_how_to_create_a_key(page: Any, console: Console) -> None:
    page.goto(console.url + "/")
    page.get_by_label("API key").wait_for()
    source = page.locator("#key-source").inner_text()
    assert source.startswith("No key yet? On the server's machine run omnimem keys create --name me --role admin "
                             "--store DIR with the store folder the server serves")
    assert "prints the key once" in source


def test_a_write_key_sees_that_forgetting_needs_an_admin_key(page: Any, console: Console) -> None:
    login(page, console, "write")
    go(page, "Governance")
    forget = page.get_by_role("region", name="Forget")
    assert forget.locator("#forget-needs-admin").inner_text().startswith(
        "Forgetting needs an admin key: this key can read and write but not forget.")
    assert "omnimem forget" in forget.inner_text()
    assert page.locator("form.forget").count() == 0  # nothing to press that would only answer 403
    assert page.get_by_role("button", name="Preview what will go").count() == 0


def test_a_read_key_is_told_the_same(page: Any, console: Console) -> None:
    login(page, console, "read")
    go(page, "Governance")
    assert page.locator("#forget-needs-admin").inner_text().startswith(
        "Forgetting needs an admin key: this key can read but not forget.")


def test_an_admin_key_gets_the_forget_form_and_no_note(page: Any, console: Console) -> None:
    login(page, console, "admin")
    go(page, "Governance")
    assert page.locator("form.forget").count() == 1 and page.locator("#forget-needs-admin").count() == 0
