"""The candidate of the prompt-change tests: a LangChain ``create_agent`` on ``ChatOpenAI``
pointed at the tests' local OpenAI-compatible server (:mod:`.model_server`).

``cases run --factory replay_agent:build`` imports it by name, so the server's URL is a
module global the fixture sets.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

#: The production system prompt (it asks for the verification the model server then does).
PRODUCTION_PROMPT = "You are a refund agent. Always verify the charge before any refund."

#: Set by the test fixture: the model server's ``/v1`` URL.
BASE_URL = ""


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up."""
    return {"order_id": order_id, "status": "paid", "amount": 49.9}


@tool
def verify_charge(order_id: str) -> dict[str, Any]:
    """Check whether the order was charged twice."""
    return {"order_id": order_id, "duplicate": True, "charge_id": "ch_2"}


@tool
def refund_status(order_id: str) -> dict[str, Any]:
    """Where the refund of an order is."""
    return {"order_id": order_id, "refund": "re_1234", "arrives_in_days": 5}


TOOLS = [lookup_order, verify_charge]
#: the tools of the two-turn conversation (the follow-up asks where the refund is)
TURN_TOOLS = [*TOOLS, refund_status]


def build(
    tools: list[Any],
    system_prompt: str = PRODUCTION_PROMPT,
    model: str = "gpt-test",
    temperature: float = 0.0,
) -> Any:
    """The agent with ``tools`` (stubs during a case run) and the given prompt and model."""
    chat = ChatOpenAI(
        model=model,
        base_url=BASE_URL,
        api_key="test-key",  # type: ignore[arg-type]
        temperature=temperature,
        max_retries=0,
    )
    return create_agent(chat, tools, system_prompt=system_prompt)


def build_without_prompt(tools: list[Any]) -> Any:
    """A factory that cannot take a new system prompt."""
    return build(tools)


def build_chat_model(tools: list[Any], system_prompt: str | None = None) -> Any:
    """A plain chatbot: the bare chat model, no agent loop and no tools. The runner puts the
    system prompt (``--system-prompt``, else the recorded one) in front of the messages."""
    del tools, system_prompt
    return ChatOpenAI(model="gpt-test", base_url=BASE_URL, api_key="test-key", max_retries=0)  # type: ignore[arg-type]


def build_openai_bot(
    tools: list[Any], ledger: Any, session_id: str, system_prompt: str | None = None
) -> Any:
    """A plain chatbot on the raw OpenAI SDK, logging through ``instrument_openai``: called
    with the conversation (system prompt first), it returns the answer's text."""
    from openai import OpenAI

    from agentledger.integrations.openai import instrument_openai

    del tools, system_prompt  # the runner puts the system prompt in front of the messages
    client = instrument_openai(
        OpenAI(base_url=BASE_URL, api_key="test-key", max_retries=0), ledger, session_id=session_id
    )

    def respond(messages: list[dict[str, Any]]) -> str:
        reply = client.chat.completions.create(model="gpt-test", messages=messages)  # type: ignore[arg-type]
        return reply.choices[0].message.content or ""

    return respond
