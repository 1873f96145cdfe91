"""Real model architectures through the torch.compile backend (CPU, random
weights from configs: nothing is downloaded)."""

import pytest
import torch

import stitchgen

pytestmark = pytest.mark.slow

transformers = pytest.importorskip("transformers")

SDPA = torch.nn.functional.scaled_dot_product_attention
#: split ops as vLLM users pass them: alternatives, most absent from any one model
ALTERNATIVES = [SDPA, "vllm::unified_attention", "vllm::mamba_mixer2", "vllm::short_conv"]
#: (split ops, generate options): the defaults, and vLLM's convention with a list
SETUPS = pytest.mark.parametrize(
    "ops,options",
    [([SDPA], {}), (ALTERNATIVES, {"templates": "vllm"})],
    ids=["sdpa", "vllm-alternatives"],
)


class Pieces:
    """compile_piece that keeps the pieces (and runs them as they are)."""

    def __init__(self):
        self.pieces = []
        self.stitching_nodes = 0

    def __call__(self, piece, example_inputs):
        self.pieces.append(piece)
        return piece

    def node_counts(self):
        return [len(piece.graph.nodes) for piece in self.pieces]


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _tiny(config_class, **overrides):
    torch.manual_seed(0)
    return config_class(attn_implementation="sdpa", vocab_size=128, **overrides)


@SETUPS
def test_gpt2_bit_exact_split_at_attention(ops, options):
    config = _tiny(
        transformers.GPT2Config, n_layer=3, n_embd=64, n_head=4, n_positions=64,
        bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    model = transformers.GPT2LMHeadModel(config).eval()
    pieces = Pieces()
    compiled = torch.compile(model, backend=stitchgen.backend(ops, compile_piece=pieces, **options))
    ids = torch.randint(0, 128, (2, 16))
    with torch.no_grad():
        assert torch.equal(compiled(ids).logits, model(ids).logits)
    assert len(pieces.pieces) == 2 * 3 + 1  # an attention piece per layer, and around them
    assert all(count > 0 for count in pieces.node_counts())


def _tiny_llama():
    config = _tiny(
        transformers.LlamaConfig, num_hidden_layers=2, hidden_size=64, intermediate_size=128,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    return transformers.LlamaForCausalLM(config).eval()


@SETUPS
def test_llama_dynamic_sequence_lengths_bit_exact(ops, options):
    model = _tiny_llama()
    pieces = Pieces()
    compiled = torch.compile(
        model, backend=stitchgen.backend(ops, compile_piece=pieces, **options), dynamic=True
    )
    with torch.no_grad():
        for tokens in (7, 12, 20):
            ids = torch.randint(0, 128, (1, tokens))
            assert torch.equal(compiled(ids).logits, model(ids).logits)
    assert len(pieces.pieces) == 2 * 2 + 1  # one compilation served all three lengths


@SETUPS
def test_bert_slices_of_symbolic_lengths_bit_exact(ops, options):
    # BERT slices its position ids with the sequence length (x[:, 0:n], n a
    # graph value): under vLLM's convention that slice once became a constant
    config = _tiny(
        transformers.BertConfig, num_hidden_layers=2, hidden_size=64, intermediate_size=128,
        num_attention_heads=4, max_position_embeddings=64,
    )  # fmt: skip
    model = transformers.BertModel(config).eval()
    pieces = Pieces()
    compiled = torch.compile(
        model, backend=stitchgen.backend(ops, compile_piece=pieces, **options), dynamic=True
    )
    with torch.no_grad():
        for tokens in (7, 12):
            ids = torch.randint(0, 128, (1, tokens))
            assert torch.equal(compiled(ids).last_hidden_state, model(ids).last_hidden_state)
    assert len(pieces.pieces) == 2 * 2 + 1


@pytest.mark.parametrize("templates", [None, "vllm"])
def test_llama_graph_saved_as_an_artifact_runs_bit_exact(tmp_path, templates):
    # its constants (devices, dtypes, slices, Ellipsis: all lifted by vLLM's
    # convention) survive save -> load_artifact
    model = _tiny_llama()
    saved = []

    def through_an_artifact(gm, example_inputs):
        split = stitchgen.split_graph(gm, [SDPA])
        generated = stitchgen.generate(split, templates=templates)
        path = generated.save(tmp_path / f"graph_{len(saved)}")
        saved.append(generated.consts)
        return stitchgen.load_artifact(path, generated.submods)

    compiled = torch.compile(model, backend=through_an_artifact)
    ids = torch.randint(0, 128, (1, 9))
    with torch.no_grad():
        assert torch.equal(compiled(ids).logits, model(ids).logits)
    assert saved and all(saved)  # constants there were, and they came back
