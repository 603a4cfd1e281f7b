"""Typed async clients of every service over one transport seam (URL when split, ASGI app when embedded).

    from shared.clients import Endpoints, ToolsClient
    async with Endpoints(settings, engine=engine, sessionmaker=maker) as endpoints:
        async with await ToolsClient.open(endpoints, api_key=key) as tools:
            print(await tools.list_tools())

``TRAJFORGE_<SERVICE>_URL`` (``settings.service_url``) decides the transport; empty means in-process.
"""

from shared.clients.asgi_ws import ASGIWebSocket, NetworkWebSocket, WebSocketClosed, WebSocketRefused
from shared.clients.functions import FunctionPackage, FunctionsClient, zip_workspace
from shared.clients.openenv import OpenEnvSession, parse_step_result, ws_url_of
from shared.clients.scoring import parse_prompt_logprobs, prompt_logprobs_body
from shared.clients.services import (
    CleaningClient,
    EnvsClient,
    GatewayClient,
    InferenceClient,
    RewardClient,
    RolloutClient,
    ServiceClient,
    ToolOutcome,
    ToolsClient,
)
from shared.clients.transport import APPS, COMPOSITION_MODULE, SERVICES, Endpoint, Endpoints, InProcessApps

__all__ = [
    "APPS",
    "ASGIWebSocket",
    "COMPOSITION_MODULE",
    "CleaningClient",
    "Endpoint",
    "Endpoints",
    "FunctionPackage",
    "FunctionsClient",
    "EnvsClient",
    "GatewayClient",
    "InProcessApps",
    "InferenceClient",
    "NetworkWebSocket",
    "OpenEnvSession",
    "RewardClient",
    "RolloutClient",
    "SERVICES",
    "ServiceClient",
    "ToolOutcome",
    "ToolsClient",
    "WebSocketClosed",
    "WebSocketRefused",
    "parse_prompt_logprobs",
    "parse_step_result",
    "prompt_logprobs_body",
    "ws_url_of",
    "zip_workspace",
]
