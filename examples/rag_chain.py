"""A retrieval chain (retriever | prompt | model) logged to agentledger.

Run a server first (``agentledger serve --dev-key dev``), then::

    AGENTLEDGER_API_KEY=dev python examples/rag_chain.py

The retriever is a tiny keyword scorer over three documents, the model an offline fake. The
handler logs one ``retrieval`` event with the query, the document ids, their scores and
trimmed text, as the child of the step that asked.
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever

from agentledger.client import Ledger
from agentledger.integrations.langchain import LedgerCallbackHandler

DOCS = [
    Document(id="kb-12", page_content="Refunds reach the card within 5 business days."),
    Document(id="kb-31", page_content="Duplicate charges are refunded after verification."),
    Document(id="kb-40", page_content="Gift cards cannot be exchanged for cash."),
]


class KeywordRetriever(BaseRetriever):
    """Scores documents by the share of query words they contain."""

    documents: list[Document]
    k: int = 2

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        words = {w.strip("?.,").lower() for w in query.split()}
        scored = []
        for doc in self.documents:
            text = {w.strip("?.,").lower() for w in doc.page_content.split()}
            score = round(len(words & text) / len(words), 3)
            if score:
                meta = {"score": score}
                scored.append(Document(id=doc.id, page_content=doc.page_content, metadata=meta))
        return sorted(scored, key=lambda d: -d.metadata["score"])[: self.k]


def build_chain() -> Any:
    retriever = KeywordRetriever(documents=DOCS)
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context.\n{context}"), ("human", "{question}")]
    )
    model = FakeListChatModel(responses=["Refunds for duplicate charges take 5 business days."])
    return (
        {
            "context": retriever | (lambda docs: "\n".join(d.page_content for d in docs)),
            "question": lambda question: question,
        }
        | prompt
        | model
        | StrOutputParser()
    ).with_config(run_name="rag_chain")


def main() -> None:
    with Ledger(agent=os.environ.get("AGENTLEDGER_AGENT", "rag-example")) as ledger:
        handler = LedgerCallbackHandler(ledger)
        answer = build_chain().invoke(
            "How long do refunds of duplicate charges take?", config={"callbacks": [handler]}
        )
        print("answer:", answer)
        ledger.flush(timeout_s=10)

        (retrieval,) = ledger.list_events(event_type="retrieval", limit=1)
        print("query:", retrieval.data["query"])
        for doc in retrieval.data["documents"]:
            print(f"  {doc['id']}  score={doc['score']}  {doc['text']}")
        asked_by = ledger.get_event(retrieval.parent_id) if retrieval.parent_id else None
        print("asked by step:", asked_by.data["name"] if asked_by else None)


if __name__ == "__main__":
    main()
