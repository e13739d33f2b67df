"""Plausible technical prose for generated content, with a long-tailed word frequency.

Full-text search cost depends on how many documents match, so words are drawn
Zipf-like (a few very common, most rare), as in real writing; the search
target uses two mid-frequency words.
"""
import random

WORDS = list(dict.fromkeys("""
python pytorch cuda kernel compiler release tensor graph memory cache performance build test
runtime profiler quantization export inference training distributed gradient scheduler autograd
backend frontend operator fusion dispatcher allocator benchmark latency throughput regression
documentation tutorial migration deprecation security vulnerability dependency packaging wheel
linux windows macos arm64 x86 rocm metal vulkan webgpu onnx tracing scripting eager dynamo
inductor triton mlir llvm codegen vectorize parallel thread async stream event buffer storage
serialization checkpoint loader dataset sampler transform augmentation tokenizer embedding
attention transformer convolution pooling normalization dropout activation optimizer momentum
learning rate warmup decay precision float16 bfloat16 int8 sparse dense layout stride view
reshape broadcast reduction scatter gather index slice concat split permute einsum matmul
linear conv2d lstm rnn recurrent mixture expert pipeline sharding replica rank collective
allreduce nccl gloo mpi rpc elastic fault tolerance recovery snapshot logging metrics tracing
dashboard alert monitor config flag option default error warning exception assertion crash
hang deadlock race leak overflow underflow nan infinity numerics stability determinism seed
random shuffle batch epoch step iteration loop callback hook plugin extension module package
namespace import path environment container docker kubernetes cluster node pod job queue
worker server client request response endpoint protocol grpc http websocket json yaml toml
schema validation parser lexer grammar syntax semantic analysis optimization pass rewrite
pattern match rule constraint solver shape symbolic guard recompile specialization dynamic
static compile time cold warm startup import lazy eager mode script trace frozen graph
""".split()))  # each word once: tags are named after them

WORD_WEIGHTS = [1 / rank for rank in range(1, len(WORDS) + 1)]
#: Two mid-frequency words: the search target looks for both.
SEARCH_QUERY = f"{WORDS[60]} {WORDS[90]}"
#: The admin's searches (issue 26): a common word of titles and bodies, so each search has pages of hits.
ADMIN_SEARCH_WORD = "allocator"
assert ADMIN_SEARCH_WORD in WORDS


def words(rng: random.Random, count: int) -> list[str]:
    return rng.choices(WORDS, WORD_WEIGHTS, k=count)


def sentence(rng: random.Random) -> str:
    text = " ".join(words(rng, rng.randint(8, 18)))
    return text[0].upper() + text[1:] + "."


def paragraph(rng: random.Random) -> str:
    """A few sentences, sometimes with inline code, emphasis or a link, as Markdown."""
    sentences = [sentence(rng) for _ in range(rng.randint(3, 6))]
    extra = rng.choice(["", f" Use `{rng.choice(WORDS)}()` instead.", f" This is **{rng.choice(WORDS)}**.",
                        f" See [the {rng.choice(WORDS)} notes](https://example.org/{rng.choice(WORDS)})."])
    return " ".join(sentences) + extra


def title(rng: random.Random) -> str:
    first, second, third = words(rng, 3)
    return f"{first.capitalize()} {second} for {third}: {' '.join(words(rng, 3))}"
