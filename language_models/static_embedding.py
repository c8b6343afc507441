"""The embedded default for embeddings (``EMBEDDING_PROVIDER=local``): WordLlama's
``l2_supercat`` model, a static embedding model that ships inside the ``wordllama`` wheel.

What it is: a table of 32,000 token vectors (256 dimensions, 16 MB, float16) distilled
from the token embeddings of large language models that share Llama 2's tokenizer; a text's
vector is the average of its tokens' vectors, normalised. No network, no service, no GPU:
it knows words and the words near them (``invoice`` is nearer ``bill`` than ``parcel``), not
sentences: it ranks below a small transformer model (all-MiniLM-L6-v2) on the MTEB tasks its
authors report and, for queries in other words, far above a hash of the words
(``tests/pipeline/test_index_quality.py``). MIT licence (the package's), by Lee Miller.

Loaded from the package's own files, never from the network: ``wordllama`` 0.4 looks for
its tokenizer under ``tokenizer/`` while the wheel carries it in ``tokenizers/``, and then
downloads it from Hugging Face. This module opens both files itself, so nothing is fetched
(``tests/language_models/test_embeddings.py`` loads it with sockets refused).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from language_models.errors import ModelRejected

PROVIDER = "local"
MODEL = "wordllama-l2-supercat"
WEIGHTS = "weights/l2_supercat_256.safetensors"
TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
# The model is trained so that a prefix of its vector is a smaller model (Matryoshka):
# these are the sizes it was trained for, up to the 256 the wheel ships.
DIMENSIONS = (64, 128, 256)
DESCRIPTION = (
    "WordLlama l2_supercat (embedded default, no service): a static embedding model shipped "
    "inside the wordllama package, its token vectors averaged; it knows words and their "
    "neighbours, not sentences"
)


def package_folder() -> Path:
    import wordllama

    return Path(wordllama.__file__).resolve().parent


def load(dimensions: int) -> Any:
    """A ``WordLlamaInference`` read from the wheel's files (no cache, no download)."""
    if dimensions not in DIMENSIONS:
        raise ModelRejected(
            f"The local embedding model has {', '.join(map(str, DIMENSIONS))} dimensions, not "
            f"{dimensions}: check EMBEDDING_DIMENSIONS."
        )
    from safetensors import safe_open
    from tokenizers import Tokenizer
    from wordllama import WordLlamaInference

    folder = package_folder()
    tokenizer = Tokenizer.from_file(str(folder / TOKENIZER))
    with safe_open(str(folder / WEIGHTS), framework="np", device="cpu") as weights:
        table = weights.get_tensor("embedding.weight")[:, :dimensions]
    return WordLlamaInference(table, tokenizer, binary=False)


@lru_cache(maxsize=2)
def model(dimensions: int) -> Any:
    """The loaded model, once per process (0.4 s and 33 MB of float32 vectors)."""
    return load(dimensions)


def embed(texts: list[str], dimensions: int) -> list[list[float]]:
    """Unit vectors of ``texts`` (each non-empty)."""
    vectors = model(dimensions).embed(texts, norm=True, batch_size=64)
    return vectors.tolist()
