"""Apps a service offers in process: built per hosting app, found there by name."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from shared.settings import Settings
from shared.web import ServiceSpec, create_app
from shared.web.inproc import in_process_apps, offer_in_process


def test_every_app_mounting_a_spec_offers_its_apps_built_for_that_app(settings: Settings) -> None:
    hosts: list[Any] = []

    def engine_app(host: FastAPI) -> FastAPI:
        hosts.append(host)
        return FastAPI()

    spec = ServiceSpec(name="offering", in_process_apps={"engine": engine_app})
    one, two = create_app(spec, settings=settings), create_app([spec, ServiceSpec(name="other")], settings=settings)
    assert hosts == [one, two] and in_process_apps(one)["engine"] is not in_process_apps(two)["engine"]
    assert in_process_apps(create_app(ServiceSpec(name="other"), settings=settings)) == {}


def test_a_later_offer_shows_in_the_mapping_already_handed_out(settings: Settings) -> None:
    app = create_app(ServiceSpec(name="alone"), settings=settings)
    seen = in_process_apps(app)
    offer_in_process(app, {"engine": lambda host: FastAPI()})
    assert set(seen) == {"engine"}
