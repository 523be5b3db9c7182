"""The audit's tokenizer: loaded once by ``audit()``, and a deterministic fallback without one.

``audit(ds, tokenizer=...)`` accepts a path to ``tokenizer.json`` (or a folder holding one), a
``tokenizers.Tokenizer``, any object with a ``backend_tokenizer`` (a transformers fast tokenizer,
duck-typed: transformers is never imported), a Hugging Face Hub name, or None. None selects the
built-in fallback: whitespace-separated words, and every report labels the unit ``"words"``.

A resolved tokenizer is a :class:`TokenizerHandle`; it reaches rules as
``ctx.resources.tokenizer`` and features as ``batch.resources.tokenizer``. Its key (a hash of the
tokenizer's JSON) is what rules keep in their states and pass to features
(``batch.feature("tokens", tokenizer=key)``), so every rule shares one tokenization per batch and
states stay plain data. A handle pickles with its tokenizer's JSON and chat template: a worker
process gets it whole and never reads the tokenizer's files again. Thread settings are explicit:
the Rust thread pool size comes from ``RAYON_NUM_THREADS`` (set here to the CPU count unless the
user set it) and truncation and padding are switched off on a private copy, so lengths are the
full lengths.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, close_matches
from ..inputs.hub import hub_reachable as _hub_reachable

__all__ = ["WORDS_KEY", "TokenizerError", "TokenizerHandle", "resolve_tokenizer"]

WORDS_KEY = "words"
#: hash buckets of the word fallback's "vocabulary" (fixed memory for unigram counts)
WORD_BUCKETS = 1 << 18
_BYTE_FALLBACK_RE = re.compile(r"^<0x[0-9A-Fa-f]{2}>$")
#: (buckets, words) of a batch's distinct words, first occurrence first
WordNames = tuple[np.ndarray, list[str]]


class TokenizerError(ConfigError):
    """The tokenizer given to the audit cannot be loaded."""


class TokenizerHandle:
    """A loaded tokenizer (or the word fallback) with what the rules need from it."""

    def __init__(self, key: str, name: str, tokenizer: Any = None, chat_template: Any = None):
        self.key = key
        self.name = name
        self.tokenizer = tokenizer
        #: the tokenizer's chat template (a ChatTemplate), used to measure chat rows
        self.chat_template = chat_template
        self.unit = "tokens" if tokenizer is not None else "words"
        if tokenizer is None:
            self.vocab_size = WORD_BUCKETS
            self.unknown_table: np.ndarray | None = None
        else:
            self.vocab_size = int(tokenizer.get_vocab_size(with_added_tokens=True))
            self.unknown_table = self._unknown_table(tokenizer)

    @staticmethod
    def _unknown_table(tok: Any) -> np.ndarray:
        """Boolean table over ids: the unknown token and byte-fallback tokens (``<0x41>``)."""
        table = np.zeros(int(tok.get_vocab_size(with_added_tokens=True)), dtype=bool)
        unk = getattr(tok.model, "unk_token", None)
        if unk:
            uid = tok.token_to_id(unk)
            if uid is not None and uid < table.size:
                table[uid] = True
        if getattr(tok.model, "byte_fallback", False):
            for token, tid in tok.get_vocab(with_added_tokens=False).items():
                if tid < table.size and _BYTE_FALLBACK_RE.match(token):
                    table[tid] = True
        return table

    def describe(self) -> dict[str, Any] | None:
        """What the report records of the tokenizer (None for the word fallback)."""
        if self.tokenizer is None:
            return None
        return {
            "name": self.name,
            "hash": self.key,
            "vocab_size": self.vocab_size,
            "chat_template": self.chat_template.describe() if self.chat_template else None,
        }

    @classmethod
    def words(cls) -> TokenizerHandle:
        """The built-in fallback: whitespace words hashed into buckets (no files, no state)."""
        return cls(WORDS_KEY, "built-in whitespace words (no tokenizer given)")

    @property
    def given(self) -> bool:
        """A real tokenizer, not the word fallback."""
        return self.tokenizer is not None

    @property
    def can_produce_unknown(self) -> bool:
        return self.unknown_table is not None and bool(self.unknown_table.any())

    def token_name(self, token_id: int) -> str:
        """A token's name; a word bucket's words are not known here (no process-local table
        that a worker would lack): rules that show words keep the names in their state, from
        :meth:`encode_named`."""
        if self.tokenizer is None:
            return f"<word bucket {int(token_id)}>"
        name = self.tokenizer.id_to_token(int(token_id))
        return name if name is not None else f"<id {int(token_id)}>"

    def encode(self, texts: Any) -> tuple[np.ndarray, np.ndarray]:
        """Token ids of all rows concatenated (uint32) and per-row lengths (int64; -1 = null).

        ``texts`` is a pyarrow string array.
        """
        ids, lengths, _ = self.encode_named(texts)
        return ids, lengths

    def encode_named(
        self, texts: Any, *, special_tokens: bool = True
    ) -> tuple[np.ndarray, np.ndarray, WordNames | None]:
        """:meth:`encode`, plus for the word fallback the batch's distinct words with their
        buckets, in order of first occurrence (None with a tokenizer: ids name themselves).
        ``special_tokens=False`` for text a chat template rendered: it has its own."""
        if self.tokenizer is None:
            return self._encode_words(texts)
        import itertools

        values = texts.to_pylist()
        nulls = np.fromiter((v is None for v in values), dtype=bool, count=len(values))
        if nulls.any():
            values = ["" if v is None else v for v in values]
        encodings = self.tokenizer.encode_batch_fast(values, add_special_tokens=special_tokens)
        lengths = np.fromiter((len(e) for e in encodings), np.int64, len(encodings))
        total = int(lengths.sum())
        ids = np.fromiter(itertools.chain.from_iterable(e.ids for e in encodings), np.uint32, total)
        if nulls.any():
            # a null row contributes no tokens (special tokens of the empty string are dropped)
            keep = np.repeat(~nulls, lengths)
            ids = ids[keep]
            lengths[nulls] = -1
        return ids, lengths, None

    def _encode_words(self, texts: Any) -> tuple[np.ndarray, np.ndarray, WordNames | None]:
        import pyarrow.compute as pc
        import xxhash

        from .._arrow import fixed, one_chunk, take

        trimmed = pc.utf8_trim_whitespace(texts)
        words = pc.utf8_split_whitespace(trimmed)
        # through buffers: fill_null / equal with a Python scalar and to_numpy import pandas
        lengths = fixed(pc.list_value_length(words), null=-1).astype(np.int64)
        flat = pc.list_flatten(words)
        empty = fixed(pc.binary_length(trimmed), null=-1) == 0
        if empty.any():  # "" splits into one empty word
            lengths[empty] = 0
            flat = take(flat, np.flatnonzero(fixed(pc.binary_length(flat)) > 0))
        if len(flat) == 0:
            return np.zeros(0, np.uint32), lengths, None
        enc = one_chunk(pc.dictionary_encode(flat))
        uniques = enc.dictionary.to_pylist()
        h = xxhash.xxh3_64_intdigest
        buckets = np.fromiter(
            (h(w.encode("utf-8", "surrogatepass")) & (WORD_BUCKETS - 1) for w in uniques),
            np.uint32,
            len(uniques),
        )
        indices = fixed(enc.indices).astype(np.int64)
        return buckets[indices], lengths, (buckets, uniques)


def _set_threads() -> None:
    # The Rust pool reads this once, at first parallel use; respect a value the user set.
    os.environ.setdefault("RAYON_NUM_THREADS", str(os.cpu_count() or 1))


def _from_tokenizer(tok: Any, name: str, template: Any = None) -> TokenizerHandle:
    import xxhash
    from tokenizers import Tokenizer

    blob = tok.to_str()
    key = "tok-" + xxhash.xxh3_64_hexdigest(blob.encode())
    if template is not None:
        try:
            template.check()
        except ValueError as exc:
            raise TokenizerError(f"tokenizer {name}: {exc}.") from None
        key += "-tpl-" + template.hash  # the same tokens measured through another template
    copy = Tokenizer.from_str(blob)  # never change the caller's object
    copy.no_truncation()
    copy.no_padding()
    return TokenizerHandle(key, name, copy, template)


def resolve_tokenizer(spec: Any) -> TokenizerHandle:
    """A handle for ``spec`` (see the module docstring); raises :class:`TokenizerError`."""
    if spec is None:
        return TokenizerHandle.words()
    if isinstance(spec, TokenizerHandle):
        return spec
    _set_threads()
    from tokenizers import Tokenizer

    if isinstance(spec, Tokenizer):
        return _from_tokenizer(spec, "tokenizers.Tokenizer")
    backend = getattr(spec, "backend_tokenizer", None)
    if backend is not None:
        if not isinstance(backend, Tokenizer):
            raise TokenizerError(
                f"tokenizer: {type(spec).__name__}.backend_tokenizer is not a "
                "tokenizers.Tokenizer; pass a fast tokenizer or a tokenizer.json path."
            )
        from .chat_template import template_from_object

        name = getattr(spec, "name_or_path", None) or type(spec).__name__
        return _from_tokenizer(backend, name, template_from_object(spec))
    if isinstance(spec, (str, os.PathLike)):
        return _from_name(str(spec))
    raise TokenizerError(
        f"tokenizer={type(spec).__name__!r} is not supported: pass a path to tokenizer.json, a "
        "tokenizers.Tokenizer, a transformers fast tokenizer, a Hugging Face Hub name, or None "
        "(built-in word counts)."
    )


def _from_name(text: str) -> TokenizerHandle:
    from tokenizers import Tokenizer

    path = Path(text).expanduser()
    if path.is_dir():
        if not (path / "tokenizer.json").is_file():
            inside = sorted(p.name for p in path.iterdir() if p.suffix == ".json")[:10]
            raise TokenizerError(
                f"tokenizer: the folder {path} has no tokenizer.json"
                + (f" (its .json files: {', '.join(inside)})" if inside else "")
                + "; pass the path of the tokenizer.json itself, or save one there with "
                "`tokenizer.save_pretrained(folder)`."
            )
        path = path / "tokenizer.json"
    if path.is_file():
        try:
            tok = Tokenizer.from_file(str(path))
        except Exception as exc:
            raise TokenizerError(
                f"tokenizer: {path} is not a valid tokenizer.json ({exc}). Save one with "
                "`tokenizer.save('tokenizer.json')` or `AutoTokenizer...save_pretrained(dir)`."
            ) from None
        from .chat_template import find_template

        return _from_tokenizer(tok, str(path), find_template(path))
    if _looks_like_path(text):
        raise TokenizerError(
            f"tokenizer: {text} not found: no such file or folder.{_near(path)}{_HOW}"
        )
    cached = _cached_hub_file(text)
    if cached is not None:
        from .chat_template import find_template

        _cached_hub_file(text, "tokenizer_config.json")  # beside it in the snapshot, if cached
        return _from_tokenizer(Tokenizer.from_file(cached), text, find_template(Path(cached)))
    if not _hub_reachable():
        # fail in milliseconds with the fix, instead of half a minute of retries
        raise TokenizerError(
            f"tokenizer: {text!r} is not in the local Hugging Face cache (nor a local file: no "
            "such file), and the Hub cannot be reached; pass a local file instead: "
            "tokenizer='path/to/tokenizer.json' (save one with tokenizer.save(...) on a machine "
            "that has it)."
        )
    try:
        tok = Tokenizer.from_pretrained(text)
        config = _hub_file(text, "tokenizer_config.json")
    except Exception as exc:
        raise TokenizerError(
            f"tokenizer: could not load {text!r} from the Hugging Face Hub "
            f"({type(exc).__name__}: {str(exc)[:200]}). If you are offline, pass a local file: "
            f"download it elsewhere and pass tokenizer='path/to/tokenizer.json'."
        ) from None
    from .chat_template import find_template

    return _from_tokenizer(tok, text, find_template(Path(config)) if config else None)


def _hub_file(repo: str, filename: str) -> str | None:
    """A file of a Hub repo (downloaded into the cache), or None when the repo has none."""
    from huggingface_hub import hf_hub_download

    try:
        return hf_hub_download(repo, filename)
    except Exception:  # EntryNotFoundError and friends: the repo has no such file
        return None


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")
_HOW = (
    " Pass the path of a tokenizer.json (or of a folder holding one), or a Hugging Face Hub "
    "name such as 'gpt2' or 'org/name'."
)


def _looks_like_path(text: str) -> bool:
    """A name that cannot be a Hub repo id, or whose first folder exists here, is a local path:
    it is never looked up on the Hub (a typo in a path must not turn into a download)."""
    if text.startswith((".", "/", "~")) or text.lower().endswith(".json"):
        return True
    if os.sep != "/" and os.sep in text:
        return True
    if not _HUB_ID.fullmatch(text) or ".." in text:
        return True
    head = text.split("/", 1)[0]
    return "/" in text and Path(head).is_dir()  # models/tok with a local models/ folder


def _near(path: Path) -> str:
    """' Did you mean X?' from the names beside ``path``, or why there are none."""
    parent = path.parent
    if not parent.is_dir():
        return f" (the folder {parent} does not exist either)"
    try:
        names = [p.name for _, p in zip(range(10000), parent.iterdir())]
    except OSError:
        return ""
    return close_matches(path.name, names)


def _cached_hub_file(repo: str, filename: str = "tokenizer.json") -> str | None:
    try:
        from huggingface_hub import hf_hub_download

        return hf_hub_download(repo, filename, local_files_only=True)
    except Exception:
        return None
