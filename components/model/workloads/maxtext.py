"""Facts of the MaxText engine inside the pinned JetStream image (jetstream-pathways v0.2.0) that a serve workload's
arguments must agree with. That image carries a MaxText of early 2025: its config is MaxText/configs/base.yml and its
tokenizers are under assets/ at the repository root (Google's disaggregated serving manifest for that image passes
`tokenizer_path=assets/tokenizer.llama2`; MaxText moved them to src/MaxText/assets on 2025-09-11, fd110b41e).

Tokenizers: base.yml's default, `assets/tokenizer.llama2` (MaxText 21ec958ea, 2024-02-14), is Llama 2's 32,000-token
vocabulary; any other model decodes nonsense with it. The path and type of each family are those of MaxText's own
end-to-end scripts (AI-Hypercomputer/maxtext, end_to_end/tpu/<family>/..., at 95985e5, the layout the image has):
llama2 `tpu/llama2/70b/2_test_llama2_70b.sh`; llama3 `tpu/llama3/8b/2_test_llama3_8b.sh`; llama3.1
`tpu/llama3.1/{8b,70b,405b}/2_test_*.sh` (tokenizer_type=tiktoken, which MaxText asserts for that file since
94147399, 2025-04-02); llama3.3 `tpu/llama3.3/70b/2_test_llama3.3_70b.sh`; gemma and gemma2 `tpu/gemma/7b/2_test_gemma.sh`,
`tpu/gemma2/*`; gemma3 `tpu/gemma3/*/test_gemma3.sh`; mistral-7b `tpu/mistral/7b/test_mistral-7b.sh`; mixtral
`tpu/mixtral/8x7b/2_test_mixtral.sh` (mistral-v1), `tpu/mixtral/8x22b/2_test_mixtral.sh` (mistral-v3). Families whose
tokenizer is a Hugging Face one (llama4, deepseek, qwen3) have no file in the image: serve.tokenizer names it.

The ICI mesh: MaxText's `fill_unspecified_mesh_axes` (MaxText/max_utils.py; src/maxtext/utils/max_utils.py at HEAD)
allows at most one axis of -1, fills it with the devices per slice over the product of the others, and asserts
"Number of devices per slice {n} does not match the product of the ICI parallelism {p}". base.yml at MaxText's HEAD
leaves `ici_fsdp_parallelism: -1` and every other ICI axis 1; Google's disaggregated manifest for the image passes
`ici_tensor_parallelism=-1` with base.yml, so the image's fsdp default may be 1: the check refuses only what fails
either way (two -1 given, a product that does not divide the chips, or every axis fixed by the stack with fsdp given
and a product other than the chips).
"""

from __future__ import annotations

import math
import re
from typing import Literal, Optional

TokenizerType = Literal["sentencepiece", "tiktoken", "huggingface"]
DEFAULT_CONFIG_FILE = "MaxText/configs/base.yml"
# base.yml's own unspecified ICI axis (filled from the device count)
BASE_UNSPECIFIED_AXIS = "fsdp"

# model_name prefix -> (tokenizer_path in the image, tokenizer_type); the longest prefix that matches wins
TOKENIZERS: dict[str, tuple[str, TokenizerType]] = {
    "llama2-": ("assets/tokenizer.llama2", "sentencepiece"),
    "llama3-": ("assets/tokenizer_llama3.tiktoken", "tiktoken"),
    "llama3.1-": ("assets/tokenizer_llama3.tiktoken", "tiktoken"),
    "llama3.3-": ("assets/tokenizer_llama3.tiktoken", "tiktoken"),
    "gemma-": ("assets/tokenizer.gemma", "sentencepiece"),
    "gemma2-": ("assets/tokenizer.gemma", "sentencepiece"),
    "gemma3-": ("assets/tokenizer.gemma3", "sentencepiece"),
    "mistral-7b": ("assets/tokenizer.mistral-v1", "sentencepiece"),
    "mixtral-8x7b": ("assets/tokenizer.mistral-v1", "sentencepiece"),
    "mixtral-8x22b": ("assets/tokenizer.mistral-v3", "sentencepiece"),
}


def known_tokenizer(model: str) -> Optional[tuple[str, TokenizerType]]:
    """The tokenizer MaxText's own scripts pair with `model` (a model_name), or None when the image has none for it."""
    matches = [prefix for prefix in TOKENIZERS if model == prefix or (prefix.endswith("-") and model.startswith(prefix))]
    return TOKENIZERS[max(matches, key=len)] if matches else None


def families_of(path: str) -> list[str]:
    """The model families whose tokenizer `path` is, among the image's files (TOKENIZERS): none for another path."""
    return [prefix.rstrip("-") for prefix, (p, _) in TOKENIZERS.items() if p == image_file(path)]


_IMAGE_FILES = "assets/"
_HF_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
# what a tokenizer file is named, never a Hugging Face repository
_FILE_SUFFIXES = (".model", ".json", ".tiktoken", ".txt", ".vocab", ".spm")


def image_file(path: str) -> str:
    """A path into the image's assets as TOKENIZERS names it (/deps/assets/tokenizer.llama2 -> assets/tokenizer.llama2)."""
    at = path.rfind("/" + _IMAGE_FILES)
    return path[at + 1:] if at >= 0 else path


def tokenizer_format(path: str) -> Optional[TokenizerType]:
    """The tokenizer_type MaxText must be given for `path`: a .tiktoken file is tiktoken (MaxText asserts it), a file of
    the image its family's, a Hugging Face id huggingface; None when the path says nothing (another file)."""
    if path.endswith(".tiktoken"):
        return "tiktoken"
    known: dict[str, TokenizerType] = {p: kind for p, kind in TOKENIZERS.values()}
    if image_file(path) in known:
        return known[image_file(path)]
    if not path.startswith(_IMAGE_FILES) and _HF_ID.fullmatch(path) and not path.endswith(_FILE_SUFFIXES):
        return "huggingface"
    return None


def mesh_problem(parallelism: dict[str, int], chips: int, config_file: str) -> Optional[str]:
    """Why MaxText would stop at start with these ICI axes on a slice of `chips` devices, or None."""
    unspecified = [axis for axis, n in parallelism.items() if n == -1]
    if len(unspecified) > 1:
        return (f"{', '.join(unspecified)} are all -1: MaxText fills at most one unspecified axis from the "
                f"{chips} chips of the slice")
    product = math.prod(n for n in parallelism.values() if n != -1)
    if chips % product:
        return (f"the axes multiply to {product}, which does not divide the slice's {chips} chips (MaxText: "
                f"\"Number of devices per slice {chips} does not match the product of the ICI parallelism\")")
    # with base.yml every axis not given is 1 but fsdp, which is -1: when fsdp is given too, nothing is left to fill
    if config_file == DEFAULT_CONFIG_FILE and not unspecified and BASE_UNSPECIFIED_AXIS in parallelism and product != chips:
        return (f"the axes multiply to {product}, not the slice's {chips} chips, and none is left to fill (base.yml "
                f"fills only fsdp, given here); make the product {chips} or set one axis to -1")
    return None
