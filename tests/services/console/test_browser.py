"""The console in a real browser: Debian's Chromium driven by Playwright against a real server.

Every page is opened and its content checked; the tests click job → group →
trajectory → token view, navigate by keyboard, follow a live job over
server-sent events, and check that a wrong key is refused and that the key
never appears in a URL. Screenshots go to out/test-screenshots/console/.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import playwright.sync_api as playwright_api
import pytest

from tests.services.console.conftest import LONG_TOKENS, ConsoleStack, routing_job

CHROMIUM = "/usr/bin/chromium"
WAIT_MS = 20_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless (Playwright's own browser download is not used)."""
    assert shutil.which(CHROMIUM), "Debian's chromium is missing: apt-get install chromium (make test does)"
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Any, console: ConsoleStack) -> Iterator[Any]:
    """A signed-in tab: the key is put into the tab's session storage before any page script runs."""
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    context.add_init_script(f"sessionStorage.setItem('trajforge.console.key', {json.dumps(console.key)})")
    tab = context.new_page()
    tab.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    yield tab
    context.close()
    assert not errors, errors


def test_sign_in_refuses_a_wrong_key_and_keeps_the_key_out_of_urls(browser: Any, console: ConsoleStack,
                                                                     screenshots: Path) -> None:
    context = browser.new_context()
    tab = context.new_page()
    tab.set_default_timeout(WAIT_MS)
    seen: list[str] = []
    tab.on("request", lambda req: seen.append(req.url))
    tab.goto(console.url + "/ui/rollouts/" + console.routing_job)
    tab.wait_for_url(re.compile(r"/ui/signin"))
    tab.fill("#key", "tf_" + "x" * 43)
    tab.click("#signin-form button")
    playwright_api.expect(tab.locator("#signin-error")).to_contain_text("refused")
    tab.screenshot(path=str(screenshots / "signin-refused.png"))
    assert tab.evaluate("sessionStorage.getItem('trajforge.console.key')") is None
    tab.fill("#key", console.key)
    tab.click("#signin-form button")
    tab.wait_for_url(re.compile(r"/ui/rollouts/" + console.routing_job))  # back to the page first asked for
    playwright_api.expect(tab.locator("h1")).to_contain_text(console.routing_job)
    assert tab.evaluate("sessionStorage.getItem('trajforge.console.key')") == console.key
    assert tab.evaluate("localStorage.length") == 0
    assert seen and not any(console.key in url for url in seen)
    context.close()


def test_jobs_page_lists_rollout_and_cleaning_jobs(page: Any, console: ConsoleStack, screenshots: Path) -> None:
    page.goto(console.url + "/ui/")
    rollouts = page.locator("#rollouts tbody tr")
    playwright_api.expect(rollouts.first).to_be_visible()
    text = page.locator("#rollouts").inner_text()
    assert console.routing_job[:8] in text and console.long_job[:8] in text and "succeeded" in text
    playwright_api.expect(page.locator("#cleans")).to_contain_text(console.clean_job[:8])
    assert "console-glaive" in page.locator("#cleans").inner_text()
    assert page.locator("#reward-per-job svg rect.bar").count() >= 2, console.client.get("/v1/rollouts").text
    page.screenshot(path=str(screenshots / "jobs.png"), full_page=True)


def test_click_job_group_trajectory_token_view(page: Any, console: ConsoleStack, screenshots: Path) -> None:
    page.goto(console.url + "/ui/")
    page.click(f"a[href='/ui/rollouts/{console.routing_job}']")
    playwright_api.expect(page.locator("#live-note")).to_contain_text("succeeded")
    assert page.locator("#plot-stops svg rect.bar").count() >= 2
    assert page.locator("#plot-reward svg rect.bar").count() >= 1
    assert page.locator("#plot-latency svg").count() == 1
    failures = page.locator("#failure-table").inner_text()
    assert "upstream_unavailable" in failures and "scripted upstream is down" in failures
    assert page.locator("#groups tbody tr").count() == 4
    page.screenshot(path=str(screenshots / "rollout-job.png"), full_page=True)

    page.locator("#groups tbody tr", has_text="task-0").locator("a").click()
    playwright_api.expect(page.locator("h1")).to_contain_text("Group")
    members = page.locator("#members tbody tr")
    playwright_api.expect(members).to_have_count(4)
    header = page.locator("#members thead").inner_text()
    assert "tool_call" in header and "advantage" in header
    page.click("#members th[data-k='reward']")
    page.click("#members th[data-k='reward']")  # descending: the best member first
    rewards = [float(members.nth(i).locator("td").nth(1).inner_text()) for i in range(4)]
    assert rewards == sorted(rewards, reverse=True) and rewards[0] > rewards[-1]
    page.fill("#f-min", str(rewards[0]))
    assert members.count() == sum(1 for r in rewards if r >= rewards[0])
    page.fill("#f-min", "")
    page.screenshot(path=str(screenshots / "group.png"), full_page=True)

    members.first.locator("a").click()
    playwright_api.expect(page.locator("h1")).to_contain_text("Trajectory")
    conversation = page.locator("#conversation").inner_text()
    assert "query_status" in conversation and "latency" in conversation and "ok" in conversation
    assert "tool_call" in page.locator("#rewards").inner_text()
    tokens = page.locator("#token-host .tokview span.t")
    assert tokens.count() > 50
    page.wait_for_selector("#token-host[data-texts='ready']")
    sampled = page.locator("#token-host .tokview span.t:not(.p)").first
    assert not sampled.inner_text().startswith("⟨")  # token text, not the bare id
    sampled.hover()
    tip = page.locator("#tip")
    playwright_api.expect(tip).to_contain_text("logprob")
    assert "loss mask" in tip.inner_text() and "text" in tip.inner_text()
    page.select_option("#token-host .tok-mode", "logprob")
    assert "p≈1" in page.locator("#token-host .tok-legend").inner_text()
    page.select_option("#token-host .tok-mode", "advantage")
    page.locator("#tokens").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "trajectory.png"), full_page=True)


def test_teacher_logprobs_colour_the_token_view_where_stored(page: Any, console: ConsoleStack) -> None:
    page.goto(console.url + f"/ui/trajectories/{console.extra['distilled']}")
    playwright_api.expect(page.locator("#token-host .tok-mode")).to_be_visible()
    modes = page.locator("#token-host .tok-mode option").all_inner_texts()
    assert "teacher logprob" in modes
    page.select_option("#token-host .tok-mode", "teacher")
    sampled = page.locator("#token-host .tokview span.t:not(.p)").nth(3)
    sampled.hover()
    playwright_api.expect(page.locator("#tip")).to_contain_text("teacher logprob")
    assert "background" in (sampled.get_attribute("style") or "")
    page.goto(console.url + f"/ui/trajectories/{console.long_trajectory}")
    playwright_api.expect(page.locator("#token-host .tok-mode")).to_be_visible()
    assert "teacher logprob" not in page.locator("#token-host .tok-mode").inner_text()  # none stored there


def test_keyboard_navigation_from_jobs_to_tokens(page: Any, console: ConsoleStack) -> None:
    page.goto(console.url + "/ui/")
    playwright_api.expect(page.locator("#rollouts tbody tr").first).to_be_visible()
    row = page.locator("#rollouts tbody tr", has_text=console.routing_job[:8])
    index = next(i for i, r in enumerate(page.locator("#rollouts tbody tr").all())
                 if console.routing_job[:8] in r.inner_text())
    page.locator("body").click(position={"x": 5, "y": 300})
    for _ in range(index + 1):
        page.keyboard.press("j")
    assert "sel" in (row.get_attribute("class") or "")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile("/ui/rollouts/" + console.routing_job + "$"))
    playwright_api.expect(page.locator("#groups tbody tr")).to_have_count(4)
    page.keyboard.press("j")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile("/groups/"))
    playwright_api.expect(page.locator("#members tbody tr")).to_have_count(4)
    page.keyboard.press("j")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile("/ui/trajectories/"))
    view = page.locator("#token-host .tokview")
    view.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    playwright_api.expect(page.locator("#token-host .tok-info")).to_contain_text("#1 id")
    assert page.locator("#token-host span.t.cur").get_attribute("data-i") == "1"
    page.keyboard.press("End")
    assert int(page.locator("#token-host span.t.cur").get_attribute("data-i") or 0) > 50
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("Backspace")
    page.wait_for_url(re.compile("/groups/"))
    page.keyboard.press("/")
    page.wait_for_url(re.compile("/ui/search"))


def test_job_page_follows_a_running_job_live(page: Any, console: ConsoleStack) -> None:
    body = routing_job("What is the status of item A1?", "Status of A1?", "A1?", delay_s=0.6, group_size=2)
    body["shard_size"] = 1
    job = console.client.post("/v1/rollouts", json=body).json()
    page.goto(console.url + f"/ui/rollouts/{job['id']}")
    playwright_api.expect(page.locator("#live-note")).to_contain_text("live")
    playwright_api.expect(page.locator("#job-progress-text")).to_contain_text("3 / 3 groups")
    playwright_api.expect(page.locator("#live-note")).to_contain_text("Job finished: succeeded")
    playwright_api.expect(page.locator("#groups tbody tr")).to_have_count(3)
    assert console.wait_job(job["id"])["status"] == "succeeded"


def test_cleaning_job_drops_samples_and_evidence(page: Any, console: ConsoleStack, screenshots: Path) -> None:
    page.goto(console.url + f"/ui/clean/jobs/{console.clean_job}")
    playwright_api.expect(page.locator("h1")).to_contain_text("Cleaning job")
    drops = page.locator("#drops").inner_text()
    assert "invalid_row" in drops and "duplicate" in drops
    bars = page.locator("#drops-chart svg rect.bar")
    assert bars.count() >= 2
    page.locator("#drops tbody tr", has_text="invalid_row").locator("a").click()
    playwright_api.expect(page.locator("#samples-title")).to_contain_text("invalid_row")
    playwright_api.expect(page.locator("#sample-rows .sample").first).to_contain_text("invalid_row")
    evidence = page.locator("#sample-rows").inner_text()
    assert "drop_detail" in evidence and "no messages" in evidence
    page.locator("#drops tbody tr", has_text="duplicate").locator("a").click()
    playwright_api.expect(page.locator("#samples-title")).to_contain_text("duplicate")
    playwright_api.expect(page.locator("#sample-rows .sample").first).to_contain_text("duplicate")
    assert page.locator("#drops-chart rect.bar.sel").count() == 1
    page.screenshot(path=str(screenshots / "cleaning-job.png"), full_page=True)


def test_gateway_session_shows_calls_segments_and_the_mismatch_diff(page: Any, console: ConsoleStack,
                                                                     screenshots: Path) -> None:
    page.goto(console.url + f"/ui/sessions/{console.session_id}")
    playwright_api.expect(page.locator("#calls tbody tr")).to_have_count(2)
    playwright_api.expect(page.locator("#mismatch-count")).to_have_text("1")
    card = page.locator(".mismatch")
    assert "template_strip" in card.inner_text() and "reasoning" in card.inner_text()
    at = card.locator("td.at")
    assert at.count() == 2  # the break position, in the expected and in the sent row
    assert card.locator("td.x").count() >= 2
    assert page.locator(".segment").count() == 2
    assert "token ids only" in page.locator(".segment").first.inner_text()
    page.screenshot(path=str(screenshots / "session.png"), full_page=True)


def test_search_by_tool_text_stop_reason_and_reward(page: Any, console: ConsoleStack) -> None:
    page.goto(console.url + f"/ui/search?job_id={console.routing_job}&tool=respond")
    results = page.locator("#results tbody tr")
    playwright_api.expect(results.first).to_contain_text("respond")
    assert all("respond" in r.inner_text() for r in results.all())
    page.fill("#search-form input[name='tool']", "")
    page.select_option("#search-form select[name='stop_reason']", "api_error")
    page.click("#search-form button")
    page.wait_for_url(re.compile("stop_reason=api_error"))
    playwright_api.expect(results).to_have_count(4)
    assert all("api_error" in r.inner_text() for r in results.all())
    page.goto(console.url + f"/ui/search?job_id={console.routing_job}&q=lost&min_reward=-5&max_reward=5")
    playwright_api.expect(results.first).to_contain_text("lost")
    page.goto(console.url + "/ui/search?min_reward=2&max_reward=1")
    playwright_api.expect(page.locator("#search-error")).to_contain_text("min_reward")


def test_32k_token_trajectory_page_renders_in_under_a_second(page: Any, console: ConsoleStack,
                                                             screenshots: Path) -> None:
    detail = console.client.get(f"/v1/trajectories/{console.long_trajectory}").json()
    n = len(detail["tokens"]["prompt_ids"]) + len(detail["tokens"]["response_ids"])
    assert n >= LONG_TOKENS
    timings = []
    for _ in range(3):
        page.goto(console.url + f"/ui/trajectories/{console.long_trajectory}")
        page.wait_for_selector(f"body[data-traj-ready='{console.long_trajectory}']")
        body = page.evaluate("({...document.body.dataset})")
        timings.append({"tokens": n, "fetch_ms": float(body["trajFetchMs"]), "draw_ms": float(body["trajRenderMs"]),
                        "route_ms": float(body["trajTotalMs"]),
                        "since_navigation_ms": float(body["trajSinceNavigationMs"])})
    print("32k-token trajectory page timings (ms):", json.dumps(timings))
    assert page.locator(".tokview span.t").count() >= 1024
    page.click("#conversation button.show-all")  # the long reply was drawn in part; the rest on request
    assert len(page.locator("#conversation pre.long-text").inner_text()) > 100_000
    best = min(t["since_navigation_ms"] for t in timings)
    assert best < 1000, timings
    page.screenshot(path=str(screenshots / "trajectory-32k.png"))
