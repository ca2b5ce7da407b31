"""Real provider error bodies, one per provider and case, each shaped as the provider sent it.

Every entry names where the body was recorded (a public issue thread quoting the raw response, or the
provider's documentation). Numbers, organisation ids and request ids are kept as recorded or replaced
by placeholders of the same shape; the wording, the nesting and the `code`/`type` fields are the
provider's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ProviderError:
    name: str
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


# -- context overflow ---------------------------------------------------------------------------------

OVERFLOWS = [
    # OpenAI: chathub-dev/chathub#126 (raw body).
    ProviderError(
        "openai",
        400,
        {
            "error": {
                "message": "This model's maximum context length is 4097 tokens. However, your messages "
                "resulted in 4294 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ),
    # Azure OpenAI (gpt-5 deployments): BerriAI/litellm#15968 — the wording alone is relied on here.
    ProviderError(
        "azure",
        400,
        {
            "error": {
                "message": "Input tokens exceed the configured limit of 272000 tokens. Your messages "
                "resulted in 509178 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": None,
            }
        },
    ),
    # DeepSeek: FoundationAgents/OpenManus#79 — note the generic code `invalid_request_error`.
    ProviderError(
        "deepseek",
        400,
        {
            "error": {
                "message": "This model's maximum context length is 65536 tokens. However, you requested "
                "66343 tokens (62247 in the messages, 4096 in the completion). Please reduce the length "
                "of the messages or completion.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_request_error",
            }
        },
    ),
    # Groq: letta-ai/letta#1963 and OpenHands/OpenHands#1902.
    ProviderError(
        "groq",
        400,
        {
            "error": {
                "message": "Please reduce the length of the messages or completion.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ),
    # Cerebras: cline/cline#5140 («400 Please reduce the length of the messages or completion. Current
    # length is 42328 while limit is 40000»); Cerebras sends the message without a code.
    ProviderError(
        "cerebras",
        400,
        {
            "message": "Please reduce the length of the messages or completion. Current length is 42328 "
            "while limit is 40000",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "",
        },
    ),
    # Gemini (OpenAI-compatible endpoint): a list, google-gemini/gemini-cli#6678.
    ProviderError(
        "gemini",
        400,
        [
            {
                "error": {
                    "code": 400,
                    "message": "The input token count (1200293) exceeds the maximum number of tokens "
                    "allowed (1048576).",
                    "errors": [
                        {
                            "message": "The input token count (1200293) exceeds the maximum number of "
                            "tokens allowed (1048576).",
                            "domain": "global",
                            "reason": "badRequest",
                        }
                    ],
                    "status": "INVALID_ARGUMENT",
                }
            }
        ],
    ),
    # xAI: cline/cline#3120 («400 "This model's maximum prompt length is 131072 but the request
    # contains 136973 tokens."»), in xAI's error envelope.
    ProviderError(
        "xai",
        400,
        {
            "code": "Client specified an invalid argument",
            "error": "This model's maximum prompt length is 131072 but the request contains 136973 tokens.",
        },
    ),
    # Together: OpenAI envelope around TGI's validation text (huggingface/chat-ui#1149 wording).
    ProviderError(
        "together",
        400,
        {
            "error": {
                "message": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8193. "
                "Given: 6204 `inputs` tokens and 2047 `max_new_tokens`",
                "type": "invalid_request_error",
                "param": "max_tokens",
                "code": None,
            }
        },
    ),
    # Text Generation Inference: HTTP 422 with `error`/`error_type` (huggingface/llm-vscode#94).
    ProviderError(
        "tgi",
        422,
        {
            "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Given: "
            "3474 `inputs` tokens and 60 `max_new_tokens`",
            "error_type": "validation",
        },
    ),
    # vLLM before 0.6: OpenAI's wording (yakGPT/yakGPT#13 quotes the same text from vLLM-served models).
    ProviderError(
        "vllm-old",
        400,
        {
            "object": "error",
            "message": "This model's maximum context length is 4096 tokens. However, you requested 4295 "
            "tokens (3245 in the messages, 1050 in the completion). Please reduce the length of the "
            "messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    # vLLM current: OpenBMB/MiniCPM-V#1048 (400 «The decoder prompt (length 2136) is longer than …»).
    ProviderError(
        "vllm",
        400,
        {
            "error": {
                "message": "The decoder prompt (length 2136) is longer than the maximum model length of "
                "2048. Make sure that `max_model_len` is no smaller than the number of text tokens.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        },
    ),
    # llama.cpp server, HTTP 400: oobabooga/textgen#7257.
    ProviderError(
        "llamacpp-400",
        400,
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size. try increasing the context "
                "size or enable context shift",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 14429,
                "n_ctx": 8192,
            }
        },
    ),
    # llama.cpp server, HTTP 500 (must not be retried as a server error): ggml-org/llama.cpp#19774.
    ProviderError(
        "llamacpp-500",
        500,
        {"error": {"code": 500, "message": "Context size has been exceeded.", "type": "server_error"}},
    ),
    # LM Studio: Gitlawb/openclaude#353 (400, a bare string under `error`).
    ProviderError(
        "lmstudio",
        400,
        {
            "error": "The number of tokens to keep from the initial prompt is greater than the context "
            "length (n_keep: 13055>= n_ctx: 4096). Try to load the model with a larger context length, "
            "or provide a shorter input."
        },
    ),
    # Ollama with truncation off: llama.cpp's body nested as a JSON string (ollama/ollama#16800).
    ProviderError(
        "ollama",
        400,
        {
            "error": '{"error":{"code":400,"message":"request (351 tokens) exceeds the available context '
            'size (256 tokens), try increasing it","type":"exceed_context_size_error",'
            '"n_prompt_tokens":351,"n_ctx":256}}'
        },
    ),
    # Z.ai / Zhipu: zeroclaw-labs/zeroclaw#4124 (code "1261").
    ProviderError("zai", 400, {"error": {"code": "1261", "message": "Prompt exceeds max length"}}),
    # Moonshot: MoonshotAI/kimi-cli#2011.
    ProviderError(
        "moonshot",
        400,
        {
            "error": {
                "message": "Invalid request: Your request exceeded model token limit: 262144 (requested: "
                "269030)",
                "type": "invalid_request_error",
            }
        },
    ),
    # Anthropic-compatible endpoints: docker/docker-agent#569 (raw body).
    ProviderError(
        "anthropic-compatible",
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000, "
                "decrease input length or `max_tokens` and try again",
            },
            "request_id": "req_011CUB2XUHWkFnQzxcKBbjpF",
        },
    ),
]

# «Request too large» — a per-minute token cap smaller than the request: shrink, never resend as is.
TOO_LARGE = [
    # Groq 413: cottongeeks/podscript#20 (raw body).
    ProviderError(
        "groq-413",
        413,
        {
            "error": {
                "message": "Request too large for model `llama-3.3-70b-versatile` in organization "
                "`org_01j2g5d88hfvjrgw64hnapqk8y` service tier `on_demand` on tokens per minute (TPM): "
                "Limit 6000, Requested 10338, please reduce your message size and try again. Visit "
                "https://console.groq.com/docs/rate-limits for more information.",
                "type": "tokens",
                "code": "rate_limit_exceeded",
            }
        },
    ),
    # OpenAI 429: vanna-ai/vanna-flask#11.
    ProviderError(
        "openai-429",
        429,
        {
            "error": {
                "message": "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested "
                "342389. The input or output tokens must be reduced in order to run successfully. Visit "
                "https://platform.openai.com/account/rate-limits to learn more.",
                "type": "tokens",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        },
    ),
]

# -- not an overflow ----------------------------------------------------------------------------------

# A field over its limit: a bad request (summarising the conversation would not help).
FIELD_TOO_LONG = [
    # OpenAI: getsentry/sentry-mcp#106 (raw body).
    ProviderError(
        "openai-tool-description",
        400,
        {
            "error": {
                "message": "Invalid 'tools[13].function.description': string too long. Expected a string "
                "with maximum length 1024, but got a string with length 1103 instead.",
                "type": "invalid_request_error",
                "param": "tools[13].function.description",
                "code": "string_above_max_length",
            }
        },
    ),
    # OpenAI: the same check on a tool name (64 characters).
    ProviderError(
        "openai-tool-name",
        400,
        {
            "error": {
                "message": "Invalid 'tools[0].function.name': string too long. Expected a string with "
                "maximum length 64, but got a string with length 71 instead.",
                "type": "invalid_request_error",
                "param": "tools[0].function.name",
                "code": "string_above_max_length",
            }
        },
    ),
]

# A rate limit that passes with time, although it carries quota or billing words.
RATE_LIMITS = [
    # Groq 429 «Rate limit reached … Need more tokens? … /settings/billing»: elizaOS/eliza#4040.
    ProviderError(
        "groq-rate-limit",
        429,
        {
            "error": {
                "message": "Rate limit reached for model `llama-3.1-8b-instant` in organization "
                "`org_01j5b4pz9jff492fq686vypsx6` service tier `on_demand` on tokens per minute (TPM): "
                "Limit 6000, Used 5034, Requested 1443. Please try again in 4.77s. Need more tokens? "
                "Upgrade to Dev Tier today at https://console.groq.com/settings/billing",
                "type": "tokens",
                "code": "rate_limit_exceeded",
            }
        },
        {"retry-after": "0"},
    ),
    # Gemini free tier, per minute: diegosouzapw/OmniRoute#9504 («You exceeded your current quota,
    # please check your plan and billing details … Please retry in 36.4s», RetryInfo 36s).
    ProviderError(
        "gemini-per-minute",
        429,
        [
            {
                "error": {
                    "code": 429,
                    "message": "You exceeded your current quota, please check your plan and billing "
                    "details. For more information on this error, head to: "
                    "https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: "
                    "generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, "
                    "model: gemini-2.5-flash\nPlease retry in 36.429760048s.",
                    "status": "RESOURCE_EXHAUSTED",
                    "details": [
                        {
                            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                            "violations": [
                                {
                                    "quotaMetric": "generativelanguage.googleapis.com/"
                                    "generate_content_free_tier_requests",
                                    "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                                }
                            ],
                        },
                        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "36s"},
                    ],
                }
            }
        ],
    ),
]

# Out of credit for good: no Retry-After, no time window.
QUOTA = [
    # OpenAI insufficient_quota (openai-python README error table; body as the API sends it).
    ProviderError(
        "openai-quota",
        429,
        {
            "error": {
                "message": "You exceeded your current quota, please check your plan and billing details. "
                "For more information on this error, read the docs: "
                "https://platform.openai.com/docs/guides/error-codes/api-errors.",
                "type": "insufficient_quota",
                "param": None,
                "code": "insufficient_quota",
            }
        },
    ),
]
