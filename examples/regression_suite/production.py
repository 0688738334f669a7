"""Play one "production" session: the refund agent with its real tools against the live
stand-in payments service, logged to a ledger. Prints the session id.

    agentledger serve --db prod.db --dev-key dev &
    python production.py --url http://127.0.0.1:8765 --api-key dev --agent refund-bot
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from agentledger.client import Ledger
from agentledger.integrations.langchain import LedgerCallbackHandler

CUSTOMER_MESSAGE = (
    "Hi, this is Dana Reyes (dana.reyes@example.org, +49 170 1234567). I was charged twice "
    "for my order A1234 (49.90 EUR) on my card 4242 4242 4242 4242. Can you fix it, please?"
)


def run_production_session(
    url: str, api_key: str, agent: str, payments_url: str, session_id: str | None = None
) -> str:
    """Run the production agent once; returns the session id (events flushed)."""
    from payments_service import serve  # noqa: F401  (documents the dependency)
    from refund_agent import build_agent
    from refund_tools import TOOLS

    os.environ["PAYMENTS_URL"] = payments_url
    session_id = session_id or f"prod-{uuid.uuid4().hex[:12]}"
    with Ledger(url=url, api_key=api_key, agent=agent, spill_dir=None) as ledger:
        handler = LedgerCallbackHandler(
            ledger, session_id=session_id, metadata={"prompt_version": "refund-v1"}
        )
        build_agent(list(TOOLS)).invoke(
            {"messages": [{"role": "user", "content": CUSTOMER_MESSAGE}]},
            config={"callbacks": [handler]},
        )
        ledger.flush(timeout_s=10.0)
    return session_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default=os.environ.get("AGENTLEDGER_URL", "http://127.0.0.1:8765"))
    parser.add_argument("--api-key", default=os.environ.get("AGENTLEDGER_API_KEY", "dev"))
    parser.add_argument("--agent", default="refund-bot")
    parser.add_argument("--session", default=None, help="Session id (default: a new one).")
    args = parser.parse_args()
    from payments_service import serve

    with serve() as payments_url:
        print(
            run_production_session(args.url, args.api_key, args.agent, payments_url, args.session)
        )


if __name__ == "__main__":
    main()
