"""The OpenTelemetry SDK switched on for these tests: CI exports ``OTEL_SDK_DISABLED=true``
(for CrewAI's own telemetry), and a disabled ``TracerProvider`` records no span at all."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def otel_sdk_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)
