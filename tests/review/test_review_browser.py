"""The review page in a real headless Chromium (Debian's chromium + chromium-driver; nothing is downloaded): a
person filters, moves with the keyboard, decides one change and one group, and sees the new status; the test reads
the rows back from the adjudication file. Keys decide what they name (x/u, a reason, Enter), Enter alone decides
nothing, and at 500 changes the page comes in pages that j/k walk across, the current card never under the sticky
bar. With UPDATE_SCREENSHOTS=1 it refreshes docs/img/review.png."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest
from browser import WAIT, chrome, needs_browser

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "review.png"

pytestmark = [needs_browser, pytest.mark.slow]


@pytest.fixture
def browser(tmp_path, monkeypatch):
    with chrome(tmp_path / "profile", monkeypatch, "--window-size=1280,1500") as driver:
        yield driver


def rows(root: Path) -> list[dict[str, str]]:
    path = root / "data" / "adjudications.csv"
    return list(csv.DictReader(path.open())) if path.exists() else []


def test_filter_decide_a_change_and_a_group_and_see_the_status(served, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import Select, WebDriverWait

    from selenium.common.exceptions import StaleElementReferenceException

    # The page swaps its changes in place after a decision: an element read mid-swap is stale, so look again.
    wait = WebDriverWait(browser, WAIT, ignored_exceptions=(StaleElementReferenceException,))

    def cards():
        return browser.find_elements(By.CSS_SELECTOR, "article.change")

    def status_of(pair: str, judge: str = "judge-x") -> str:
        return browser.find_element(By.CSS_SELECTOR, f'article.change[data-pair="{pair}"][data-judge="{judge}"]').get_attribute("data-status")

    browser.get(served.url)
    wait.until(lambda d: len(cards()) == 4)
    # The config change of judge-y is not adjudicable: listed apart, collapsed.
    assert not browser.find_element(By.CSS_SELECTOR, "tr.other-change[data-judge='judge-y']").is_displayed()

    # Filter: only the evidence changes.
    Select(browser.find_element(By.ID, "filter-cause")).select_by_visible_text("evidence")
    old = cards()[0]
    browser.find_element(By.ID, "apply").click()
    wait.until(EC.staleness_of(old))
    wait.until(lambda d: "cause=evidence" in d.current_url and len(cards()) == 4)
    assert {c.get_attribute("data-judge") for c in cards()} == {"judge-x", "judge-yin"}

    # Keyboard: j moves to the next change, k back (once the page's script has marked the first one).
    wait.until(lambda d: "current" in cards()[0].get_attribute("class"))
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("j")
    wait.until(lambda d: "current" in cards()[1].get_attribute("class"))
    body.send_keys(Keys.ARROW_UP)
    wait.until(lambda d: "current" in cards()[0].get_attribute("class"))

    # A bad decision is refused by the library and its message shown next to the form; nothing is written.
    single = browser.find_element(By.CSS_SELECTOR, 'article.change[data-pair="p-ab"][data-judge="judge-x"]')
    form = single.find_element(By.CSS_SELECTOR, "form.decide")
    browser.execute_script("arguments[0].querySelector('input[name=pair]').value = 'p-nope';", form)
    form.find_element(By.CSS_SELECTOR, "input.who").send_keys("ana")
    form.find_element(By.CSS_SELECTOR, "button.decision-unclear").click()
    wait.until(lambda d: "p-nope" in form.find_element(By.CSS_SELECTOR, ".form-error").text)
    assert rows(served.root) == []
    old = cards()[0]
    browser.refresh()
    wait.until(EC.staleness_of(old))
    wait.until(lambda d: len(cards()) == 4)

    # One change: p-ab (the Beta edit), decided incorrect with a reason.
    form = browser.find_element(By.CSS_SELECTOR, 'article.change[data-pair="p-ab"][data-judge="judge-x"] form.decide')
    form.find_element(By.CSS_SELECTOR, "input.reason").send_keys("the edit leaks the method")
    who = form.find_element(By.CSS_SELECTOR, "input.who")
    who.clear()
    who.send_keys("ana")
    form.find_element(By.CSS_SELECTOR, "button.decision-incorrect").click()
    wait.until(lambda d: status_of("p-ab") == "incorrect")
    wait.until(EC.text_to_be_present_in_element((By.ID, "live-notice"), "decision recorded"))
    assert [(r["pair"], r["decision"], r["who"], r["reason"]) for r in rows(served.root)] == [
        ("p-ab", "incorrect", "ana", "the edit leaks the method")]

    # One group: the Gamma edit flipped p-cd and p-ac; both are decided by one click.
    group = browser.find_element(By.CSS_SELECTOR, "section.group:has(article.change[data-pair='p-cd'])")
    gform = group.find_element(By.CSS_SELECTOR, "form.decide-group")
    gform.find_element(By.CSS_SELECTOR, "input.reason").send_keys("the rewrite states the contribution")
    gwho = gform.find_element(By.CSS_SELECTOR, "input.who")
    gwho.clear()
    gwho.send_keys("bo")
    gform.find_element(By.CSS_SELECTOR, "button.decision-correct").click()
    wait.until(lambda d: status_of("p-cd") == "correct" and status_of("p-ac") == "correct")
    written = rows(served.root)
    assert len(written) == 3
    assert sorted((r["pair"], r["decision"], r["who"]) for r in written[1:]) == [("p-ac", "correct", "bo"), ("p-cd", "correct", "bo")]
    assert status_of("p-ab") == "incorrect"

    # The unfiltered page after a reload (files are the truth) shows the same statuses.
    old = cards()[0]
    browser.get(served.url)
    wait.until(EC.staleness_of(old))
    wait.until(lambda d: len(cards()) == 4)
    config = browser.find_element(By.CSS_SELECTOR, "tr.other-change[data-judge='judge-y']").get_attribute("data-status")
    assert (status_of("p-ab"), status_of("p-cd"), status_of("p-ac"), config) == ("incorrect", "correct", "correct", "not-adjudicable")
    wait.until(lambda d: "current" in cards()[0].get_attribute("class"))
    if os.environ.get("UPDATE_SCREENSHOTS") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        browser.set_window_size(1280, 2100)
        assert browser.save_screenshot(str(SCREENSHOT))

    # Deciding from the keyboard: j down to the distance judge's change, c = correct (the name is remembered).
    target = [c.get_attribute("data-judge") for c in cards()].index("judge-yin")
    body = browser.find_element(By.TAG_NAME, "body")
    for _ in range(target):
        body.send_keys("j")
    wait.until(lambda d: "current" in cards()[target].get_attribute("class"))
    body.send_keys("c")
    wait.until(lambda d: status_of("p-ad", "judge-yin") == "correct")
    last = rows(served.root)[-1]
    assert (len(rows(served.root)), last["judge"], last["pair"], last["decision"], last["who"]) == (4, "judge-yin", "p-ad", "correct", "bo")


def press(browser, *keys: str) -> None:
    """Keys as a person types them: to whatever has the focus."""
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).send_keys(*keys).perform()


def test_x_and_u_then_a_reason_and_enter_record_incorrect_and_unclear_never_correct(served, browser):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, WAIT, ignored_exceptions=(StaleElementReferenceException,))

    def cards():
        return browser.find_elements(By.CSS_SELECTOR, "article.change")

    def active(cls: str) -> bool:
        return cls in (browser.switch_to.active_element.get_attribute("class") or "")

    browser.get(served.url)
    wait.until(lambda d: len(cards()) == 4 and "current" in cards()[0].get_attribute("class"))

    # Enter alone in a reason box decides nothing: it says to choose.
    form = cards()[0].find_element(By.CSS_SELECTOR, "form.decide")
    form.find_element(By.CSS_SELECTOR, "input.reason").send_keys("just typing", Keys.ENTER)
    wait.until(lambda d: "Enter alone does not pick one" in form.find_element(By.CSS_SELECTOR, ".form-error").text)
    assert rows(served.root) == []
    form.find_element(By.CSS_SELECTOR, "input.reason").clear()
    browser.find_element(By.ID, "summary").click()  # leave the box, as a person clicks elsewhere

    # x on the first card: no name yet, so the name box gets the focus; Enter there goes on to the reason (it does
    # not record `correct`, the form's first decision button); the reason and Enter record `incorrect`.
    first = cards()[0].get_attribute("data-change")
    press(browser, "x")
    wait.until(lambda d: active("who"))
    press(browser, "ana", Keys.ENTER)
    wait.until(lambda d: active("reason"))
    assert rows(served.root) == []
    press(browser, "the new text leaks the method", Keys.ENTER)
    wait.until(lambda d: len(rows(served.root)) == 1)
    wait.until(lambda d: browser.find_element(By.CSS_SELECTOR, f'article.change[data-change="{first}"]').get_attribute("data-status") == "incorrect")

    # j to the next card, u, a reason, Enter: `unclear` (the name is remembered).
    wait.until(lambda d: "current" in cards()[0].get_attribute("class"))
    press(browser, "j")
    wait.until(lambda d: "current" in cards()[1].get_attribute("class"))
    second = cards()[1].get_attribute("data-change")
    press(browser, "u")
    wait.until(lambda d: active("reason"))
    press(browser, "cannot tell from the abstract", Keys.ENTER)
    wait.until(lambda d: len(rows(served.root)) == 2)
    wait.until(lambda d: browser.find_element(By.CSS_SELECTOR, f'article.change[data-change="{second}"]').get_attribute("data-status") == "unclear")
    assert [(r["decision"], r["reason"], r["who"]) for r in rows(served.root)] == [
        ("incorrect", "the new text leaks the method", "ana"), ("unclear", "cannot tell from the abstract", "ana")]


def test_500_changes_in_pages_j_and_k_walk_across_them_and_the_current_card_is_never_under_the_bar(big_served, tmp_path, monkeypatch):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with chrome(tmp_path / "profile-big", monkeypatch, "--window-size=1280,800") as browser:
        wait = WebDriverWait(browser, WAIT, ignored_exceptions=(StaleElementReferenceException,))

        def cards():
            return browser.find_elements(By.CSS_SELECTOR, "article.change")

        def current() -> int:
            return [i for i, c in enumerate(cards()) if "current" in c.get_attribute("class")][0]

        def below_bar(el) -> bool:
            """The element's top edge is below the sticky bar's bottom edge (and inside the window)."""
            return browser.execute_script(
                "var b = document.getElementById('bar').getBoundingClientRect(), r = arguments[0].getBoundingClientRect();"
                "return r.top >= b.bottom - 0.5 && r.top < window.innerHeight;", el)

        browser.get(big_served.url)
        wait.until(lambda d: len(cards()) == 25 and "current" in cards()[0].get_attribute("class"))
        assert "page 1 of 20" in browser.find_element(By.ID, "pager").text
        assert below_bar(browser.find_element(By.ID, "summary"))
        for i in range(1, 25):
            press(browser, "j")
            wait.until(lambda d: current() == i)
            assert below_bar(cards()[i]), f"card {i} under the bar"
        press(browser, "k")
        wait.until(lambda d: current() == 23)
        assert below_bar(cards()[23])
        press(browser, "j", "j")  # past the last card: the next page, at its first card
        wait.until(lambda d: "page=2" in d.current_url and len(cards()) == 25 and current() == 0)
        assert "page 2 of 20" in browser.find_element(By.ID, "pager").text
        assert below_bar(cards()[0])
        press(browser, "k")  # before the first card: the previous page, at its last card
        wait.until(lambda d: "page=2" not in d.current_url and len(cards()) == 25 and current() == 24)
        assert below_bar(cards()[24])
        # The config changes: collapsed, one line each.
        details = browser.find_element(By.ID, "not-adjudicable")
        assert details.get_attribute("open") is None and "3 change(s) not adjudicable" in details.text
