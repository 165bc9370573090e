"""The M3HF page in headless Chromium (Debian's, driven by Playwright): a person previews the parse of
their text, corrects it in the typed form and confirms it; Confirm waits for the checks of the specs
it sends, as they stand, and for no other."""

import json

import pytest

from rlkit.human.m3hf_source import ConfirmedSpecsParser
from rlkit.human.server import free_port, start_server_process
from rlkit.human.settings import ServeConfig
from rlkit.m3hf import RuleParser
from tests.browser_pages import log_in, screenshot, watch_errors
from tests.web_client import M3HF_TEXT, open_phase

pytestmark = [pytest.mark.browser, pytest.mark.server]
OPTIONS = "select => [...select.options].map(option => option.value)"
CONFIRM_ENABLED = "() => !document.getElementById('confirm').disabled"
SENT = "() => document.getElementById('m3hf-status').textContent.startsWith('sent')"
# every text the first spec's summary shows, in order (a check's answer sets it)
WATCH_SUMMARY = """() => {
  const summary = document.querySelector('#specs .summary');
  window.summaries = [];
  new MutationObserver(() => { if (summary.textContent) window.summaries.push(summary.textContent); })
    .observe(summary, {childList: true, characterData: true, subtree: true});
}"""


def preview(page, port: int) -> None:
    """Log in on the M3HF page, type the feedback text and open the parser's preview."""
    log_in(page, f"http://127.0.0.1:{port}/m3hf", "bob")
    page.wait_for_selector("#phase[data-ready]")
    page.wait_for_function("() => document.querySelector('#rollout img').naturalWidth > 0")
    page.fill("#feedback-text", M3HF_TEXT)
    page.click("#preview")
    page.wait_for_selector("#review:not(.hidden)")


def assert_confirmed(source, request, item: str, value: float) -> None:
    """The M3HF loop gets the text with the one spec the page confirmed: agent 0 holding ``item``."""
    assert [f.text for f in source.feedback(request)] == [M3HF_TEXT]
    [spec] = ConfirmedSpecsParser(source, RuleParser()).parse(M3HF_TEXT, request.scene)
    assert (spec.template, spec.agents) == ("holding", (0,))
    assert (spec.params.item, spec.params.value) == (item, value)


def wait_held(page, held: list, count: int) -> None:
    """Wait until ``count`` check requests are held (the route's handler runs on Playwright's
    events, which come in while a Playwright call waits, after the request's own event)."""
    for _ in range(1000):
        if len(held) >= count:
            return
        page.wait_for_timeout(20)
    raise AssertionError(f"{len(held)} check request(s) held after 20 s, {count} expected")


def test_the_m3hf_page_previews_a_parse_takes_a_typed_correction_and_commits_it(tmp_path, browser):
    source, request = open_phase(tmp_path)
    port = free_port()
    server = start_server_process(ServeConfig(run_dir=str(tmp_path), port=port))
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    errors = watch_errors(page)
    first, second = "#specs .spec >> nth=0", "#specs .spec >> nth=1"
    try:
        preview(page, port)
        assert page.locator(".agent-preview").all_inner_texts() == [
            "agent_0: agent 0: holding(item='tomato', value=1.0)",
            "agent_1: agent 1: action(action='stay', value=-1.0)",
        ]
        page.wait_for_function(CONFIRM_ENABLED)
        # typed: the item is picked from the scene's items, the value is bounded
        items = page.eval_on_selector(f"{first} >> [data-field=item]", OPTIONS)
        assert items == ["any", "tomato", "lettuce", "onion", "plate_1", "plate_2"]
        page.select_option(f"{first} >> [data-field=item]", "onion")
        page.fill(f"{first} >> [data-field=value]", "12")
        page.wait_for_function("() => document.getElementById('confirm').disabled")
        assert page.inner_text(f"{first} >> .problem") == "value: 12 is out of range (-10 ≤ x ≤ 10)"
        page.fill(f"{first} >> [data-field=value]", "2")
        page.wait_for_function("() => document.querySelectorAll('#specs .summary')[0].textContent"
                               " === \"agent 0: holding(item='onion', value=2.0)\"")
        assert not page.is_disabled("#confirm")
        shown = json.loads(page.input_value(f"{first} >> .json"))
        assert shown["params"] == {"item": "onion", "value": 2} and shown["agents"] == [0]

        # the JSON view, advanced: a name the scene lacks is refused and the form is left as it was
        page.click(f"{second} >> summary")
        page.fill(f"{second} >> .json", json.dumps({"template": "action", "agents": [1],
                                                    "params": {"action": "dance"}}))
        page.click(f"{second} >> .apply-json")
        page.wait_for_function("() => document.querySelectorAll('#specs .problem')[1].textContent !== ''")
        assert "unknown action 'dance'" in page.inner_text(f"{second} >> .problem")
        assert page.input_value(f"{second} >> [data-field=action]") == "stay"
        page.fill(f"{second} >> .json", json.dumps({"template": "action", "agents": [0, 1],
                                                    "params": {"action": "chop"}}))
        page.click(f"{second} >> .apply-json")
        page.wait_for_function("() => document.querySelectorAll('#specs .summary')[1].textContent"
                               " === 'agent 0, agent 1: action(action=\\'chop\\', value=1.0)'")
        assert page.input_value(f"{second} >> [data-field=action]") == "chop"
        page.uncheck(f"{second} >> .keep")

        # a new spec: what a status picker offers follows the entity (a plate is never chopped)
        page.click("#add-spec")
        third = "#specs .spec >> nth=2"
        page.select_option(f"{third} >> .template", "status")
        page.select_option(f"{third} >> [data-field=entity]", "plate_1")
        statuses = page.eval_on_selector(f"{third} >> [data-field=status]", OPTIONS)
        assert statuses == ["held", "has_food"]
        page.select_option(f"{third} >> .template", "composite")
        assert page.locator(f"{third} >> .part").count() == 2
        page.click(f"{third} >> .add-part")
        page.click(f"{third} >> .add-part")
        assert page.locator(f"{third} >> .part").count() == 4 and page.is_disabled(f"{third} >> .add-part")
        page.uncheck(f"{third} >> .keep")
        screenshot(page, tmp_path, "m3hf_feedback.png")
        page.wait_for_function(CONFIRM_ENABLED)
        page.click("#confirm")
        page.wait_for_function(SENT)
        assert page.inner_text("#m3hf-status").endswith("with 1 spec(s)")
    finally:
        server.kill()
        server.join()
    assert errors == []
    assert_confirmed(source, request, "onion", 2.0)


def test_confirm_waits_for_the_checks_of_the_kept_specs_as_they_stand_and_for_no_other(tmp_path, browser):
    """Each check request is held here until the test lets it through. A check of a dropped spec
    leaves Confirm enabled; an answer for a value typed over is not taken for the new value; a
    click on Confirm straight from a number field is not lost to the field's change event (a click
    that lands while Confirm is disabled does nothing: no feedback is sent)."""
    source, request = open_phase(tmp_path)
    port = free_port()
    server = start_server_process(ServeConfig(run_dir=str(tmp_path), port=port))
    page = browser.new_page()
    errors = watch_errors(page)
    first, second = "#specs .spec >> nth=0", "#specs .spec >> nth=1"
    held = []
    try:
        preview(page, port)
        page.wait_for_function(CONFIRM_ENABLED)
        page.route("**/api/m3hf/check", lambda route: held.append(route))
        page.evaluate(WATCH_SUMMARY)
        page.uncheck(f"{second} >> .keep")
        page.fill(f"{second} >> [data-field=value]", "-2")
        wait_held(page, held, 1)
        assert not page.is_disabled("#confirm")
        with page.expect_response("**/api/m3hf/check"):
            held.pop().continue_()

        for count, value in enumerate(("3", "4"), 1):  # the check of 3 is still held when 4 is typed
            page.fill(f"{first} >> [data-field=value]", value)
            wait_held(page, held, count)
            assert page.is_disabled("#confirm")
        with page.expect_response("**/api/m3hf/check"):
            held.pop(0).continue_()
        assert page.is_disabled("#confirm")
        held.pop().continue_()
        page.wait_for_function(CONFIRM_ENABLED)
        assert page.evaluate("() => window.summaries") == ["agent 0: holding(item='tomato', value=4.0)"]
        page.click("#confirm")  # the focus is still in the value field
        page.wait_for_function(SENT)
        assert page.inner_text("#m3hf-status").endswith("with 1 spec(s)") and held == []
    finally:
        server.kill()
        server.join()
    assert errors == []
    assert_confirmed(source, request, "tomato", 4.0)
