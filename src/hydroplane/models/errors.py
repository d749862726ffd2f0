"""The models layer's exceptions: every refusal of a file, a prompt or a request names what and where."""

from hydroplane.errors import HydroplaneError


class ModelError(HydroplaneError):
    """A model file, architecture or request hydroplane.models cannot serve (the message says which and why)."""


class TokenizerError(ModelError):
    """A vocabulary of a kind the SentencePiece tokenizer does not run, or ids outside it."""


class ContextError(ModelError):
    """A generation that would run past the KV cache's `context` positions."""
