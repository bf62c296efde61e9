import torch
import torch.nn.functional as F
from torch import nn

from attnviz.counting import count_multiply_adds


def test_matmul_operator_and_function_are_counted():
    a, b = torch.randn(3, 5), torch.randn(5, 7)
    with count_multiply_adds() as counter:
        a @ b                         # 3 * 7 outputs, each a sum of 5 products
        torch.matmul(a, b)
    assert counter.total == 2 * 3 * 7 * 5


def test_batched_matmul_counts_every_batch():
    a, b = torch.randn(4, 2, 3, 5), torch.randn(4, 2, 5, 6)
    with count_multiply_adds() as counter:
        a @ b
    assert counter.total == 4 * 2 * 3 * 6 * 5


def test_linear_layer_is_counted_and_other_ops_are_not():
    layer = nn.Linear(8, 3, bias=False)
    x = torch.randn(2, 10, 8)
    with count_multiply_adds() as counter, torch.no_grad():
        layer(x)
        x.softmax(-1)
        x + x
    assert counter.total == 2 * 10 * 3 * 8
    with count_multiply_adds() as counter:
        F.linear(x, layer.weight)
    assert counter.total == 2 * 10 * 3 * 8


def test_results_are_unchanged_and_counting_stops_after_the_block():
    a, b = torch.randn(3, 4), torch.randn(4, 2)
    with count_multiply_adds() as counter:
        inside = a @ b
    after = a @ b
    torch.testing.assert_close(inside, after)
    assert counter.total == 3 * 2 * 4
    a @ b
    assert counter.total == 3 * 2 * 4
