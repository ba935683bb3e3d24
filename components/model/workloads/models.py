"""What the stack knows of the models it serves (pure Python): each model's context, the most tokens vLLM lets a
sequence hold.

vLLM derives a model's maximum length from its config.json (max_position_embeddings; a multimodal model's
text_config) and refuses a larger --max-model-len at start unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (vllm-tpu 0.32.0
vllm/config/model.py `_get_and_verify_max_len`: "User-specified max_model_len (...) is greater than the derived
max_model_len"): on TPUs, after the slices were provisioned and the weights loaded. The plan refuses it first, for the
models listed here, when vLLM loads that model (from Hugging Face, or a gs:// copy of its directory named after it);
for any other model or weights the engine's own check is the only one.

Each value is max_position_embeddings of the model's config.json on Hugging Face (text_config for Gemma 3), as
published by its owner; ids compare case-insensitively, as the Hub resolves them.
"""

from __future__ import annotations

from typing import Optional

_LLAMA_3_1 = 131_072
CONTEXT: dict[str, int] = {
    **{f"meta-llama/{m}": 4_096 for m in ("Llama-2-7b-hf", "Llama-2-7b-chat-hf", "Llama-2-13b-hf", "Llama-2-13b-chat-hf",
                                           "Llama-2-70b-hf", "Llama-2-70b-chat-hf")},
    **{f"meta-llama/{m}": 8_192 for m in ("Meta-Llama-3-8B", "Meta-Llama-3-8B-Instruct", "Meta-Llama-3-70B",
                                           "Meta-Llama-3-70B-Instruct")},
    **{f"meta-llama/{m}": _LLAMA_3_1 for m in (
        "Llama-3.1-8B", "Llama-3.1-8B-Instruct", "Llama-3.1-70B", "Llama-3.1-70B-Instruct", "Llama-3.1-405B",
        "Llama-3.1-405B-Instruct", "Llama-3.1-405B-FP8", "Llama-3.1-405B-Instruct-FP8", "Llama-3.2-1B",
        "Llama-3.2-1B-Instruct", "Llama-3.2-3B", "Llama-3.2-3B-Instruct", "Llama-3.3-70B-Instruct")},
    **{f"google/{m}": 8_192 for m in ("gemma-2-2b", "gemma-2-2b-it", "gemma-2-9b", "gemma-2-9b-it", "gemma-2-27b", "gemma-2-27b-it")},
    "google/gemma-3-1b-it": 32_768,
    **{f"google/{m}": 131_072 for m in ("gemma-3-4b-it", "gemma-3-12b-it", "gemma-3-27b-it")},
    **{f"Qwen/{m}": 32_768 for m in ("Qwen2.5-7B-Instruct", "Qwen2.5-14B-Instruct", "Qwen2.5-32B-Instruct", "Qwen2.5-72B-Instruct")},
    **{f"Qwen/{m}": 40_960 for m in ("Qwen3-0.6B", "Qwen3-1.7B", "Qwen3-4B", "Qwen3-8B", "Qwen3-14B", "Qwen3-32B",
                                      "Qwen3-30B-A3B", "Qwen3-235B-A22B")},
    "mistralai/Mistral-7B-Instruct-v0.3": 32_768,
    "mistralai/Mixtral-8x7B-Instruct-v0.1": 32_768,
    "mistralai/Mixtral-8x22B-Instruct-v0.1": 65_536,
    "deepseek-ai/DeepSeek-V3": 163_840,
    "deepseek-ai/DeepSeek-R1": 163_840,
}
_BY_ID = {k.lower(): v for k, v in CONTEXT.items()}


def context(model: str) -> Optional[int]:
    """The model's context (tokens), or None when the stack does not know the model."""
    return _BY_ID.get(model.lower())
