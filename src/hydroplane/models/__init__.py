"""hydroplane.models: GGUF checkpoints (architectures gemma3 and llama) run on hydroplane's ops.

    model = hydroplane.models.load("gemma3-270m")           # or a path to a .gguf file; device=None | "ref" | N
    ids = model.tokenize("The capital of France is")
    model.logits(ids)                                        # float32 (len, n_vocab)
    for text in model.stream_text("The capital of France is", 16): print(text, end="")

Modules: arch (the architectures as data), gguf_file (reading a checkpoint), tokenizer (SentencePiece as
llama.cpp runs it), reference (the float64 NumPy forward pass), model (the model on the ops: KV cache, generate),
packaged (the gemma3-270m package), commands (`hydroplane generate`). docs/models.md says more.
Layer: models (above ops and quant).
"""

from hydroplane.models.arch import ARCHITECTURES, Architecture, Config, config_from_metadata
from hydroplane.models.errors import ContextError, ModelError, TokenizerError
from hydroplane.models.gguf_file import read_gguf
from hydroplane.models.model import Model
from hydroplane.models.packaged import resolve
from hydroplane.models.reference import Reference
from hydroplane.models.tokenizer import IncrementalDetokenizer, Tokenizer

__all__ = ["ARCHITECTURES", "Architecture", "Config", "ContextError", "IncrementalDetokenizer", "Model",
           "ModelError", "Reference", "Tokenizer", "TokenizerError", "config_from_metadata", "load", "read_gguf",
           "reference", "resolve"]


def load(path_or_name, device=None, context: int | None = None) -> Model:
    """The model of a GGUF file or a packaged name ("gemma3-270m") on `device` (None: the default device, "ref",
    or a Vulkan device number); `context` bounds its KV cache (default min(the file's, 2048) positions)."""
    return Model(read_gguf(resolve(path_or_name)), device=device, context=context)


def reference(path_or_name) -> Reference:
    """The float64 NumPy reference of a GGUF file or packaged name (models.reference)."""
    return Reference(read_gguf(resolve(path_or_name)))
