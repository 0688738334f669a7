"""Secret forms the redaction table must catch, and ordinary values it must leave alone.

Shared by the client tests (what leaves the process) and the server tests (what is stored and
hashed). Each secret case is ``(id, value, expected)``: ``expected`` is the redacted value, and
every string in ``SECRETS`` (the secret parts) must be gone from it.
"""

from __future__ import annotations

from typing import Any

R = "[REDACTED]"

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFubiJ9"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2NDM0NTY3\n"
    "Proc-Type: 4,ENCRYPTED\nAbCdEf0123456789+/abcdefghijklmn==\n-----END RSA PRIVATE KEY-----"
)

#: The secret parts; none may survive redaction anywhere.
SECRETS = (
    "hunter2",
    "s3cr3t-pw",
    "Zm9vOmJhcg",
    "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2",
    "sk-ant-api03-Xy9_Zq8-Wv7Ut6Sr5Qp4On3",
    "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github_pat_11ABCDEFG0123456789_abcdefghijKLMNOP",
    "xoxb-1234567890-0987654321-AbCdEfGhIj",
    "AKIAIOSFODNN7EXAMPLE",
    JWT,
    "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2NDM0NTY3",
    "AbCdEf0123456789+/abcdefghijklmn",
    "qs-token-77",
    "sigvalue99",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
)

SECRET_CASES: list[tuple[str, Any, Any]] = [
    # keys named for secrets
    ("pwd", {"pwd": "hunter2"}, {"pwd": R}),
    ("mysql_pwd", {"MYSQL_PWD": "hunter2"}, {"MYSQL_PWD": R}),
    ("passphrase", {"passphrase": "hunter2"}, {"passphrase": R}),
    ("passcode", {"passcode": "hunter2"}, {"passcode": R}),
    ("auth", {"auth": ["user", "hunter2"]}, {"auth": R}),
    ("basic_auth", {"basicAuth": "hunter2"}, {"basicAuth": R}),
    ("bearer", {"bearer": "hunter2"}, {"bearer": R}),
    ("jwt", {"jwt": JWT}, {"jwt": R}),
    ("x_auth_token", {"X-Auth-Token": "hunter2"}, {"X-Auth-Token": R}),
    ("credentials", {"credentials": {"u": "ann", "p": "hunter2"}}, {"credentials": R}),
    ("csrf", {"csrf": "hunter2", "xsrf_token": "hunter2"}, {"csrf": R, "xsrf_token": R}),
    ("proxy_authorization", {"Proxy-Authorization": "hunter2"}, {"Proxy-Authorization": R}),
    (
        "session_cookies",
        {"sessionid": "hunter2", "PHPSESSID": "hunter2"},
        {"sessionid": R, "PHPSESSID": R},
    ),
    # header lists
    (
        "header_pairs",
        {"headers": [["Authorization", "Bearer hunter2"], ["Accept", "*/*"]]},
        {"headers": [["Authorization", R], ["Accept", "*/*"]]},
    ),
    (
        "header_tuples",
        {"headers": [("cookie", "sid=hunter2"), ("x-api-key", "hunter2")]},
        {"headers": [["cookie", R], ["x-api-key", R]]},
    ),
    (
        "header_objects",
        {"headers": [{"name": "Authorization", "value": "hunter2"}, {"name": "A", "value": "b"}]},
        {"headers": [{"name": "Authorization", "value": R}, {"name": "A", "value": "b"}]},
    ),
    (
        "header_key_value",
        {"params": [{"key": "api_key", "value": "hunter2"}]},
        {"params": [{"key": "api_key", "value": R}]},
    ),
    # URLs and connection strings
    (
        "query_params",
        {"url": "https://api.example.com/v1?q=cats&api_key=hunter2&token=qs-token-77#top"},
        {"url": f"https://api.example.com/v1?q=cats&api_key={R}&token={R}#top"},
    ),
    (
        "signed_url",
        {"url": "https://b.example.net/o?sv=2024&sig=sigvalue99&X-Amz-Signature=sigvalue99"},
        {"url": f"https://b.example.net/o?sv=2024&sig={R}&X-Amz-Signature={R}"},
    ),
    (
        "aws_signed_url",
        {"url": "https://s3.example.com/k?AWSAccessKeyId=qs-token-77&Signature=sigvalue99"},
        {"url": f"https://s3.example.com/k?AWSAccessKeyId={R}&Signature={R}"},
    ),
    (
        "postgres_dsn",
        {"dsn": "postgresql://app:s3cr3t-pw@db.internal:5432/orders"},
        {"dsn": f"postgresql://app:{R}@db.internal:5432/orders"},
    ),
    (
        "redis_url_in_text",
        {"log": "connecting to redis://:s3cr3t-pw@cache:6379/0 now"},
        {"log": f"connecting to redis://:{R}@cache:6379/0 now"},
    ),
    # token shapes in free text
    (
        "openai_key",
        {"text": "export OPENAI_API_KEY=sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2 && run"},
        {"text": f"export OPENAI_API_KEY={R} && run"},
    ),
    (
        "openai_key_in_prose",
        {"text": "the key sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2 leaked"},
        {"text": "the key [REDACTED:api_key] leaked"},
    ),
    (
        "anthropic_key",
        {"text": "use sk-ant-api03-Xy9_Zq8-Wv7Ut6Sr5Qp4On3."},
        {"text": "use [REDACTED:api_key]."},
    ),
    (
        "stripe_key",
        {"text": "charge with sk_live_4eC39HqLyjWDarjtT1zdp7dc now"},
        {"text": "charge with [REDACTED:stripe_key] now"},
    ),
    (
        "github_tokens",
        {
            "text": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 / "
            "github_pat_11ABCDEFG0123456789_abcdefghijKLMNOP"
        },
        {"text": "[REDACTED:github_token] / [REDACTED:github_token]"},
    ),
    (
        "slack_token",
        {"text": "slack: xoxb-1234567890-0987654321-AbCdEfGhIj"},
        {"text": "slack: [REDACTED:slack_token]"},
    ),
    (
        "aws_key_id",
        {"text": "aws AKIAIOSFODNN7EXAMPLE in us-east-1"},
        {"text": "aws [REDACTED:aws_key] in us-east-1"},
    ),
    ("jwt_in_text", {"text": f"got {JWT} back"}, {"text": "got [REDACTED:jwt] back"}),
    (
        "pem_without_headers",
        {"text": "-----BEGIN PRIVATE KEY-----\nAbCdEf0123456789+/abcdefghijklmn==\n"},
        {"text": "[REDACTED:private_key]"},
    ),
    (
        "bearer_in_prose",
        {"text": "send bearer Zm9vOmJhcg.x1 along"},
        {"text": f"send bearer {R} along"},
    ),
    ("pem_block", {"text": f"key:\n{PEM}\ndone"}, {"text": "key:\n[REDACTED:private_key]\ndone"}),
    (
        "bearer_header_text",
        {"text": "Authorization: Bearer Zm9vOmJhcg.x1"},
        {"text": f"Authorization: Bearer {R}"},
    ),
    (
        "basic_header_text",
        {"text": "authorization: Basic Zm9vOmJhcg=="},
        {"text": f"authorization: Basic {R}"},
    ),
    (
        "json_in_a_string",
        {"output": '{"user": "ann", "password": "hunter2"}'},
        {"output": f'{{"user": "ann", "password": "{R}"}}'},
    ),
    (
        "repr_in_a_string",
        {"output": "{'user': 'ann', 'api_key': 'hunter2'}"},
        {"output": f"{{'user': 'ann', 'api_key': '{R}'}}"},
    ),
    ("assignment", {"cmd": "login password=hunter2 --v"}, {"cmd": f"login password={R} --v"}),
]

#: Values the table must leave exactly as they are.
ORDINARY: list[tuple[str, Any]] = [
    (
        "author_keys",
        {"author": "Ann", "authority": "ICANN", "authored_by": "Bo", "authorities": ["x"]},
    ),
    (
        "not_secret_keys",
        {
            "auth_method": "oauth",
            "oauth_provider": "github",
            "credentials_path": "/etc/app/creds.json",
            "jwt_expiry": 3600,
            "signature": "def f(x): ...",
            "token_usage": {"input_tokens": 10, "max_tokens": 20},
            "keyword": "x",
            "secretary": "Jo",
            "session_id": "s-1",
        },
    ),
    (
        "prose",
        {
            "text": "The author cited the authority; a bearer of good news. Basic auth is "
            "deprecated. Use sk-learn pipelines and task-sk-flow. Meet at 12:30:45.",
        },
    ),
    (
        "urls",
        {
            "a": "https://example.com/docs?page=2&sort=asc#intro",
            "b": "postgresql://db.internal:5432/orders",
            "c": "https://host:8080/path@v2",
            "d": "see key=value syntax, max_tokens=100, x == y, a=b",
        },
    ),
    (
        "near_tokens",
        {
            "a": "eyJ is how base64 JSON starts",
            "b": "akiaiosfodnn7example is lower case",
            "c": "ghp_short",
            "d": "xoxb-123",
            "e": "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----",
        },
    ),
    ("pairs_of_words", {"tags": ["password", "reset"], "pair": [["token", 3], "x"]}),
]
