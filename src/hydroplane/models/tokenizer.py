"""The SentencePiece (SPM) tokenizer of a GGUF vocabulary, as llama.cpp runs it (src/llama-vocab.cpp).

    tok = Tokenizer.from_metadata(gguf_file.metadata)
    ids = tok.tokenize("The capital of France is")            # [2, 818, 5279, 529, 7001, 563] on Gemma 3
    tok.detokenize(ids)                                        # "The capital of France is"

Steps, each as llama.cpp does it:
1. Special tokens split the text first: every user-defined token always, control and unknown tokens only with
   `special=True` (so "<start_of_turn>" typed by a user stays text), longest token text first.
2. Each text piece gets a leading space when `add_space_prefix` is set and it starts the text or follows a special
   token; spaces become "▁" (U+2581).
3. The piece is split into characters, and the adjacent pair whose concatenation is a vocabulary entry with the
   highest score is merged, again and again (ties: the leftmost pair).
4. A symbol that is no entry is re-split along the merges that made it; what is left is byte fallback: each UTF-8
   byte becomes its "<0xXX>" token.
5. BOS first when `bos=True` and the file's `add_bos_token` (llama.cpp's add_special), EOS last when
   `add_eos_token`.

`detokenize` is llama_detokenize (control tokens dropped unless `special=True`, user-defined ones as written,
"▁" back to spaces, byte tokens as their bytes, one leading space dropped when add_space_prefix); an
`IncrementalDetokenizer` gives text piece by piece and never splits a UTF-8 character. A vocabulary of another
kind (`tokenizer.ggml.model` = "gpt2" BPE, "bert" ...) is refused with a TokenizerError.
"""

from __future__ import annotations

import codecs
import heapq
from dataclasses import dataclass, field

from hydroplane.models.errors import TokenizerError

# tokenizer.ggml.token_type values (llama.cpp's llama_token_type)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
SPACE = "\u2581"
# Token texts llama.cpp treats as ends of generation beside the file's eos / eot / eom ids.
EOG_TEXTS = ("<end_of_turn>", "<|eot_id|>", "<|im_end|>", "<|end|>", "<|endoftext|>", "<|eom_id|>",
             "<|end_of_text|>", "<EOT>")


@dataclass
class Tokenizer:
    """A SentencePiece vocabulary: token texts, scores and types, and the file's special-token settings."""

    tokens: list[str]
    scores: list[float]
    types: list[int]
    bos_id: int | None = None
    eos_id: int | None = None
    add_bos: bool = True
    add_eos: bool = False
    add_space_prefix: bool = True
    eog_ids: frozenset[int] = frozenset()
    token_to_id: dict[str, int] = field(init=False, repr=False)
    special_order: list[int] = field(init=False, repr=False)

    def __post_init__(self):
        if not (len(self.tokens) == len(self.scores) == len(self.types)):
            raise TokenizerError(f"vocabulary of {len(self.tokens)} tokens with {len(self.scores)} scores and "
                                 f"{len(self.types)} types")
        self.token_to_id = {}
        for i, text in enumerate(self.tokens):
            self.token_to_id[text] = i  # a repeated text maps to its last id, as in llama.cpp
        special = [i for i, t in enumerate(self.types) if t in (CONTROL, USER_DEFINED, UNKNOWN) and self.tokens[i]]
        self.special_order = sorted(special, key=lambda i: -len(self.tokens[i].encode("utf-8", "surrogateescape")))

    @classmethod
    def from_metadata(cls, metadata: dict, path="the file") -> Tokenizer:
        """The tokenizer of a GGUF file's metadata (the `tokenizer.ggml.*` keys)."""
        model = metadata.get("tokenizer.ggml.model")
        if model != "llama":
            kind = {"gpt2": "a GPT-2 style BPE vocabulary", "bert": "a WordPiece vocabulary",
                    "t5": "a Unigram vocabulary"}.get(model, f"a {model!r} vocabulary")
            raise TokenizerError(f"{path}: tokenizer.ggml.model is {model!r} ({kind}); hydroplane.models runs "
                                 "SentencePiece vocabularies only (tokenizer.ggml.model = 'llama')")
        tokens = metadata.get("tokenizer.ggml.tokens")
        if not tokens:
            raise TokenizerError(f"{path}: the metadata has no tokenizer.ggml.tokens")
        scores = metadata.get("tokenizer.ggml.scores") or [0.0] * len(tokens)
        types = metadata.get("tokenizer.ggml.token_type") or [NORMAL] * len(tokens)
        bos = metadata.get("tokenizer.ggml.bos_token_id", 1)
        eos = metadata.get("tokenizer.ggml.eos_token_id", 2)
        eog = {i for i in (eos, metadata.get("tokenizer.ggml.eot_token_id"),
                           metadata.get("tokenizer.ggml.eom_token_id")) if i is not None and 0 <= i < len(tokens)}
        eog |= {i for i, text in enumerate(tokens) if text in EOG_TEXTS}
        return cls(list(tokens), [float(s) for s in scores], [int(t) for t in types], bos_id=bos, eos_id=eos,
                   add_bos=bool(metadata.get("tokenizer.ggml.add_bos_token", True)),
                   add_eos=bool(metadata.get("tokenizer.ggml.add_eos_token", False)),
                   add_space_prefix=bool(metadata.get("tokenizer.ggml.add_space_prefix", True)),
                   eog_ids=frozenset(eog))

    @property
    def n_vocab(self) -> int:
        return len(self.tokens)

    # -- text -> ids -----------------------------------------------------------------------------------------
    def tokenize(self, text: str, bos: bool = True, special: bool = False) -> list[int]:
        """Token ids of `text` (llama_tokenize(add_special=bos, parse_special=special))."""
        if not isinstance(text, str):
            raise TokenizerError(f"tokenize takes a str, not {type(text).__name__}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:  # a lone surrogate ("\ud800"): no UTF-8, so no tokens
            raise TokenizerError(f"tokenize takes text that UTF-8 can hold: {err.reason} at index "
                                 f"{err.start}") from None
        out: list[int] = []
        if bos and self.add_bos:
            if self.bos_id is None:
                raise TokenizerError("the vocabulary asks for a BOS token but names none")
            out.append(self.bos_id)
        prev_special = True
        for piece in self._partition(text, special):
            if isinstance(piece, int):
                out.append(piece)
                prev_special = True
                continue
            if self.add_space_prefix and prev_special:
                piece = " " + piece
            self._encode_piece(piece.replace(" ", SPACE), out)
            prev_special = False
        if bos and self.add_eos and self.eos_id is not None:
            out.append(self.eos_id)
        return out

    def _partition(self, text: str, special: bool) -> list[str | int]:
        """The text split at special tokens: str pieces of plain text and int ids, in order."""
        pieces: list[str | int] = [text] if text else []
        for token in self.special_order:
            if not special and self.types[token] in (CONTROL, UNKNOWN):
                continue
            needle = self.tokens[token]
            split: list[str | int] = []
            for piece in pieces:
                if isinstance(piece, int) or needle not in piece:
                    split.append(piece)
                    continue
                parts = piece.split(needle)
                for j, part in enumerate(parts):
                    if j:
                        split.append(token)
                    if part:
                        split.append(part)
            pieces = split
        return pieces

    def _encode_piece(self, text: str, out: list[int]) -> None:
        """SentencePiece's merges on one escaped piece of text (llm_tokenizer_spm_session)."""
        n = len(text)
        if not n:
            return
        start = list(range(n))
        length = [1] * n
        prev = list(range(-1, n - 1))
        nxt = list(range(1, n)) + [-1]
        queue: list[tuple[float, int, int, int]] = []
        rev_merge: dict[str, tuple[int, int]] = {}

        def add_bigram(left: int, right: int) -> None:
            if left == -1 or right == -1:
                return
            pair = text[start[left]:start[left] + length[left] + length[right]]
            token = self.token_to_id.get(pair)
            if token is None:
                return
            heapq.heappush(queue, (-self.scores[token], left, right, len(pair)))
            rev_merge[pair] = (left, right)

        for i in range(1, n):
            add_bigram(i - 1, i)
        while queue:
            _, left, right, size = heapq.heappop(queue)
            if length[left] == 0 or length[right] == 0 or length[left] + length[right] != size:
                continue
            length[left] += length[right]
            length[right] = 0
            nxt[left] = nxt[right]
            if nxt[right] >= 0:
                prev[nxt[right]] = left
            add_bigram(prev[left], left)
            add_bigram(left, nxt[left])

        i = 0
        while i != -1:
            stack = [(start[i], length[i])]
            while stack:  # resegment: a symbol that is no token splits along its merges, else falls back to bytes
                s, m = stack.pop()
                piece = text[s:s + m]
                token = self.token_to_id.get(piece)
                if token is not None:
                    out.append(token)
                elif piece in rev_merge:
                    left, right = rev_merge[piece]
                    stack.append((start[right], length_of(start, right, piece, left)))
                    stack.append((start[left], start[right] - start[left]))
                else:
                    out.extend(self.byte_token(b) for b in piece.encode("utf-8", "surrogateescape"))
            i = nxt[i]

    def byte_token(self, byte: int) -> int:
        """The id of one byte's fallback token ("<0xXX>", else the byte itself as text)."""
        token = self.token_to_id.get(f"<0x{byte:02X}>")
        if token is None:
            token = self.token_to_id.get(chr(byte)) if byte < 0x80 else None
        if token is None:
            raise TokenizerError(f"the vocabulary has no byte-fallback token for byte 0x{byte:02X}")
        return token

    # -- ids -> text -----------------------------------------------------------------------------------------
    def _check_id(self, token) -> int:
        if isinstance(token, bool) or (not isinstance(token, int) and not hasattr(token, "__index__")):
            raise TokenizerError(f"token ids are integers, not {type(token).__name__}")
        token = int(token)
        if not 0 <= token < len(self.tokens):
            raise TokenizerError(f"token id {token} is outside the vocabulary of {len(self.tokens)}")
        return token

    def piece(self, token: int, special: bool = False) -> bytes:
        """The bytes one token stands for (llama_token_to_piece)."""
        token = self._check_id(token)
        kind, text = self.types[token], self.tokens[token]
        if kind in (CONTROL, UNKNOWN):
            return text.encode("utf-8", "surrogateescape") if special else b""
        if kind == USER_DEFINED:
            return text.encode("utf-8", "surrogateescape")
        if kind == NORMAL:
            return text.replace(SPACE, " ").encode("utf-8", "surrogateescape")
        if kind == BYTE:
            return bytes([int(text[3:5], 16)])
        return b""  # unused tokens

    def detokenize_bytes(self, ids, special: bool = False) -> bytes:
        pieces = []
        for j, token in enumerate(ids):
            piece = self.piece(token, special)
            if j == 0 and self.add_space_prefix and piece.startswith(b" "):
                piece = piece[1:]
            pieces.append(piece)
        return b"".join(pieces)

    def detokenize(self, ids, special: bool = False) -> str:
        """The text of `ids` (llama_detokenize(remove_special=False, unparse_special=special)); bytes that are no
        UTF-8 become U+FFFD."""
        if isinstance(ids, str | bytes) or not hasattr(ids, "__iter__"):
            raise TokenizerError(f"detokenize takes a sequence of token ids, not {type(ids).__name__}")
        return self.detokenize_bytes(list(ids), special).decode("utf-8", "replace")

    def is_eog(self, token: int) -> bool:
        return int(token) in self.eog_ids

    def incremental(self, special: bool = False) -> IncrementalDetokenizer:
        return IncrementalDetokenizer(self, special)


def length_of(start: list[int], right: int, piece: str, left: int) -> int:
    """The length of the right half of a merged symbol whose left half starts at start[left]."""
    return len(piece) - (start[right] - start[left])


class IncrementalDetokenizer:
    """Text of a stream of token ids, piece by piece: `push(id)` returns the new text whose characters are
    complete (a character whose UTF-8 bytes are spread over byte tokens waits for its last byte); `flush()` the
    rest (U+FFFD for an unfinished character)."""

    def __init__(self, tokenizer: Tokenizer, special: bool = False):
        self.tokenizer, self.special = tokenizer, special
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.first = True

    def push(self, token: int) -> str:
        piece = self.tokenizer.piece(token, self.special)
        if self.first and self.tokenizer.add_space_prefix and piece.startswith(b" "):
            piece = piece[1:]
        self.first = False
        return self.decoder.decode(piece)

    def flush(self) -> str:
        return self.decoder.decode(b"", final=True)
