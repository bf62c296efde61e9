"""The toys' one training loop (attnviz.toys._training.fit) and its written-out Adam."""

import pytest
import torch
from torch import nn

from attnviz.toys._training import Adam, fit


def _problem(seed=0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    data = torch.Generator().manual_seed(seed)

    def next_batch():
        x = torch.randn(8, 3, generator=data)
        return x, x.sum(-1, keepdim=True)

    def loss_of(batch):
        x, y = batch
        prediction = model(x)
        return nn.functional.mse_loss(prediction, y), prediction

    return model, next_batch, loss_of


def test_adam_matches_torch_optim_adam():
    torch.manual_seed(0)
    weights = [torch.randn(5, 3, requires_grad=True), torch.randn(3, requires_grad=True)]
    twins = [w.detach().clone().requires_grad_() for w in weights]
    ours, theirs = Adam(weights, lr=0.01), torch.optim.Adam(twins, lr=0.01)
    for step in range(20):
        for params, optimiser in ((weights, ours), (twins, theirs)):
            optimiser.zero_grad()
            ((params[0] @ params[1]).sin().sum() + step * params[1].square().sum()).backward()
            optimiser.step()
    for mine, reference in zip(weights, twins, strict=True):
        torch.testing.assert_close(mine, reference, rtol=1e-5, atol=1e-6)


def test_fit_is_the_loop_written_out():
    """fit() gives exactly what the hand-written loop gives: same losses, same final weights."""
    model, next_batch, loss_of = _problem()
    losses = fit(model, next_batch, loss_of, steps=15, lr=0.05)

    twin, twin_batch, twin_loss_of = _problem()
    optimizer, expected = Adam(twin.parameters(), lr=0.05), []
    for _ in range(15):
        loss, _ = twin_loss_of(twin_batch())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        expected.append(loss.item())
    assert losses == expected
    for a, b in zip(model.parameters(), twin.parameters(), strict=True):
        assert torch.equal(a, b)
    # and it learns: the loss falls
    assert losses[-1] < 0.5 * losses[0]


def test_fit_reports_every_step_with_its_batch_and_details():
    model, next_batch, loss_of = _problem()
    seen = []
    losses = fit(model, next_batch, loss_of, steps=4, lr=0.01,
                 on_step=lambda step, loss, batch, details: seen.append((step, loss, batch[0].shape,
                                                                        details.shape)))
    assert [s[0] for s in seen] == [1, 2, 3, 4]
    assert [s[1] for s in seen] == losses
    assert all(s[2] == (8, 3) and s[3] == (8, 1) for s in seen)


def test_fit_can_use_another_optimizer():
    model, next_batch, loss_of = _problem()
    sgd = torch.optim.SGD(model.parameters(), lr=0.0)
    before = [p.detach().clone() for p in model.parameters()]
    fit(model, next_batch, loss_of, steps=2, lr=1.0, optimizer=sgd)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_fit_refuses_bad_arguments_by_name():
    model, next_batch, loss_of = _problem()
    with pytest.raises(ValueError, match="steps"):
        fit(model, next_batch, loss_of, steps=0, lr=0.1)
    with pytest.raises(ValueError, match="lr"):
        fit(model, next_batch, loss_of, steps=1, lr=-1.0)
