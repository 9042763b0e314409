"""The real Dagster webserver: starts on a free loopback port, answers GraphQL, shuts down cleanly."""

from __future__ import annotations

import pytest
from webserver import Webserver


@pytest.mark.slow
def test_webserver_serves_graphql_and_the_asset_graph(webserver: Webserver) -> None:
    assert webserver.graphql("{ version }")["data"]["version"]
    nodes = webserver.graphql("{ assetNodes { assetKey { path } isPartitioned } }")["data"]["assetNodes"]
    keys = {"/".join(n["assetKey"]["path"]) for n in nodes}
    layers = {"events", "episodes", "facts", "embeddings"}  # partitioned; the analytics group reads them all
    assert layers | {"observations", "mental_models"} <= keys
    assert all(n["isPartitioned"] for n in nodes if n["assetKey"]["path"][0] in layers)
