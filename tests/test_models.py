"""Real model architectures through the torch.compile backend (CPU, random
weights from configs: nothing is downloaded)."""

import pytest
import torch

import stitchgen

pytestmark = pytest.mark.slow

transformers = pytest.importorskip("transformers")

SDPA = torch.nn.functional.scaled_dot_product_attention


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


def test_gpt2_bit_exact_split_at_attention():
    config = _tiny(
        transformers.GPT2Config, n_layer=3, n_embd=64, n_head=4, n_positions=64,
        bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    model = transformers.GPT2LMHeadModel(config).eval()
    pieces = Pieces()
    compiled = torch.compile(model, backend=stitchgen.backend([SDPA], compile_piece=pieces))
    ids = torch.randint(0, 128, (2, 16))
    with torch.no_grad():
        assert torch.equal(compiled(ids).logits, model(ids).logits)
    assert len(pieces.pieces) == 2 * 3 + 1  # an attention piece per layer, and around them
    assert all(count > 0 for count in pieces.node_counts())


def test_llama_dynamic_sequence_lengths_bit_exact():
    config = _tiny(
        transformers.LlamaConfig, num_hidden_layers=2, hidden_size=64, intermediate_size=128,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(config).eval()
    pieces = Pieces()
    compiled = torch.compile(
        model, backend=stitchgen.backend([SDPA], compile_piece=pieces), dynamic=True
    )
    with torch.no_grad():
        for tokens in (7, 12, 20):
            ids = torch.randint(0, 128, (1, tokens))
            assert torch.equal(compiled(ids).logits, model(ids).logits)
    assert len(pieces.pieces) == 2 * 2 + 1  # one compilation served all three lengths
